//! The ASCII trace format of DiskSim, which MQSim reads too:
//! `arrival_time device lba size_in_sectors type`, sectors of 512 bytes, type bit 0 set for a
//! read and clear for a write (0 = write, 1 = read). The device number is ignored: every
//! device of the trace maps onto the one emulated SSD.
use super::{TraceError, TraceEvent, TraceOp};

pub const SECTOR_BYTES: u64 = 512;

pub fn parse_line(line: &str, number: u64) -> Result<TraceEvent, TraceError> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let [time, device, lba, sectors, kind] = fields.as_slice() else {
        return Err(TraceError::line(
            number,
            format!("expected 5 fields `time device lba sectors type`, found {}", fields.len()),
        ));
    };
    // Arrival time may be fractional (DiskSim writes milliseconds as a decimal).
    time.parse::<f64>()
        .map_err(|_| TraceError::line(number, format!("arrival time `{time}` is not a number")))?;
    let field = |text: &str, what: &str| {
        text.parse::<u64>()
            .map_err(|_| TraceError::line(number, format!("{what} `{text}` is not a number")))
    };
    field(device, "device")?;
    let lba = field(lba, "lba")?;
    let sectors = field(sectors, "size")?;
    let kind = field(kind, "type")?;
    let offset_bytes = lba
        .checked_mul(SECTOR_BYTES)
        .ok_or_else(|| TraceError::line(number, format!("lba {lba} overflows")))?;
    let length_bytes = sectors
        .checked_mul(SECTOR_BYTES)
        .ok_or_else(|| TraceError::line(number, format!("size {sectors} overflows")))?;
    let op = if kind & 1 == 1 { TraceOp::Read } else { TraceOp::Write };
    Ok(TraceEvent { op, offset_bytes, length_bytes })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn records_are_in_512_byte_sectors() {
        let write = parse_line("0.125 0 16 8 0", 1).unwrap();
        assert_eq!(
            write,
            TraceEvent { op: TraceOp::Write, offset_bytes: 8192, length_bytes: 4096 }
        );
        let read = parse_line("1000 1 0 1 1", 2).unwrap();
        assert_eq!(read.op, TraceOp::Read);
        assert_eq!(read.length_bytes, 512);
    }

    #[test]
    fn malformed_records_are_rejected_with_line_numbers() {
        assert_eq!(
            parse_line("0 0 16 8", 4).unwrap_err().to_string(),
            "trace line 4: expected 5 fields `time device lba sectors type`, found 4"
        );
        assert!(parse_line("0 0 -16 8 0", 5).unwrap_err().to_string().contains("line 5: lba"));
        assert!(parse_line("t 0 16 8 0", 6).is_err());
    }
}

//! fio iolog versions 2 and 3 (fio's HOWTO, "Trace file format").
//!
//! v2: `filename action [offset length]`; v3 puts a timestamp (ns) first. File actions (`add`,
//! `open`, `close`) and `wait` carry no I/O and are skipped. Every file maps onto the one
//! emulated device: offsets are used as they are.
use super::{TraceError, TraceEvent, TraceOp};

/// Parses one record line (header and blank lines are handled by the reader).
pub fn parse_line(line: &str, number: u64, version: u8) -> Result<Option<TraceEvent>, TraceError> {
    assert!(version == 2 || version == 3);
    let mut fields: Vec<&str> = line.split_whitespace().collect();
    if version == 3 {
        if fields.is_empty() {
            return Ok(None);
        }
        fields[0].parse::<u64>().map_err(|_| {
            TraceError::line(number, format!("`{}` is not a timestamp (iolog v3)", fields[0]))
        })?;
        fields.remove(0);
    }
    let (action, rest) = match fields.as_slice() {
        [_file, action, rest @ ..] => (*action, rest),
        _ => return Err(TraceError::line(number, "expected `filename action [offset length]`")),
    };
    let op = match action {
        "add" | "open" | "close" | "wait" => return Ok(None),
        "write" => TraceOp::Write,
        "read" => TraceOp::Read,
        "trim" => TraceOp::Trim,
        "sync" | "datasync" => TraceOp::Sync,
        other => return Err(TraceError::line(number, format!("unknown action `{other}`"))),
    };
    let (offset_bytes, length_bytes) = match rest {
        [offset, length] => {
            (number_field(offset, "offset", number)?, number_field(length, "length", number)?)
        }
        [] if op == TraceOp::Sync => (0, 0),
        _ => {
            return Err(TraceError::line(
                number,
                format!("`{action}` needs an offset and a length"),
            ))
        }
    };
    Ok(Some(TraceEvent { op, offset_bytes, length_bytes }))
}

fn number_field(text: &str, what: &str, line: u64) -> Result<u64, TraceError> {
    text.parse::<u64>()
        .map_err(|_| TraceError::line(line, format!("{what} `{text}` is not a number")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn v2_and_v3_records_parse() {
        let event = parse_line("/dev/nvme0n1 write 8192 4096", 2, 2).unwrap().unwrap();
        assert_eq!(
            event,
            TraceEvent { op: TraceOp::Write, offset_bytes: 8192, length_bytes: 4096 }
        );
        assert_eq!(parse_line("/dev/sda add", 2, 2).unwrap(), None);
        assert_eq!(parse_line("f sync", 3, 2).unwrap().unwrap().op, TraceOp::Sync);
        let event = parse_line("1200 f trim 0 1048576", 5, 3).unwrap().unwrap();
        assert_eq!(event.op, TraceOp::Trim);
        assert_eq!(event.length_bytes, 1 << 20);
    }

    #[test]
    fn bad_records_name_their_line() {
        let err = parse_line("f write 12x 4096", 7, 2).unwrap_err();
        assert_eq!(err.to_string(), "trace line 7: offset `12x` is not a number");
        let err = parse_line("f explode 0 1", 3, 2).unwrap_err();
        assert!(err.to_string().contains("line 3: unknown action `explode`"));
        assert!(parse_line("f write 0", 4, 2).is_err());
        assert!(parse_line("abc f write 0 4096", 9, 3).unwrap_err().to_string().contains("line 9"));
    }
}

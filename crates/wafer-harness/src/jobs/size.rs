//! Byte sizes and stop conditions as users type them: `4k`, `16GiB`, `1.5G`, `4x`, `25%`.
//!
//! Every unit is binary, as in fio (`kb_base=1024`): `k`, `K`, `KB` and `KiB` all mean 1024.
use super::error::JobError;

/// Parses a byte count: a number (decimal point allowed) and an optional binary unit.
pub fn parse_bytes(text: &str) -> Result<u64, JobError> {
    let trimmed = text.trim();
    let split = trimmed.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let bad =
        || JobError::spec(format!("`{text}` is not a size (examples: 4096, 4k, 64KiB, 16GiB)"));
    if number.is_empty() {
        return Err(bad());
    }
    let value: f64 = number.parse().map_err(|_| bad())?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(bad()),
    };
    let bytes = value * (1u64 << shift) as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(JobError::spec(format!("size `{text}` is too large")));
    }
    Ok(bytes.floor() as u64)
}

/// A position or length on the device: absolute bytes or a fraction of the logical capacity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Amount {
    Bytes(u64),
    /// 0.0..=1.0 of the device's logical capacity.
    Fraction(f64),
}

impl Amount {
    /// `25%`, `0.25` (a bare number <= 1 with a decimal point is a fraction) or a size (`8GiB`).
    pub fn parse(text: &str) -> Result<Amount, JobError> {
        let trimmed = text.trim();
        if let Some(percent) = trimmed.strip_suffix('%') {
            let value: f64 = percent.trim().parse().map_err(|_| {
                JobError::spec(format!("`{text}` is not a percentage (example: 25%)"))
            })?;
            return Amount::fraction(value / 100.0, text);
        }
        if trimmed.contains('.') && !trimmed.ends_with(|c: char| c.is_ascii_alphabetic()) {
            if let Ok(value) = trimmed.parse::<f64>() {
                return Amount::fraction(value, text);
            }
        }
        parse_bytes(trimmed).map(Amount::Bytes)
    }

    fn fraction(value: f64, text: &str) -> Result<Amount, JobError> {
        if !(0.0..=1.0).contains(&value) {
            return Err(JobError::spec(format!("`{text}` is outside 0%..100% of the device")));
        }
        Ok(Amount::Fraction(value))
    }

    pub fn bytes(self, capacity_bytes: u64) -> u64 {
        match self {
            Amount::Bytes(bytes) => bytes,
            Amount::Fraction(f) => (capacity_bytes as f64 * f).floor() as u64,
        }
    }
}

/// When a run stops: after this many host bytes issued by the jobs (after the fill).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Until {
    Bytes(u64),
    /// Multiples of the device's logical capacity (`4x`).
    Capacities(f64),
}

impl Until {
    pub fn parse(text: &str) -> Result<Until, JobError> {
        let trimmed = text.trim();
        if let Some(times) = trimmed.strip_suffix(['x', 'X']) {
            let value: f64 = times.trim().parse().map_err(|_| {
                JobError::spec(format!("`{text}` is not a multiple of capacity (example: 4x)"))
            })?;
            if !(value.is_finite() && value > 0.0 && value <= 1e6) {
                return Err(JobError::spec(format!("`{text}`: the multiple must be in (0, 1e6]")));
            }
            return Ok(Until::Capacities(value));
        }
        let bytes = parse_bytes(trimmed)?;
        if bytes == 0 {
            return Err(JobError::spec(format!("`{text}`: the stop condition must be above zero")));
        }
        Ok(Until::Bytes(bytes))
    }

    pub fn host_bytes(self, capacity_bytes: u64) -> u64 {
        match self {
            Until::Bytes(bytes) => bytes,
            Until::Capacities(times) => (capacity_bytes as f64 * times).round() as u64,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn sizes_use_binary_units() {
        assert_eq!(parse_bytes("4096").unwrap(), 4096);
        assert_eq!(parse_bytes("4k").unwrap(), 4096);
        assert_eq!(parse_bytes("4KiB").unwrap(), 4096);
        assert_eq!(parse_bytes("64 KB").unwrap(), 65536);
        assert_eq!(parse_bytes("16GiB").unwrap(), 16 << 30);
        assert_eq!(parse_bytes("1.5M").unwrap(), 3 << 19);
        assert!(parse_bytes("k").is_err());
        assert!(parse_bytes("12 parsecs").is_err());
        assert!(parse_bytes("-4k").is_err());
        assert!(parse_bytes("99999999999T").is_err());
    }

    #[test]
    fn until_takes_bytes_or_capacity_multiples() {
        assert_eq!(Until::parse("4x").unwrap(), Until::Capacities(4.0));
        assert_eq!(Until::parse("0.5X").unwrap(), Until::Capacities(0.5));
        assert_eq!(Until::parse("16GiB").unwrap(), Until::Bytes(16 << 30));
        assert_eq!(Until::parse("4x").unwrap().host_bytes(1000), 4000);
        assert!(Until::parse("0x").is_err());
        assert!(Until::parse("0").is_err());
        assert!(Until::parse("fourx").is_err());
    }

    #[test]
    fn amounts_are_percent_fraction_or_bytes() {
        assert_eq!(Amount::parse("25%").unwrap(), Amount::Fraction(0.25));
        assert_eq!(Amount::parse("0.5").unwrap(), Amount::Fraction(0.5));
        assert_eq!(Amount::parse("1GiB").unwrap(), Amount::Bytes(1 << 30));
        assert_eq!(Amount::parse("50%").unwrap().bytes(1000), 500);
        assert!(Amount::parse("150%").is_err());
    }
}

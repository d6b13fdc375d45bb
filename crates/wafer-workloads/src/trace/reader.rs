//! Streams trace records from any reader, detecting the format from the first record line.
use std::io::BufRead;

use super::{fio, mqsim, TraceError, TraceEvent};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// Decide from the first line: a fio header, else MQSim/DiskSim ASCII.
    Auto,
    FioV2,
    FioV3,
    /// MQSim / DiskSim ASCII.
    Mqsim,
}

impl TraceFormat {
    pub fn parse(text: &str) -> Result<TraceFormat, TraceError> {
        match text.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(TraceFormat::Auto),
            "fio" | "fio2" | "fio-v2" | "iolog2" => Ok(TraceFormat::FioV2),
            "fio3" | "fio-v3" | "iolog3" => Ok(TraceFormat::FioV3),
            "mqsim" | "disksim" | "ascii" => Ok(TraceFormat::Mqsim),
            other => Err(TraceError::Format(format!(
                "unknown trace format `{other}` (expected auto, fio2, fio3, mqsim)"
            ))),
        }
    }
}

/// Longest line accepted: a trace record is tens of bytes, so a huge line means a wrong file.
pub const LINE_MAX_BYTES: usize = 4096;

#[derive(Debug)]
pub struct TraceReader<R: BufRead> {
    input: R,
    format: TraceFormat,
    line_number: u64,
    consumed_bytes: u64,
    line: String,
}

impl<R: BufRead> TraceReader<R> {
    pub fn new(input: R, format: TraceFormat) -> TraceReader<R> {
        TraceReader { input, format, line_number: 0, consumed_bytes: 0, line: String::new() }
    }

    /// Bytes of input read so far (for progress).
    pub fn consumed_bytes(&self) -> u64 {
        self.consumed_bytes
    }

    pub fn format(&self) -> TraceFormat {
        self.format
    }

    /// The next I/O record, `None` at the end. Skips blank lines, `#` comments and records
    /// without I/O (fio file actions).
    pub fn next_event(&mut self) -> Result<Option<TraceEvent>, TraceError> {
        loop {
            self.line.clear();
            let read = self.input.read_line(&mut self.line)?;
            if read == 0 {
                return Ok(None);
            }
            self.line_number += 1;
            self.consumed_bytes += read as u64;
            if self.line.len() > LINE_MAX_BYTES {
                return Err(TraceError::line(self.line_number, "line too long for a trace record"));
            }
            let text = self.line.trim();
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            if let Some(version) = text.strip_prefix("fio version ") {
                let header_format = match version.trim() {
                    "2 iolog" => TraceFormat::FioV2,
                    "3 iolog" => TraceFormat::FioV3,
                    other => {
                        return Err(TraceError::line(
                            self.line_number,
                            format!("unsupported fio iolog version `{other}` (2 and 3 are)"),
                        ))
                    }
                };
                self.format = match self.format {
                    TraceFormat::Auto => header_format,
                    chosen if chosen == header_format => chosen,
                    chosen => {
                        return Err(TraceError::line(
                            self.line_number,
                            format!("header says {header_format:?} but {chosen:?} was requested"),
                        ))
                    }
                };
                continue;
            }
            if self.format == TraceFormat::Auto {
                self.format = TraceFormat::Mqsim;
            }
            let number = self.line_number;
            let event = match self.format {
                TraceFormat::FioV2 => fio::parse_line(text, number, 2)?,
                TraceFormat::FioV3 => fio::parse_line(text, number, 3)?,
                TraceFormat::Mqsim | TraceFormat::Auto => Some(mqsim::parse_line(text, number)?),
            };
            if let Some(event) = event {
                return Ok(Some(event));
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::trace::TraceOp;

    fn all(text: &str, format: TraceFormat) -> Result<Vec<TraceEvent>, TraceError> {
        let mut reader = TraceReader::new(text.as_bytes(), format);
        let mut out = Vec::new();
        while let Some(event) = reader.next_event()? {
            out.push(event);
        }
        Ok(out)
    }

    #[test]
    fn formats_are_detected_from_the_first_line() {
        let v2 = "fio version 2 iolog\n/dev/x add\n/dev/x open\n/dev/x write 0 4096\n\
                  /dev/x read 4096 8192\n/dev/x close\n";
        let events = all(v2, TraceFormat::Auto).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[1].op, TraceOp::Read);

        let v3 = "fio version 3 iolog\n0 /dev/x add\n10 /dev/x open\n20 /dev/x trim 0 4096\n";
        assert_eq!(all(v3, TraceFormat::Auto).unwrap()[0].op, TraceOp::Trim);

        let ascii = "# disksim\n0.0 0 0 8 0\n\n1.5 0 8 8 1\n";
        let events = all(ascii, TraceFormat::Auto).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[1].offset_bytes, 4096);
    }

    #[test]
    fn errors_carry_the_file_line_number() {
        let bad = "fio version 2 iolog\n/dev/x write 0 4096\n\n/dev/x write zero 4096\n";
        let err = all(bad, TraceFormat::Auto).unwrap_err();
        assert!(err.to_string().starts_with("trace line 4:"), "{err}");
        let err = all("fio version 9 iolog\n", TraceFormat::Auto).unwrap_err();
        assert!(err.to_string().contains("version"), "{err}");
        assert!(all("fio version 3 iolog\n", TraceFormat::FioV2).is_err());
        assert!(TraceFormat::parse("blktrace").is_err());
    }
}

//! What a run does: the jobs (workload, distribution, block size, region, stream), the fill
//! step, the stop condition and the seed. Plain values, parsed from CLI strings or a job file.
use std::fmt;

use super::error::JobError;
use super::size::{parse_bytes, Amount, Until};
use wafer_workloads::dist::Distribution;

/// Address order of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Ascending block addresses, wrapping at the end of the region.
    Sequential,
    /// Addresses drawn from the job's distribution over the region.
    Random,
}

/// Operation mix in percent; writes take the rest (`100 - read - trim`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload {
    pub pattern: Pattern,
    pub read_percent: u8,
    pub trim_percent: u8,
}

impl Workload {
    /// fio names: `write`, `randwrite`, `read`, `randread`, `trim`, `randtrim`, `rw` /
    /// `readwrite`, `randrw`. The mixes read `rwmixread` percent (fio's default 50); `rw:70` /
    /// `randrw:70` set it inline.
    pub fn parse(text: &str, rwmixread: Option<u8>) -> Result<Workload, JobError> {
        let lower = text.trim().to_ascii_lowercase();
        let (name, inline_mix) = match lower.split_once(':') {
            Some((name, mix)) => {
                let mix: u8 = mix.parse().ok().filter(|m| *m <= 100).ok_or_else(|| {
                    JobError::spec(format!("`{text}`: the read percentage must be 0..=100"))
                })?;
                (name.to_string(), Some(mix))
            }
            None => (lower, None),
        };
        let mix = inline_mix.or(rwmixread).unwrap_or(50);
        if mix > 100 {
            return Err(JobError::spec(format!("rwmixread {mix} is above 100")));
        }
        let (pattern, read_percent, trim_percent) = match name.as_str() {
            "write" => (Pattern::Sequential, 0, 0),
            "randwrite" => (Pattern::Random, 0, 0),
            "read" => (Pattern::Sequential, 100, 0),
            "randread" => (Pattern::Random, 100, 0),
            "trim" => (Pattern::Sequential, 0, 100),
            "randtrim" => (Pattern::Random, 0, 100),
            "rw" | "readwrite" => (Pattern::Sequential, mix, 0),
            "randrw" => (Pattern::Random, mix, 0),
            _ => {
                return Err(JobError::spec(format!(
                    "unknown workload `{text}` (expected write, randwrite, read, randread, \
                     trim, randtrim, rw[:READ%], randrw[:READ%])"
                )))
            }
        };
        if inline_mix.is_some() && !matches!(name.as_str(), "rw" | "readwrite" | "randrw") {
            return Err(JobError::spec(format!("`{text}`: only rw and randrw take a read mix")));
        }
        Ok(Workload { pattern, read_percent, trim_percent })
    }

    pub fn write_percent(&self) -> u8 {
        100 - self.read_percent - self.trim_percent
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let random = self.pattern == Pattern::Random;
        let prefix = if random { "rand" } else { "" };
        match (self.read_percent, self.trim_percent) {
            (0, 0) => write!(f, "{prefix}write"),
            (100, _) => write!(f, "{prefix}read"),
            (_, 100) => write!(f, "{prefix}trim"),
            (read, _) => write!(f, "{}:{read}", if random { "randrw" } else { "rw" }),
        }
    }
}

/// Parses a distribution. `hotcold:X:Y` means X of the writes go to Y of the region; both may be
/// fractions (`0.8:0.2`) or percentages (`80:20`, any value above 1 is read as a percentage).
pub fn parse_distribution(text: &str) -> Result<Distribution, JobError> {
    let lower = text.trim().to_ascii_lowercase();
    let normalised = match lower.strip_prefix("hotcold:") {
        Some(rest) => {
            let parts: Vec<&str> = rest.split(':').collect();
            let as_percent = parts.iter().any(|p| p.parse::<f64>().is_ok_and(|v| v > 1.0));
            if as_percent {
                let fractions: Result<Vec<String>, JobError> = parts
                    .iter()
                    .map(|p| {
                        p.parse::<f64>()
                            .map(|v| format!("{}", v / 100.0))
                            .map_err(|_| JobError::spec(format!("`{text}`: `{p}` is not a number")))
                    })
                    .collect();
                format!("hotcold:{}", fractions?.join(":"))
            } else {
                lower.clone()
            }
        }
        None => lower.clone(),
    };
    normalised.parse::<Distribution>().map_err(|e| JobError::spec(format!("`{text}`: {e}")))
}

/// A region of the logical address space.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Region {
    pub offset: Amount,
    pub size: Amount,
}

/// One job: a stream of I/Os of one workload over one region.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    pub name: String,
    pub workload: Workload,
    pub dist: Distribution,
    pub bs_bytes: u64,
    /// `None`: the runner gives job i of n the i-th n-th of the filled span (or of the device).
    pub region: Option<Region>,
    /// Placement id (stream or FDP handle). `None`: the job's index, modulo what the device has.
    pub stream: Option<u16>,
}

impl JobSpec {
    pub fn new(name: impl Into<String>, workload: Workload, dist: Distribution) -> JobSpec {
        JobSpec {
            name: name.into(),
            workload,
            dist,
            bs_bytes: flashemu::LBA_BYTES,
            region: None,
            stream: None,
        }
    }
}

/// Checks a block size: whole 4 KiB blocks, at most 64 MiB per I/O.
pub fn parse_block_size(text: &str) -> Result<u64, JobError> {
    let bytes = parse_bytes(text)?;
    check_block_size(bytes)?;
    Ok(bytes)
}

/// Largest I/O the runner issues in one device call.
pub const BS_MAX_BYTES: u64 = 64 << 20;

pub fn check_block_size(bytes: u64) -> Result<(), JobError> {
    if bytes == 0 || !bytes.is_multiple_of(flashemu::LBA_BYTES) || bytes > BS_MAX_BYTES {
        return Err(JobError::spec(format!(
            "block size {bytes} must be a multiple of 4 KiB between 4 KiB and 64 MiB"
        )));
    }
    Ok(())
}

/// A whole run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    /// Fraction of the logical capacity written sequentially before the jobs start (0 = none).
    pub fill_fraction: f64,
    pub jobs: Vec<JobSpec>,
    pub until: Until,
    pub seed: u64,
    /// Sample period in host bytes; `None` = 1/64 of the logical capacity.
    pub sample_every_bytes: Option<u64>,
}

/// Bound on jobs in one run (each has its own state and placement).
pub const JOBS_MAX: usize = 256;

impl RunSpec {
    pub fn validate(&self) -> Result<(), JobError> {
        if !(0.0..=1.0).contains(&self.fill_fraction) {
            return Err(JobError::spec(format!(
                "--fill {} must be between 0 and 1 (0.9 = 90% full)",
                self.fill_fraction
            )));
        }
        if self.jobs.is_empty() || self.jobs.len() > JOBS_MAX {
            return Err(JobError::spec(format!("a run needs 1..={JOBS_MAX} jobs")));
        }
        for job in &self.jobs {
            check_block_size(job.bs_bytes)?;
        }
        if self.sample_every_bytes == Some(0) {
            return Err(JobError::spec("--sample-every must be above zero"));
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn workloads_follow_fio_names() {
        let w = Workload::parse("randwrite", None).unwrap();
        assert_eq!((w.pattern, w.write_percent()), (Pattern::Random, 100));
        let w = Workload::parse("rw", Some(70)).unwrap();
        assert_eq!((w.pattern, w.read_percent, w.write_percent()), (Pattern::Sequential, 70, 30));
        let w = Workload::parse("randrw:10", Some(70)).unwrap();
        assert_eq!(w.read_percent, 10, "inline mix wins");
        assert_eq!(Workload::parse("randtrim", None).unwrap().trim_percent, 100);
        assert_eq!(Workload::parse("randrw:25", None).unwrap().to_string(), "randrw:25");
        assert_eq!(Workload::parse("write", None).unwrap().to_string(), "write");
        assert!(Workload::parse("randwrite:5", None).is_err());
        assert!(Workload::parse("rw:101", None).is_err());
        assert!(Workload::parse("scribble", None).is_err());
    }

    #[test]
    fn hotcold_takes_percentages_or_fractions() {
        let expect = Distribution::HotCold { hot_ops_fraction: 0.8, hot_data_fraction: 0.2 };
        assert_eq!(parse_distribution("hotcold:80:20").unwrap(), expect);
        assert_eq!(parse_distribution("hotcold:0.8:0.2").unwrap(), expect);
        assert_eq!(parse_distribution("zipf:0.9").unwrap(), Distribution::Zipfian { theta: 0.9 });
        assert_eq!(parse_distribution("uniform").unwrap(), Distribution::Uniform);
        assert!(parse_distribution("zipf:2").is_err());
        assert!(parse_distribution("hotcold:80:x").is_err());
    }

    #[test]
    fn block_sizes_are_whole_blocks() {
        assert_eq!(parse_block_size("4k").unwrap(), 4096);
        assert_eq!(parse_block_size("128k").unwrap(), 131072);
        assert!(parse_block_size("512").is_err());
        assert!(parse_block_size("1G").is_err());
    }
}

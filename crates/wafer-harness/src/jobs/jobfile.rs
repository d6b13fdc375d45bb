//! Job files: TOML with optional run settings and one `[[job]]` table per job.
//!
//! ```toml
//! fill = 0.9            # optional; the CLI flag wins when given
//! until = "4x"          # optional
//! seed = 7              # optional
//!
//! [[job]]
//! name = "hot"          # optional, default job0, job1, ...
//! workload = "randwrite"
//! dist = "zipf:0.99"    # optional, default uniform
//! bs = "4k"             # optional, default 4k
//! offset = "0%"         # optional with size: region start (bytes, 25%, 0.25)
//! size = "50%"          # region length
//! stream = 0            # optional placement id, default the job index
//! rwmixread = 70        # optional, for rw / randrw
//! ```
use serde::Deserialize;

use super::error::JobError;
use super::size::{Amount, Until};
use super::spec::{parse_block_size, parse_distribution, JobSpec, Region, Workload, JOBS_MAX};
use wafer_workloads::dist::Distribution;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    fill: Option<f64>,
    until: Option<String>,
    seed: Option<u64>,
    #[serde(default)]
    job: Vec<RawJob>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJob {
    name: Option<String>,
    workload: String,
    dist: Option<String>,
    bs: Option<String>,
    offset: Option<String>,
    size: Option<String>,
    stream: Option<u16>,
    rwmixread: Option<u8>,
}

/// A parsed job file: the jobs, and the run settings it chose (the caller merges CLI flags).
#[derive(Debug, Clone, PartialEq)]
pub struct JobFile {
    pub fill_fraction: Option<f64>,
    pub until: Option<Until>,
    pub seed: Option<u64>,
    pub jobs: Vec<JobSpec>,
}

impl JobFile {
    /// Parses `text`; errors name the job (`job 2 (hot)`) and the key.
    pub fn parse(text: &str) -> Result<JobFile, JobError> {
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            // toml's message spans lines (position, source excerpt, reason): keep the first
            // and the last so the error stays on one line.
            let message = e.to_string();
            let mut lines = message.lines().map(str::trim).filter(|l| !l.is_empty());
            let first = lines.next().unwrap_or("invalid TOML");
            match lines.next_back() {
                Some(reason) => JobError::spec(format!("{first}: {reason}")),
                None => JobError::spec(first.to_string()),
            }
        })?;
        if raw.job.is_empty() {
            return Err(JobError::spec("no [[job]] tables"));
        }
        if raw.job.len() > JOBS_MAX {
            return Err(JobError::spec(format!("more than {JOBS_MAX} jobs")));
        }
        let until = raw.until.as_deref().map(Until::parse).transpose()?;
        let mut jobs = Vec::with_capacity(raw.job.len());
        for (index, job) in raw.job.into_iter().enumerate() {
            let name = job.name.clone().unwrap_or_else(|| format!("job{index}"));
            let context = |e: JobError| JobError::spec(format!("job {index} ({name}): {e}"));
            jobs.push(convert(job, &name).map_err(context)?);
        }
        Ok(JobFile { fill_fraction: raw.fill, until, seed: raw.seed, jobs })
    }

    pub fn load(path: &std::path::Path) -> Result<JobFile, JobError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| JobError::Io { path: path.display().to_string(), source })?;
        JobFile::parse(&text).map_err(|e| JobError::JobFile {
            path: path.display().to_string(),
            reason: e.to_string(),
        })
    }
}

fn convert(job: RawJob, name: &str) -> Result<JobSpec, JobError> {
    let workload = Workload::parse(&job.workload, job.rwmixread)?;
    let dist = match job.dist.as_deref() {
        Some(text) => parse_distribution(text)?,
        None => Distribution::Uniform,
    };
    let bs_bytes = match job.bs.as_deref() {
        Some(text) => parse_block_size(text)?,
        None => flashemu::LBA_BYTES,
    };
    let region = match (job.offset.as_deref(), job.size.as_deref()) {
        (None, None) => None,
        (offset, Some(size)) => Some(Region {
            offset: offset.map(Amount::parse).transpose()?.unwrap_or(Amount::Bytes(0)),
            size: Amount::parse(size)?,
        }),
        (Some(_), None) => return Err(JobError::spec("`offset` needs a `size`")),
    };
    Ok(JobSpec { name: name.to_string(), workload, dist, bs_bytes, region, stream: job.stream })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::jobs::spec::Pattern;

    #[test]
    fn job_file_with_two_regions_parses() {
        let file = JobFile::parse(
            r#"
            fill = 0.9
            until = "2x"
            [[job]]
            name = "hot"
            workload = "randwrite"
            dist = "hotcold:80:20"
            offset = "0%"
            size = "50%"
            stream = 1
            [[job]]
            workload = "write"
            bs = "64k"
            offset = "50%"
            size = "50%"
            "#,
        )
        .unwrap();
        assert_eq!(file.fill_fraction, Some(0.9));
        assert_eq!(file.until, Some(Until::Capacities(2.0)));
        assert_eq!(file.jobs.len(), 2);
        assert_eq!(file.jobs[0].name, "hot");
        assert_eq!(file.jobs[0].stream, Some(1));
        assert_eq!(file.jobs[1].name, "job1");
        assert_eq!(file.jobs[1].bs_bytes, 65536);
        assert_eq!(file.jobs[1].workload.pattern, Pattern::Sequential);
        let region = file.jobs[1].region.unwrap();
        assert_eq!(region.offset, Amount::Fraction(0.5));
    }

    #[test]
    fn shipped_example_job_file_parses() {
        let file = JobFile::parse(include_str!("../../jobs/hot-cold-two-streams.toml")).unwrap();
        assert_eq!(file.jobs.len(), 2);
        assert_eq!(file.jobs[1].stream, Some(1));
    }

    #[test]
    fn job_file_errors_name_the_job_and_key() {
        let err = JobFile::parse("[[job]]\nworkload = \"randwrite\"\nbs = \"3k\"\n").unwrap_err();
        assert!(err.to_string().starts_with("job 0 (job0): block size"), "{err}");
        let err = JobFile::parse("[[job]]\nworkload = \"write\"\ncolour = 1\n").unwrap_err();
        assert!(err.to_string().contains("colour"), "{err}");
        assert!(JobFile::parse("fill = 0.5\n").is_err());
        let err = JobFile::parse("[[job]]\nworkload = \"write\"\noffset = \"1G\"\n").unwrap_err();
        assert!(err.to_string().contains("size"), "{err}");
    }
}

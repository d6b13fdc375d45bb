//! What one run does: the workload, threads, when to stop, what warm-up to exclude, how often to
//! sample. Stop and warm-up conditions parse from what users type (`60s`, `4x`, `0.5x`).

use std::time::Duration;

use wafer_workloads::ycsb::WorkloadSpec;

/// Invalid run parameters (user input: an error naming what to fix, never a panic).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(pub String);

/// Bound on one run's duration: a week. A longer request is a typo.
pub const RUN_DURATION_MAX: Duration = Duration::from_secs(7 * 24 * 3600);
/// Bound on a `Nx` multiple of the device capacity.
pub const CAPACITIES_MAX: f64 = 1000.0;

/// When the run phase ends.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Stop {
    /// Measured time (after warm-up).
    Duration(Duration),
    /// Cumulative DB-issued bytes since the run phase began (warm-up included) reach this
    /// multiple of the data device's capacity: 000 sec. 7.1 measures after 4x.
    DbWrites { capacities: f64 },
    /// As `DbWrites`, or `limit` of measured time, whichever comes first: a volume target
    /// with a bound on a slow target's time (the peers on an emulated SSD).
    DbWritesWithin { capacities: f64, limit: Duration },
    /// This many operations in the run phase (warm-up included); exact, for tests and scripts.
    Ops(u64),
}

/// What the start of the run phase excludes from the results.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Warmup {
    None,
    Duration(Duration),
    /// DB-issued bytes since the run phase began, as a multiple of the device capacity.
    DbWrites {
        capacities: f64,
    },
}

/// `500ms`, `60s`, `2m`, `1h`, or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, SpecError> {
    let t = text.trim();
    let bad = || SpecError(format!("`{text}` is not a duration (examples: 500ms, 60s, 2m, 1h)"));
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit.trim() {
        "" | "s" | "sec" => value,
        "ms" => value / 1000.0,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(bad()),
    };
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= RUN_DURATION_MAX.as_secs_f64()) {
        return Err(SpecError(format!("`{text}`: a duration must be above 0 and at most a week")));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// `4x`: a multiple of the device capacity.
pub fn parse_capacities(text: &str) -> Result<f64, SpecError> {
    let t = text.trim();
    let number = t.strip_suffix(['x', 'X']).ok_or_else(|| {
        SpecError(format!("`{text}` is not a multiple of the device capacity (example: 4x)"))
    })?;
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| SpecError(format!("`{text}` is not a multiple (example: 4x)")))?;
    if !(value.is_finite() && value > 0.0 && value <= CAPACITIES_MAX) {
        return Err(SpecError(format!("`{text}`: the multiple must be in (0, {CAPACITIES_MAX}]")));
    }
    Ok(value)
}

impl Warmup {
    /// `none`, `0`, a duration (`10s`) or a multiple of the capacity (`0.5x`).
    pub fn parse(text: &str) -> Result<Warmup, SpecError> {
        let t = text.trim();
        if t.eq_ignore_ascii_case("none") || t == "0" || t == "0s" {
            return Ok(Warmup::None);
        }
        if t.ends_with(['x', 'X']) {
            return Ok(Warmup::DbWrites { capacities: parse_capacities(t)? });
        }
        Ok(Warmup::Duration(parse_duration(t)?))
    }

    pub fn describe(&self) -> String {
        match self {
            Warmup::None => "none".to_string(),
            Warmup::Duration(d) => format!("{}s", d.as_secs_f64()),
            Warmup::DbWrites { capacities } => format!("{capacities}x"),
        }
    }
}

impl Stop {
    pub fn describe(&self) -> String {
        match self {
            Stop::Duration(d) => format!("{}s", d.as_secs_f64()),
            Stop::DbWrites { capacities } => format!("{capacities}x"),
            Stop::DbWritesWithin { capacities, limit } => {
                format!("{capacities}x or {}s", limit.as_secs_f64())
            }
            Stop::Ops(n) => format!("{n} ops"),
        }
    }
}

/// One run: optional load phase, then the run phase.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    pub label: String,
    pub workload: WorkloadSpec,
    pub threads: u32,
    /// Thread `t` of the run phase draws from `Rng::for_thread(seed, t)`.
    pub seed: u64,
    /// Insert `workload.record_count` records before the run phase.
    pub load: bool,
    /// After the load, insert more records until the target has allocated this many bytes
    /// (`--fill` on the engine: the pilot's estimate of bytes per record is a few percent off).
    /// The run phase then uses the larger record count (the report's `observed.record_count`).
    pub fill_target_bytes: Option<u64>,
    /// Records per `KvTarget::insert_batch` in the load (1: single inserts).
    pub load_batch: u32,
    pub stop: Stop,
    pub warmup: Warmup,
    /// Sample period of the interval series.
    pub interval: Duration,
}

/// Bound on records per load batch: a batch is one atomic write, held in memory and logged
/// as one (Wafer's WAL must hold twice its bytes).
pub const LOAD_BATCH_MAX: u32 = 10_000;
/// Bound on worker threads: the machine has few cores, and each thread costs histograms.
pub const THREADS_MAX: u32 = 1024;
/// Shortest sample period; the report holds at most `metrics::INTERVALS_MAX` samples.
pub const INTERVAL_MIN: Duration = Duration::from_millis(10);

impl RunSpec {
    pub fn validate(&self) -> Result<(), SpecError> {
        self.workload.validate().map_err(|e| SpecError(format!("workload: {e}")))?;
        if self.threads == 0 || self.threads > THREADS_MAX {
            return Err(SpecError(format!("threads must be in 1..={THREADS_MAX}")));
        }
        if self.load_batch == 0 || self.load_batch > LOAD_BATCH_MAX {
            return Err(SpecError(format!("load_batch must be in 1..={LOAD_BATCH_MAX}")));
        }
        if self.interval < INTERVAL_MIN {
            return Err(SpecError(format!("interval must be at least {INTERVAL_MIN:?}")));
        }
        if let (Warmup::DbWrites { capacities: w }, Stop::DbWrites { capacities: s }) =
            (self.warmup, self.stop)
        {
            if w >= s {
                return Err(SpecError(format!(
                    "warm-up {w}x must end before the run stops at {s}x"
                )));
            }
        }
        let by_bytes = matches!(self.stop, Stop::DbWrites { .. })
            || matches!(self.warmup, Warmup::DbWrites { .. });
        let m = &self.workload.mix;
        if by_bytes && m.update + m.insert + m.read_modify_write <= 0.0 {
            return Err(SpecError(format!(
                "workload {} writes nothing, so DB writes never reach the stop or warm-up \
                 condition; use a duration",
                self.workload.name
            )));
        }
        if let Stop::DbWritesWithin { capacities, limit } = self.stop {
            if !(capacities.is_finite() && capacities > 0.0) || limit.is_zero() {
                return Err(SpecError(format!(
                    "stop at {capacities}x or {limit:?}: both must be positive"
                )));
            }
        }
        if matches!(self.stop, Stop::Ops(0)) {
            return Err(SpecError("the run needs at least one operation".into()));
        }
        Ok(())
    }

    /// The run's parameters for the report's `config.run`.
    pub fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "label": self.label,
            "workload": self.workload,
            "threads": self.threads,
            "seed": self.seed,
            "load": self.load,
            "fill_target_bytes": self.fill_target_bytes,
            "load_batch": self.load_batch,
            "stop": self.stop.describe(),
            "warmup": self.warmup.describe(),
            "interval_s": self.interval.as_secs_f64(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_users_type() {
        assert_eq!(parse_duration("60s").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        for bad in ["", "s", "-1s", "0s", "3 weeks", "10d", "9999999h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_capacities("4x").unwrap(), 4.0);
        assert_eq!(parse_capacities("0.5X").unwrap(), 0.5);
        for bad in ["4", "x", "0x", "-1x", "1e9x", "nanx"] {
            assert!(parse_capacities(bad).is_err(), "{bad}");
        }
        assert_eq!(Warmup::parse("none").unwrap(), Warmup::None);
        assert_eq!(Warmup::parse("10s").unwrap(), Warmup::Duration(Duration::from_secs(10)));
        assert_eq!(Warmup::parse("0.5x").unwrap(), Warmup::DbWrites { capacities: 0.5 });
    }

    #[test]
    fn warmup_must_end_before_stop() {
        let mut spec = RunSpec {
            label: "t".into(),
            workload: wafer_workloads::ycsb::Workload::A.spec(100),
            threads: 1,
            seed: 1,
            load: true,
            fill_target_bytes: None,
            load_batch: 1,
            stop: Stop::DbWrites { capacities: 1.0 },
            warmup: Warmup::DbWrites { capacities: 1.0 },
            interval: Duration::from_secs(1),
        };
        assert!(spec.validate().is_err());
        spec.warmup = Warmup::DbWrites { capacities: 0.5 };
        spec.validate().unwrap();
        spec.threads = 0;
        assert!(spec.validate().is_err());
        spec.threads = 1;
        spec.workload = wafer_workloads::ycsb::Workload::C.spec(100);
        let e = spec.validate().unwrap_err();
        assert!(e.0.contains("writes nothing"), "{e}");
    }
}

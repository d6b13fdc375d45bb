//! The machine a report was made on, read from Linux's /proc (fields it cannot read say
//! "unknown" rather than failing the report).
use std::time::SystemTime;

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MachineInfo {
    pub hostname: String,
    pub os: String,
    pub cpu_model: String,
    /// CPUs this process may run on.
    pub cpus: usize,
    pub memory_bytes: Option<u64>,
    pub wafer_version: String,
    /// When the report was written, RFC 3339 in UTC.
    pub generated_utc: String,
}

fn read_trimmed(path: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// The value of the first `key: value` line of a /proc file whose key is `key`.
fn proc_field(path: &str, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

fn os_name() -> Option<String> {
    let release = std::fs::read_to_string("/etc/os-release").ok()?;
    let pretty = release.lines().find_map(|l| l.strip_prefix("PRETTY_NAME="))?;
    let kernel = read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_default();
    Some(format!("{}, Linux {kernel}", pretty.trim_matches('"')))
}

impl MachineInfo {
    pub fn current() -> MachineInfo {
        let unknown = || "unknown".to_string();
        let memory_kib = proc_field("/proc/meminfo", "MemTotal")
            .and_then(|v| v.trim_end_matches("kB").trim().parse::<u64>().ok());
        MachineInfo {
            hostname: read_trimmed("/proc/sys/kernel/hostname").unwrap_or_else(unknown),
            os: os_name().unwrap_or_else(|| std::env::consts::OS.to_string()),
            cpu_model: proc_field("/proc/cpuinfo", "model name").unwrap_or_else(unknown),
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            memory_bytes: memory_kib.map(|k| k * 1024),
            wafer_version: env!("CARGO_PKG_VERSION").to_string(),
            generated_utc: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        }
    }

    /// (name, value) pairs in display order.
    pub fn rows(&self) -> Vec<(&'static str, String)> {
        let memory = self.memory_bytes.map_or_else(
            || "unknown".into(),
            |b| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        );
        vec![
            ("host", self.hostname.clone()),
            ("operating system", self.os.clone()),
            ("CPU", self.cpu_model.clone()),
            ("CPUs available", self.cpus.to_string()),
            ("memory", memory),
            ("wafer version", self.wafer_version.clone()),
            ("report written (UTC)", self.generated_utc.clone()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_machine() {
        let m = MachineInfo::current();
        assert!(m.cpus >= 1);
        assert!(m.generated_utc.ends_with('Z'), "{}", m.generated_utc);
        assert_eq!(m.rows().len(), 7);
        if cfg!(target_os = "linux") {
            assert!(m.memory_bytes.is_some_and(|b| b > 0));
        }
    }
}

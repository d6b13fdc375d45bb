//! Host I/O of a process tree from `/proc/PID/io`: the bytes a process caused to be read from
//! or sent to storage (page-cache writeback it dirtied, direct I/O), which is what a peer costs
//! the device whatever its own counters say.

use std::path::Path;

/// Cumulative storage bytes of a set of processes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct HostIo {
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Dirty page-cache bytes that were dropped (truncated or deleted) before writeback: they
    /// never reached the device, so they are subtracted from `write_bytes`.
    pub cancelled_write_bytes: u64,
}

impl HostIo {
    /// Bytes that reached (or are on their way to) the device.
    pub fn net_write_bytes(&self) -> u64 {
        self.write_bytes.saturating_sub(self.cancelled_write_bytes)
    }

    /// Counters of `later` minus these (a process that exited in between can make one shrink;
    /// such a difference is floored at zero).
    pub fn until(&self, later: &HostIo) -> HostIo {
        HostIo {
            read_bytes: later.read_bytes.saturating_sub(self.read_bytes),
            write_bytes: later.write_bytes.saturating_sub(self.write_bytes),
            cancelled_write_bytes: later
                .cancelled_write_bytes
                .saturating_sub(self.cancelled_write_bytes),
        }
    }

    pub(crate) fn add(&mut self, other: &HostIo) {
        self.read_bytes += other.read_bytes;
        self.write_bytes += other.write_bytes;
        self.cancelled_write_bytes += other.cancelled_write_bytes;
    }
}

#[derive(Debug, thiserror::Error)]
#[error("reading {path}: {reason}")]
pub struct ProcIoError {
    pub path: String,
    pub reason: String,
}

/// Parses the text of `/proc/PID/io`.
pub fn parse_io(text: &str) -> Result<HostIo, String> {
    let mut io = HostIo::default();
    let mut seen = 0;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else { continue };
        let slot = match key.trim() {
            "read_bytes" => &mut io.read_bytes,
            "write_bytes" => &mut io.write_bytes,
            "cancelled_write_bytes" => &mut io.cancelled_write_bytes,
            _ => continue,
        };
        *slot = value.trim().parse().map_err(|_| format!("`{line}` is not a count"))?;
        seen += 1;
    }
    if seen != 3 {
        return Err("read_bytes, write_bytes or cancelled_write_bytes is missing".into());
    }
    Ok(io)
}

/// The counters of one process (the whole thread group).
pub fn of_pid(pid: u32) -> Result<HostIo, ProcIoError> {
    let path = format!("/proc/{pid}/io");
    let err = |reason: String| ProcIoError { path: path.clone(), reason };
    let text = std::fs::read_to_string(&path).map_err(|e| err(e.to_string()))?;
    parse_io(&text).map_err(err)
}

/// The counters of `root` and every living descendant (a server and its workers). A child
/// that exited since an earlier reading takes its bytes with it; callers keep such processes
/// alive across a measurement (a PostgreSQL backend lives as long as its connection).
pub fn of_tree(root: u32) -> Result<HostIo, ProcIoError> {
    let mut total = of_pid(root)?;
    for pid in descendants(root) {
        // A worker may exit between the listing and the read: it is simply not counted.
        if let Ok(io) = of_pid(pid) {
            total.add(&io);
        }
    }
    Ok(total)
}

/// Living descendants of `root`, from each process's parent in `/proc/PID/stat`.
fn descendants(root: u32) -> Vec<u32> {
    let mut parents = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if let Some(ppid) = parent_of(&entry.path()) {
                parents.push((pid, ppid));
            }
        }
    }
    let mut tree = vec![root];
    // Bounded: each pass adds at least one process or stops; processes are finite.
    for _ in 0..parents.len() + 1 {
        let before = tree.len();
        for (pid, ppid) in &parents {
            if tree.contains(ppid) && !tree.contains(pid) {
                tree.push(*pid);
            }
        }
        if tree.len() == before {
            break;
        }
    }
    tree.remove(0);
    tree
}

/// The parent pid from `/proc/PID/stat` (`pid (comm) state ppid ...`; comm may hold spaces).
fn parent_of(proc_dir: &Path) -> Option<u32> {
    let stat = std::fs::read_to_string(proc_dir.join("stat")).ok()?;
    let after_comm = &stat[stat.rfind(')')? + 1..];
    after_comm.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_io_and_subtracts() {
        let text = "rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\n\
                    write_bytes: 8192\ncancelled_write_bytes: 4096\n";
        let io = parse_io(text).unwrap();
        assert_eq!((io.read_bytes, io.write_bytes, io.net_write_bytes()), (4096, 8192, 4096));
        let later = HostIo { read_bytes: 5000, write_bytes: 9000, cancelled_write_bytes: 4096 };
        assert_eq!(io.until(&later).write_bytes, 808);
        assert!(parse_io("read_bytes: 1\n").is_err());
        assert!(parse_io("read_bytes: x\nwrite_bytes: 1\ncancelled_write_bytes: 0").is_err());
    }

    #[test]
    fn own_process_and_tree_are_readable() {
        let me = std::process::id();
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        assert!(descendants(me).contains(&child.id()));
        // Other tests write meanwhile: this process's own reading first, the tree's after it
        // (counters only grow, and the tree holds this process).
        let own = of_pid(me).unwrap();
        let tree = of_tree(me).unwrap();
        assert!(tree.write_bytes >= own.write_bytes && tree.read_bytes >= own.read_bytes);
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

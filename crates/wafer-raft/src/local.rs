//! A cluster of `wafer raft serve` processes on loopback: what `wafer raft cluster` and
//! `wafer raft bench` start, and what the kill test kills and restarts. Node N keeps its data
//! in `DIR/nN` and writes its output to `DIR/nN.log`.
use crate::client::{Client, ClientError};
use crate::NodeId;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How to start the nodes.
#[derive(Debug, Clone)]
pub struct ClusterSpec {
    /// The `wafer` binary.
    pub exe: PathBuf,
    pub dir: PathBuf,
    pub nodes: usize,
    /// More `wafer raft serve` flags, the same for every node (`--write-mode`, ...).
    pub serve_args: Vec<String>,
}

/// One node's process, while it runs.
#[derive(Debug)]
struct LocalNode {
    id: NodeId,
    addr: String,
    child: Option<Child>,
}

/// The running nodes; dropping it kills those still running.
#[derive(Debug)]
pub struct LocalCluster {
    spec: ClusterSpec,
    nodes: Vec<LocalNode>,
}

/// A free loopback port: bound, read, released (the node binds it moments later).
fn free_addr() -> std::io::Result<String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.to_string())
}

impl LocalCluster {
    /// Starts `spec.nodes` nodes (ids 1..=N), each told the others as its initial peers:
    /// node 1 initialises the cluster (a single node with `--init`).
    pub fn start(spec: ClusterSpec) -> std::io::Result<LocalCluster> {
        std::fs::create_dir_all(&spec.dir)?;
        let mut nodes = Vec::with_capacity(spec.nodes);
        for id in 1..=spec.nodes as NodeId {
            nodes.push(LocalNode { id, addr: free_addr()?, child: None });
        }
        let mut cluster = LocalCluster { spec, nodes };
        for id in 1..=cluster.nodes.len() as NodeId {
            cluster.restart(id, true)?;
        }
        Ok(cluster)
    }

    pub fn addrs(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.addr.clone()).collect()
    }

    pub fn ids(&self) -> Vec<NodeId> {
        self.nodes.iter().map(|n| n.id).collect()
    }

    pub fn addr(&self, id: NodeId) -> Option<&str> {
        self.node(id).map(|n| n.addr.as_str())
    }

    /// Node `id`'s data directory.
    pub fn node_dir(&self, id: NodeId) -> PathBuf {
        self.spec.dir.join(format!("n{id}"))
    }

    fn node(&self, id: NodeId) -> Option<&LocalNode> {
        self.nodes.iter().find(|n| n.id == id)
    }

    fn node_mut(&mut self, id: NodeId) -> std::io::Result<&mut LocalNode> {
        let missing = || std::io::Error::new(std::io::ErrorKind::NotFound, format!("no node {id}"));
        self.nodes.iter_mut().find(|n| n.id == id).ok_or_else(missing)
    }

    /// (Re)starts node `id` if it is not running. `with_peers` passes the initial voters, as
    /// at the cluster's first start; a node whose data was lost restarts without them and
    /// waits for the leader to bring it up to date.
    pub fn restart(&mut self, id: NodeId, with_peers: bool) -> std::io::Result<()> {
        let peers: Vec<String> = self
            .nodes
            .iter()
            .filter(|n| n.id != id)
            .map(|n| format!("{}={}", n.id, n.addr))
            .collect();
        let dir = self.node_dir(id);
        let log_path = self.spec.dir.join(format!("n{id}.log"));
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&log_path)?;
        let mut command = Command::new(&self.spec.exe);
        let node = self.node_mut(id)?;
        if node.child.is_some() {
            return Ok(());
        }
        command.args(["raft", "serve", "--id", &id.to_string(), "--addr", &node.addr]);
        command.arg("--dir").arg(&dir);
        if with_peers && peers.is_empty() {
            command.arg("--init");
        } else if with_peers {
            command.args(["--peers", &peers.join(",")]);
        }
        command.args(&self.spec.serve_args);
        command.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log);
        let child = command.spawn()?;
        self.node_mut(id)?.child = Some(child);
        Ok(())
    }

    /// SIGKILL: the node stops at once, nothing flushed beyond what it had synced.
    pub fn kill(&mut self, id: NodeId) -> std::io::Result<()> {
        if let Some(mut child) = self.node_mut(id)?.child.take() {
            child.kill()?;
            child.wait()?;
        }
        Ok(())
    }

    /// SIGTERM and wait: the node shuts down cleanly (its database closed). Killed after
    /// `grace` if it has not exited by then.
    pub fn stop(&mut self, id: NodeId, grace: Duration) -> std::io::Result<()> {
        let Some(mut child) = self.node_mut(id)?.child.take() else { return Ok(()) };
        if let Ok(pid) = libc::pid_t::try_from(child.id()) {
            // SAFETY: kill(2) with a pid this process spawned and has not yet reaped, so the
            // pid still names that child.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        let start = Instant::now();
        while child.try_wait()?.is_none() {
            if start.elapsed() > grace {
                child.kill()?;
                child.wait()?;
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Stops every node (SIGTERM, then SIGKILL after `grace`).
    pub fn stop_all(&mut self, grace: Duration) -> std::io::Result<()> {
        for id in self.ids() {
            self.stop(id, grace)?;
        }
        Ok(())
    }

    /// Whether node `id`'s process is still running.
    pub fn is_running(&mut self, id: NodeId) -> bool {
        let Ok(node) = self.node_mut(id) else { return false };
        match &mut node.child {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// A client of every node.
    pub fn client(&self, attempt: Duration, deadline: Duration) -> Result<Client, ClientError> {
        Client::new(self.addrs(), attempt, deadline)
    }

    pub fn dir(&self) -> &Path {
        &self.spec.dir
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            if let Some(mut child) = node.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// Waits until some node reports a leader that every node in `addrs` agrees on; returns its
/// id, or None if `timeout` passed first.
pub async fn wait_for_leader(
    client: &Client,
    addrs: &[String],
    timeout: Duration,
) -> Option<NodeId> {
    let start = Instant::now();
    while start.elapsed() < timeout {
        let mut leaders = Vec::with_capacity(addrs.len());
        for addr in addrs {
            leaders.push(client.metrics(addr).await.ok().and_then(|m| m.current_leader));
        }
        if let Some(Some(leader)) = leaders.first() {
            if leaders.iter().all(|l| *l == Some(*leader)) {
                return Some(*leader);
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

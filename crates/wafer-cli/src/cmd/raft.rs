//! `wafer raft`: the replicated key-value service (openraft on Wafer, HTTP on loopback). `serve`
//! runs one node, `cluster` a local cluster of them, `bench` measures one on loopback. The
//! server, its client and the local cluster live in `wafer_raft`; this module parses flags.
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand, ValueEnum};
use wafer::WriteMode;
use wafer_raft::client::Client;
use wafer_raft::local::{wait_for_leader, ClusterSpec, LocalCluster};
use wafer_raft::server::{Server, ServerConfig};
use wafer_raft::NodeId;

use super::error::CliError;

#[derive(Debug, Args)]
pub struct RaftArgs {
    #[command(subcommand)]
    command: RaftCommand,
}

#[derive(Debug, Subcommand)]
enum RaftCommand {
    /// Run one node: its database in DIR/raft.db, HTTP on ADDR (key-value API, membership,
    /// Raft RPCs). Stops cleanly on SIGINT or SIGTERM.
    Serve(ServeArgs),
    /// Start N nodes as child processes on loopback, initialise them as one cluster, print
    /// their addresses, and run until Ctrl-C.
    Cluster(ClusterArgs),
    /// Throughput and latency of acknowledged writes and linearizable reads on a local
    /// cluster of N nodes.
    Bench(BenchArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Mode {
    InPlace,
    OutOfPlace,
}

/// Settings every node of a cluster shares.
#[derive(Debug, Clone, Args)]
struct NodeArgs {
    /// How the database writes pages.
    #[arg(long, value_enum, default_value = "in-place")]
    write_mode: Mode,
    /// Elections start after this many ms without a leader (up to twice it); heartbeats
    /// every third of it.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    election_timeout_ms: u64,
    /// Build a snapshot after this many entries applied since the last one.
    #[arg(long, default_value_t = 10_000, value_name = "ENTRIES")]
    snapshot_every: u64,
    /// Entries kept in the log behind the last snapshot; a follower further behind is sent
    /// the snapshot.
    #[arg(long, default_value_t = 1000, value_name = "ENTRIES")]
    keep_log: u64,
    /// The database file's size.
    #[arg(long, default_value_t = 256, value_name = "MIB")]
    db_mib: u64,
}

impl NodeArgs {
    fn config(&self, id: NodeId, dir: PathBuf) -> ServerConfig {
        let mut config = ServerConfig::new(id, dir);
        config.write_mode = match self.write_mode {
            Mode::InPlace => WriteMode::InPlace,
            Mode::OutOfPlace => WriteMode::OutOfPlace,
        };
        config.election_timeout_ms = self.election_timeout_ms;
        config.snapshot_every_entries = self.snapshot_every;
        config.keep_log_entries = self.keep_log;
        config.db_capacity_bytes = self.db_mib.saturating_mul(1 << 20);
        config
    }

    /// The same settings as `wafer raft serve` flags, for child processes.
    fn serve_args(&self) -> Vec<String> {
        let mode = match self.write_mode {
            Mode::InPlace => "in-place",
            Mode::OutOfPlace => "out-of-place",
        };
        let flags = [
            ("--write-mode", mode.to_owned()),
            ("--election-timeout-ms", self.election_timeout_ms.to_string()),
            ("--snapshot-every", self.snapshot_every.to_string()),
            ("--keep-log", self.keep_log.to_string()),
            ("--db-mib", self.db_mib.to_string()),
        ];
        flags.into_iter().flat_map(|(flag, value)| [flag.to_owned(), value]).collect()
    }
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// This node's id (nonzero).
    #[arg(long)]
    id: NodeId,
    /// Where to serve HTTP (and the address peers reach this node at).
    #[arg(long, value_name = "HOST:PORT")]
    addr: String,
    /// Data directory (created if missing).
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// The cluster's other initial voters. On first start the node of the lowest id among
    /// them and this one initialises the cluster. Without: the node waits to be initialised
    /// (POST /cluster/init) or added by a leader, as a node whose data was lost must.
    #[arg(long, value_name = "ID=ADDR,...", value_delimiter = ',')]
    peers: Vec<String>,
    /// On first start, initialise the cluster with this node (and --peers) as voters, whatever
    /// the ids: how a one-node cluster starts.
    #[arg(long)]
    init: bool,
    #[command(flatten)]
    node: NodeArgs,
}

fn parse_peers(peers: &[String]) -> Result<BTreeMap<NodeId, String>, CliError> {
    let mut map = BTreeMap::new();
    for peer in peers {
        let parsed = peer.split_once('=').and_then(|(id, addr)| Some((id.parse().ok()?, addr)));
        let Some((id, addr)) = parsed else {
            return Err(CliError(format!("--peers {peer}: expected ID=HOST:PORT")));
        };
        map.insert(id, addr.to_owned());
    }
    Ok(map)
}

fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(2).enable_all();
    builder.build().map_err(|e| CliError(format!("tokio runtime: {e}")))
}

/// Resolves on the first SIGINT or SIGTERM.
async fn stop_signal() -> Result<(), CliError> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    Ok(())
}

fn serve(args: ServeArgs) -> Result<(), CliError> {
    if args.id == 0 {
        return Err(CliError("--id must be nonzero".into()));
    }
    let mut config = args.node.config(args.id, args.dir);
    config.peers = parse_peers(&args.peers)?;
    config.init = args.init;
    if config.peers.contains_key(&args.id) {
        return Err(CliError(format!("--peers names this node ({}) too", args.id)));
    }
    runtime()?.block_on(async {
        let listener = tokio::net::TcpListener::bind(&args.addr)
            .await
            .map_err(|e| CliError(format!("{}: {e}", args.addr)))?;
        let server = Server::start(&config, listener).await?;
        println!(
            "node {} serving on {}, data in {}",
            config.id,
            server.addr(),
            config.dir.display()
        );
        stop_signal().await?;
        server.shutdown().await?;
        println!("node {} stopped", config.id);
        Ok(())
    })
}

pub fn run(args: RaftArgs) -> Result<(), CliError> {
    match args.command {
        RaftCommand::Serve(args) => serve(args),
        RaftCommand::Cluster(args) => cluster(args),
        RaftCommand::Bench(args) => bench(args),
    }
}

#[derive(Debug, Args)]
struct ClusterArgs {
    /// Number of nodes.
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Where the nodes keep their data (DIR/nN) and output (DIR/nN.log).
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    #[command(flatten)]
    node: NodeArgs,
}

/// How long a local cluster may take to elect its first leader (processes starting on a
/// loaded machine).
const FIRST_LEADER_WAIT: Duration = Duration::from_secs(60);

/// Starts the nodes and waits until they agree on a leader; returns the cluster and a client.
async fn start_local(
    nodes: usize,
    dir: PathBuf,
    node: &NodeArgs,
) -> Result<(LocalCluster, Client, NodeId), CliError> {
    if nodes == 0 {
        return Err(CliError("--nodes must be at least 1".into()));
    }
    let exe = std::env::current_exe()?;
    let spec = ClusterSpec { exe, dir, nodes, serve_args: node.serve_args() };
    let cluster = LocalCluster::start(spec)?;
    let client = cluster.client(Duration::from_secs(10), Duration::from_secs(30))?;
    let Some(leader) = wait_for_leader(&client, &cluster.addrs(), FIRST_LEADER_WAIT).await else {
        let logs = cluster.dir().display();
        return Err(CliError(format!("no leader within {FIRST_LEADER_WAIT:?}; see {logs}/n*.log")));
    };
    Ok((cluster, client, leader))
}

fn cluster(args: ClusterArgs) -> Result<(), CliError> {
    runtime()?.block_on(async {
        let (mut cluster, _client, leader) = start_local(args.nodes, args.dir, &args.node).await?;
        for id in cluster.ids() {
            let addr = cluster.addr(id).unwrap_or_default();
            let role = if id == leader { " (leader)" } else { "" };
            println!("node {id}: http://{addr}{role}, data in {}", cluster.node_dir(id).display());
        }
        let any = cluster.addr(leader).unwrap_or_default().to_owned();
        println!("try: curl -XPUT {any}/kv/hello -d world; curl {any}/kv/hello");
        println!("Ctrl-C stops every node");
        stop_signal().await?;
        cluster.stop_all(Duration::from_secs(10))?;
        Ok(())
    })
}

#[derive(Debug, Args)]
struct BenchArgs {
    /// Number of nodes.
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Seconds of writes, then as many of reads.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Concurrent clients (each waits for its answer before its next request).
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Bytes of each value written.
    #[arg(long, default_value_t = 100)]
    value_bytes: usize,
    /// Where the nodes keep their data [default: a directory under the system's temp dir,
    /// removed afterwards].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    #[command(flatten)]
    node: NodeArgs,
}

/// One phase's outcome: acknowledged operations, failures and each one's latency (us).
#[derive(Debug, Default)]
struct Phase {
    ops: u64,
    errors: u64,
    latencies_us: Vec<u64>,
}

impl Phase {
    fn merge(&mut self, other: Phase) {
        self.ops += other.ops;
        self.errors += other.errors;
        self.latencies_us.extend(other.latencies_us);
    }

    /// The latency at quantile `q` in ms (after sorting).
    fn quantile_ms(&self, q: f64) -> f64 {
        let n = self.latencies_us.len();
        if n == 0 {
            return 0.0;
        }
        let at = ((n as f64 * q) as usize).min(n - 1);
        self.latencies_us[at] as f64 / 1000.0
    }
}

/// Client `task` writes keys `bench/TASK/I` until `until`; returns its phase and how many it
/// wrote (read back in the read phase).
async fn write_task(client: Client, task: usize, value: String, until: Instant) -> (Phase, u64) {
    let mut phase = Phase::default();
    let mut i = 0u64;
    while Instant::now() < until {
        let started = Instant::now();
        match client.put(&format!("bench/{task:03}/{i:010}"), &value).await {
            Ok(_) => {
                phase.ops += 1;
                phase.latencies_us.push(started.elapsed().as_micros() as u64);
                i += 1;
            }
            Err(_) => phase.errors += 1,
        }
    }
    (phase, i)
}

/// Client `task` reads back the keys it wrote, round robin, through the leader.
async fn read_task(client: Client, task: usize, written: u64, until: Instant) -> Phase {
    let mut phase = Phase::default();
    let mut i = 0u64;
    while Instant::now() < until && written > 0 {
        let started = Instant::now();
        match client.get(&format!("bench/{task:03}/{:010}", i % written)).await {
            Ok(Some(_)) => {
                phase.ops += 1;
                phase.latencies_us.push(started.elapsed().as_micros() as u64);
            }
            Ok(None) | Err(_) => phase.errors += 1,
        }
        i += 1;
    }
    phase
}

/// The write phase then the read phase, `clients` tasks each, `seconds` each.
async fn bench_phases(client: &Client, args: &BenchArgs) -> Result<(Phase, Phase), CliError> {
    let duration = Duration::from_secs(args.seconds);
    let value = "v".repeat(args.value_bytes);
    let until = Instant::now() + duration;
    let writers: Vec<_> = (0..args.clients)
        .map(|task| tokio::spawn(write_task(client.clone(), task, value.clone(), until)))
        .collect();
    let (mut writes, mut written) = (Phase::default(), Vec::new());
    for writer in writers {
        let (phase, count) = writer.await.map_err(|e| CliError(format!("writer: {e}")))?;
        writes.merge(phase);
        written.push(count);
    }
    let until = Instant::now() + duration;
    let readers: Vec<_> = written
        .iter()
        .enumerate()
        .map(|(task, &count)| tokio::spawn(read_task(client.clone(), task, count, until)))
        .collect();
    let mut reads = Phase::default();
    for reader in readers {
        reads.merge(reader.await.map_err(|e| CliError(format!("reader: {e}")))?);
    }
    writes.latencies_us.sort_unstable();
    reads.latencies_us.sort_unstable();
    Ok((writes, reads))
}

fn bench(args: BenchArgs) -> Result<(), CliError> {
    let temp = args.dir.is_none();
    let dir = args.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("wafer-raft-bench-{}", std::process::id()))
    });
    if temp {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let (writes, reads) = runtime()?.block_on(async {
        let (mut cluster, client, _leader) =
            start_local(args.nodes, dir.clone(), &args.node).await?;
        let phases = bench_phases(&client, &args).await;
        cluster.stop_all(Duration::from_secs(10))?;
        phases
    })?;
    if temp {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let secs = args.seconds.max(1) as f64;
    println!(
        "| nodes | clients | value B | writes/s | write p50 ms | write p99 ms | reads/s | read p50 ms | read p99 ms | errors |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {} | {} | {} | {:.0} | {:.2} | {:.2} | {:.0} | {:.2} | {:.2} | {} |",
        args.nodes,
        args.clients,
        args.value_bytes,
        writes.ops as f64 / secs,
        writes.quantile_ms(0.5),
        writes.quantile_ms(0.99),
        reads.ops as f64 / secs,
        reads.quantile_ms(0.5),
        reads.quantile_ms(0.99),
        writes.errors + reads.errors,
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Tests may unwrap.
    use super::*;

    #[test]
    fn peers_parse_as_id_equals_address() {
        let peers = ["2=127.0.0.1:21002".to_owned(), "3=localhost:21003".to_owned()];
        let parsed = parse_peers(&peers).unwrap();
        assert_eq!(parsed[&2], "127.0.0.1:21002");
        assert_eq!(parsed[&3], "localhost:21003");
        for bad in ["127.0.0.1:21002", "x=127.0.0.1:1", "=a"] {
            assert!(parse_peers(&[bad.to_owned()]).is_err(), "{bad}");
        }
    }
}

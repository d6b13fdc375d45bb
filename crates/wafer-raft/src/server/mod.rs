//! A replicated key-value service: openraft on the Wafer store, HTTP (axum) between nodes and
//! for clients. `wafer raft serve` runs one node; [`Client`](crate::client::Client) talks to a
//! cluster of them.
//!
//! # HTTP API
//!
//! | method and path | body | answer |
//! |---|---|---|
//! | `PUT /kv/{key}` | the value | `{"index": N}`: committed at log index N |
//! | `DELETE /kv/{key}` | | `{"index": N}` |
//! | `GET /kv/{key}` | | `{"value": "..."}` or `{"value": null}` |
//! | `GET /kv?prefix=P&limit=N` or `GET /kv?start=A&end=B&limit=N` | | `{"pairs": [["k", "v"], ...]}` |
//! | `POST /cluster/init` | `{"1": "127.0.0.1:21001", ...}` | the initial voters |
//! | `POST /cluster/learners` | `{"id": 4, "addr": "..."}` | added once it has caught up |
//! | `POST /cluster/voters` | `[1, 2, 4]` | the voters become exactly these |
//! | `DELETE /cluster/nodes/{id}` | | out of the voters, then out of the cluster |
//! | `GET /cluster/metrics` | | openraft's metrics |
//! | `POST /raft/{append,vote,snapshot}` | | between nodes |
//!
//! Writes and membership changes go to the leader; reads too, unless `local=true`: the leader
//! confirms its leadership with a quorum and waits for its state machine to apply up to the
//! commit point first (`Raft::ensure_linearizable`), so a read sees every acknowledged write.
//! `local=true` reads the node's own state machine as it is (a follower may lag): what the
//! tests compare across nodes. A node that is not the leader answers 421 with
//! `{"error": ..., "leader": {"id": N, "addr": "..."}}` (503 and no leader while there is none).
mod api;
mod network;

pub use api::{ErrorBody, GetReply, LeaderHint, NodeSpec, ScanReply, WriteReply};

use crate::{KvReader, NodeId, TypeConfig};
use openraft::{BasicNode, Config, Raft, SnapshotPolicy};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use wafer::{Db, Options, WriteMode};

/// Why a node could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Storage(#[from] crate::Error),
    #[error(transparent)]
    Wafer(#[from] wafer::Error),
    #[error("raft configuration: {0}")]
    Config(String),
    #[error("raft: {0}")]
    Raft(String),
}

// `shutdown` closes the database: `?` on its `MaintenanceError` (and on the other
// per-operation errors) keeps the engine's error whole under `Wafer`.
wafer::from_operation_errors!(ServerError, ServerError::Wafer);

/// One node's settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub id: NodeId,
    /// The database is `DIR/raft.db` (and `DIR/raft.db.wal`).
    pub dir: PathBuf,
    pub write_mode: WriteMode,
    /// The cluster's initial voters other than this node (id to address). With some, the
    /// node of the lowest id among them and this one initialises the cluster on its first
    /// start; the others wait to be contacted. Empty: the node waits for `/cluster/init` or
    /// to be added by a leader (a node whose data was lost rejoins this way).
    pub peers: BTreeMap<NodeId, String>,
    /// Initialise the cluster (this node and `peers` as voters) on a pristine store whatever
    /// the ids: how a one-node cluster starts.
    pub init: bool,
    /// Elections start after this long without a leader (up to twice it); heartbeats go out
    /// at a third of it.
    pub election_timeout_ms: u64,
    /// A snapshot is built after this many entries applied since the last one.
    pub snapshot_every_entries: u64,
    /// Entries kept in the log behind the last snapshot (older ones are purged; a follower
    /// further behind is sent the snapshot).
    pub keep_log_entries: u64,
    /// The database file's size.
    pub db_capacity_bytes: u64,
}

impl ServerConfig {
    /// Defaults for a node on loopback: 1 s elections, a snapshot every 10,000 entries, 1,000
    /// entries kept, a 256 MiB database in place.
    pub fn new(id: NodeId, dir: PathBuf) -> ServerConfig {
        ServerConfig {
            id,
            dir,
            write_mode: WriteMode::InPlace,
            peers: BTreeMap::new(),
            init: false,
            election_timeout_ms: 1000,
            snapshot_every_entries: 10_000,
            keep_log_entries: 1000,
            db_capacity_bytes: 256 << 20,
        }
    }

    /// The database's options: values over 2 KiB out of line, synced commits.
    pub fn db_options(&self) -> Options {
        let mut options = Options {
            file_capacity_bytes: self.db_capacity_bytes,
            wal_capacity_bytes: (self.db_capacity_bytes / 4).max(16 << 20),
            checkpoint_log_bytes: (self.db_capacity_bytes / 16).max(4 << 20),
            buffer_pool_bytes: 32 << 20,
            ..Options::production()
        };
        if self.write_mode == WriteMode::OutOfPlace {
            options = options.out_of_place();
        }
        options.with_blobs(2048)
    }

    pub fn db_path(&self) -> PathBuf {
        self.dir.join("raft.db")
    }

    fn raft_config(&self) -> Result<Config, ServerError> {
        let election = self.election_timeout_ms.max(30);
        let config = Config {
            cluster_name: "wafer".into(),
            heartbeat_interval: election / 3,
            election_timeout_min: election,
            election_timeout_max: election.saturating_mul(2),
            install_snapshot_timeout: election.saturating_mul(5),
            snapshot_policy: SnapshotPolicy::LogsSinceLast(self.snapshot_every_entries.max(1)),
            max_in_snapshot_log_to_keep: self.keep_log_entries,
            // Snapshot chunks travel as JSON arrays of numbers: small chunks keep each RPC
            // well inside its deadline.
            snapshot_max_chunk_size: 256 << 10,
            purge_batch_size: 64,
            ..Config::default()
        };
        config.validate().map_err(|e| ServerError::Config(e.to_string()))
    }
}

/// How long a shutdown waits for HTTP requests in flight.
const HTTP_DRAIN: std::time::Duration = std::time::Duration::from_secs(5);

/// A running node: its Raft handle, a reader of its state machine and its HTTP server.
#[allow(missing_debug_implementations)] // openraft's `Raft` has no Debug.
pub struct Server {
    raft: Raft<TypeConfig>,
    reader: KvReader,
    db: Db,
    addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    http: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Server {
    /// Opens the node's database, starts Raft and serves HTTP on `listener`; initialises the
    /// cluster when `config.peers` says this node is the one to.
    pub async fn start(
        config: &ServerConfig,
        listener: tokio::net::TcpListener,
    ) -> Result<Server, ServerError> {
        let io = |path: &std::path::Path| {
            let path = path.to_path_buf();
            move |source| ServerError::Io { path, source }
        };
        std::fs::create_dir_all(&config.dir).map_err(io(&config.dir))?;
        let addr = listener.local_addr().map_err(io(&config.dir))?;
        let db = Db::open(config.db_path(), config.db_options())?;
        let (log, sm) = crate::open(db.clone())?;
        let reader = sm.reader();
        let client = reqwest::Client::builder()
            .build()
            .map_err(|e| ServerError::Raft(format!("http client: {e}")))?;
        let network = network::Network { id: config.id, client };
        let raft_config = Arc::new(config.raft_config()?);
        let raft = Raft::new(config.id, raft_config, network, log, sm)
            .await
            .map_err(|e| ServerError::Raft(e.to_string()))?;
        let app = api::router(api::Shared { raft: raft.clone(), reader: reader.clone() });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let http = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stopped.await;
            };
            axum::serve(listener, app).with_graceful_shutdown(shutdown).await
        });
        let server = Server { raft, reader, db, addr, stop, http };
        server.initialize(config).await?;
        Ok(server)
    }

    /// Initialises the cluster with `config.peers` and this node as voters, if this node has
    /// the lowest id among them (or `config.init` says so) and its store is pristine.
    async fn initialize(&self, config: &ServerConfig) -> Result<(), ServerError> {
        let first = config.peers.keys().all(|&peer| config.id < peer);
        if !config.init && (config.peers.is_empty() || !first) {
            return Ok(());
        }
        let initialized = self.raft.is_initialized().await;
        if initialized.map_err(|e| ServerError::Raft(e.to_string()))? {
            return Ok(());
        }
        let mut voters: BTreeMap<NodeId, BasicNode> =
            config.peers.iter().map(|(&id, addr)| (id, BasicNode::new(addr))).collect();
        voters.insert(config.id, BasicNode::new(self.addr.to_string()));
        self.raft.initialize(voters).await.map_err(|e| ServerError::Raft(e.to_string()))
    }

    /// The address the node serves on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn raft(&self) -> &Raft<TypeConfig> {
        &self.raft
    }

    /// This node's state machine, read locally.
    pub fn reader(&self) -> &KvReader {
        &self.reader
    }

    /// Stops serving, stops Raft, then closes the database (a checkpoint and a log flush, so
    /// the next open recovers nothing).
    pub async fn shutdown(self) -> Result<(), ServerError> {
        let _ = self.stop.send(());
        // Connections finish their request first; one stuck past this is dropped with the
        // task.
        let drained = tokio::time::timeout(HTTP_DRAIN, self.http).await;
        if let Ok(Ok(Err(source))) = drained {
            return Err(ServerError::Io { path: PathBuf::from("http server"), source });
        }
        self.raft.shutdown().await.map_err(|e| ServerError::Raft(e.to_string()))?;
        Ok(self.db.close()?)
    }
}

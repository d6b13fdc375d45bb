//! A replicated key-value service: openraft on the Wafer store, HTTP (axum) between nodes and
//! for clients, on loopback.
//!
//! ```sh
//! cargo run -p wafer-raft --example kv_server -- --id 1 --addr 127.0.0.1:21001 --dir /tmp/n1
//! cargo run -p wafer-raft --example kv_server -- --id 2 --addr 127.0.0.1:21002 --dir /tmp/n2
//! curl -XPOST 127.0.0.1:21001/cluster/init -H 'content-type: application/json' \
//!      -d '{"1":"127.0.0.1:21001"}'
//! curl -XPOST 127.0.0.1:21001/cluster/add-learner -H 'content-type: application/json' \
//!      -d '[2,"127.0.0.1:21002"]'
//! curl -XPOST 127.0.0.1:21001/cluster/change-membership -H 'content-type: application/json' \
//!      -d '[1,2]'
//! curl -XPOST 127.0.0.1:21001/kv/write -H 'content-type: application/json' \
//!      -d '{"Put":{"key":"a","value":"1"}}'
//! curl 127.0.0.1:21001/kv/get/a        # through the leader: linearizable
//! ```
use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use openraft::error::{
    Infallible, InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, ClientWriteResponse, InstallSnapshotRequest,
    InstallSnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::{BasicNode, Config, Raft, RaftMetrics};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use wafer::{Db, Options};
use wafer_raft::{KvReader, NodeId, Request, TypeConfig};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type KvRaft = Raft<TypeConfig>;

/// One node: its Raft handle and a reader of its state machine.
#[allow(missing_debug_implementations)] // openraft's `Raft` has no Debug.
#[derive(Clone)]
struct Node {
    raft: KvRaft,
    reader: KvReader,
}

/// Connections to peers, over HTTP.
#[derive(Debug)]
struct Network {
    client: reqwest::Client,
}

#[derive(Debug)]
struct Peer {
    target: NodeId,
    addr: String,
    client: reqwest::Client,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Peer;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> Peer {
        Peer { target, addr: node.addr.clone(), client: self.client.clone() }
    }
}

type RpcResult<T, E> = Result<T, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>;

impl Peer {
    /// Posts `req` to the peer's `/raft/{path}`; the peer answers with its Raft call's result.
    async fn call<Q, T, E>(&self, path: &str, req: &Q) -> RpcResult<T, E>
    where
        Q: serde::Serialize,
        T: serde::de::DeserializeOwned,
        E: std::error::Error + serde::de::DeserializeOwned,
    {
        let url = format!("http://{}/raft/{path}", self.addr);
        let sent = self.client.post(url).json(req).send().await;
        let resp = sent.map_err(|e| RPCError::Unreachable(Unreachable::new(&e)))?;
        let result: Result<T, RaftError<NodeId, E>> =
            resp.json().await.map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        result.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl RaftNetwork<TypeConfig> for Peer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        _option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<NodeId>, Infallible> {
        self.call("append", &rpc).await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        _option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<NodeId>, InstallSnapshotError> {
        self.call("snapshot", &rpc).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        _option: RPCOption,
    ) -> RpcResult<VoteResponse<NodeId>, Infallible> {
        self.call("vote", &rpc).await
    }
}

type Reply<T> = Json<Result<T, String>>;

async fn raft_append(
    State(n): State<Node>,
    Json(rpc): Json<AppendEntriesRequest<TypeConfig>>,
) -> Json<Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>>> {
    Json(n.raft.append_entries(rpc).await)
}

async fn raft_vote(
    State(n): State<Node>,
    Json(rpc): Json<VoteRequest<NodeId>>,
) -> Json<Result<VoteResponse<NodeId>, RaftError<NodeId>>> {
    Json(n.raft.vote(rpc).await)
}

async fn raft_snapshot(
    State(n): State<Node>,
    Json(rpc): Json<InstallSnapshotRequest<TypeConfig>>,
) -> Json<Result<InstallSnapshotResponse<NodeId>, RaftError<NodeId, InstallSnapshotError>>> {
    Json(n.raft.install_snapshot(rpc).await)
}

async fn kv_write(
    State(n): State<Node>,
    Json(req): Json<Request>,
) -> Reply<ClientWriteResponse<TypeConfig>> {
    Json(n.raft.client_write(req).await.map_err(|e| e.to_string()))
}

/// A read through the leader: it confirms leadership with a quorum and waits for its state
/// machine to apply up to the commit point first, so the read sees every acknowledged write.
async fn kv_get(State(n): State<Node>, Path(key): Path<String>) -> Reply<Option<String>> {
    if let Err(e) = n.raft.ensure_linearizable().await {
        return Json(Err(e.to_string()));
    }
    let value = n.reader.get(&key).map_err(|e| e.to_string());
    Json(value.map(|v| v.map(|v| String::from_utf8_lossy(&v).into_owned())))
}

async fn cluster_init(
    State(n): State<Node>,
    Json(nodes): Json<BTreeMap<NodeId, String>>,
) -> Reply<()> {
    let nodes: BTreeMap<NodeId, BasicNode> =
        nodes.into_iter().map(|(id, addr)| (id, BasicNode::new(addr))).collect();
    Json(n.raft.initialize(nodes).await.map_err(|e| e.to_string()))
}

async fn add_learner(
    State(n): State<Node>,
    Json((id, addr)): Json<(NodeId, String)>,
) -> Reply<ClientWriteResponse<TypeConfig>> {
    let added = n.raft.add_learner(id, BasicNode::new(addr), true).await;
    Json(added.map_err(|e| e.to_string()))
}

/// Promotes learners and removes voters: the new voter set.
async fn change_membership(
    State(n): State<Node>,
    Json(voters): Json<BTreeSet<NodeId>>,
) -> Reply<ClientWriteResponse<TypeConfig>> {
    Json(n.raft.change_membership(voters, false).await.map_err(|e| e.to_string()))
}

async fn metrics(State(n): State<Node>) -> Json<RaftMetrics<NodeId, BasicNode>> {
    Json(n.raft.metrics().borrow().clone())
}

fn router(node: Node) -> Router {
    Router::new()
        .route("/raft/append", post(raft_append))
        .route("/raft/vote", post(raft_vote))
        .route("/raft/snapshot", post(raft_snapshot))
        .route("/kv/write", post(kv_write))
        .route("/kv/get/{key}", get(kv_get))
        .route("/cluster/init", post(cluster_init))
        .route("/cluster/add-learner", post(add_learner))
        .route("/cluster/change-membership", post(change_membership))
        .route("/cluster/metrics", get(metrics))
        .with_state(node)
}

/// Sized for a demo: a 64 MiB database, values over 2 KiB out of line, synced commits.
fn db_options() -> Options {
    let options = Options {
        file_capacity_bytes: 64 << 20,
        wal_capacity_bytes: 16 << 20,
        checkpoint_log_bytes: 4 << 20,
        buffer_pool_bytes: 8 << 20,
        ..Options::production()
    };
    options.with_blobs(2048)
}

/// Opens node `id`'s database in `dir` and serves it on `listener` until the process ends.
async fn start(
    id: NodeId,
    listener: tokio::net::TcpListener,
    dir: &std::path::Path,
) -> Result<Node, BoxError> {
    std::fs::create_dir_all(dir)?;
    let db = Db::open(dir.join("raft.db"), db_options())?;
    let (log, sm) = wafer_raft::open(db)?;
    let reader = sm.reader();
    let config = Config {
        heartbeat_interval: 200,
        election_timeout_min: 600,
        election_timeout_max: 1200,
        ..Config::default()
    };
    let network = Network { client: reqwest::Client::new() };
    let raft = Raft::new(id, Arc::new(config.validate()?), network, log, sm).await?;
    let node = Node { raft, reader };
    let app = router(node.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(node)
}

/// `--id N --addr HOST:PORT --dir DIR`.
fn parse_args() -> Result<(NodeId, String, std::path::PathBuf), BoxError> {
    let (mut id, mut addr, mut dir) = (None, None, None);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--id" => id = Some(value.parse()?),
            "--addr" => addr = Some(value),
            "--dir" => dir = Some(value.into()),
            _ => return Err(format!("unknown flag {flag}").into()),
        }
    }
    let usage = "usage: kv_server --id N --addr HOST:PORT --dir DIR";
    Ok((id.ok_or(usage)?, addr.ok_or(usage)?, dir.ok_or(usage)?))
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let (id, addr, dir) = parse_args()?;
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let _node = start(id, listener, &dir).await?;
    println!("node {id} serving on {addr}, data in {}", dir.display());
    tokio::signal::ctrl_c().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Tests may unwrap.
    use super::*;
    use std::time::{Duration, Instant};

    async fn post<T: serde::Serialize>(client: &reqwest::Client, url: String, body: &T) -> String {
        client.post(url).json(body).send().await.unwrap().text().await.unwrap()
    }

    /// Three nodes in this process: one initialises, two join as learners and are promoted, a
    /// write to the leader reaches both followers' state machines and reads back through it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_reaches_every_node() {
        let dir = std::env::temp_dir().join(format!("wafer-raft-kv-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut nodes = Vec::new();
        let mut addrs = Vec::new();
        for id in 1..=3u64 {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            addrs.push(listener.local_addr().unwrap().to_string());
            nodes.push(start(id, listener, &dir.join(id.to_string())).await.unwrap());
        }
        let c = reqwest::Client::new();
        let url = |path: &str| format!("http://{}{path}", addrs[0]);
        let init = BTreeMap::from([(1u64, addrs[0].clone())]);
        assert!(post(&c, url("/cluster/init"), &init).await.contains("Ok"));
        nodes[0].raft.wait(Some(Duration::from_secs(10))).current_leader(1, "").await.unwrap();
        for id in 2..=3u64 {
            let learner = (id, addrs[id as usize - 1].clone());
            assert!(post(&c, url("/cluster/add-learner"), &learner).await.contains("Ok"));
        }
        let voters = BTreeSet::from([1u64, 2, 3]);
        assert!(post(&c, url("/cluster/change-membership"), &voters).await.contains("Ok"));
        let put = Request::Put { key: "greeting".into(), value: "hello".into() };
        assert!(post(&c, url("/kv/write"), &put).await.contains("Ok"));
        let read = c.get(url("/kv/get/greeting")).send().await.unwrap().text().await.unwrap();
        assert_eq!(read, r#"{"Ok":"hello"}"#);
        let deadline = Instant::now() + Duration::from_secs(10);
        for node in &nodes[1..] {
            while node.reader.get("greeting").unwrap().as_deref() != Some(&b"hello"[..]) {
                assert!(Instant::now() < deadline, "the write did not reach a follower");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        for node in nodes {
            node.raft.shutdown().await.unwrap();
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

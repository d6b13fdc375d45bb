//! The HTTP routes: Raft RPCs between nodes, the key-value API for clients and membership
//! changes. Every body is JSON except a put's, which is the value itself.
use crate::{KvReader, NodeId, Request, Response, TypeConfig};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response as HttpResponse};
use axum::routing::{get, post};
use axum::{Json, Router};
use openraft::error::{InstallSnapshotError, RaftError};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, ClientWriteResponse, InstallSnapshotRequest,
    InstallSnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::{BasicNode, ChangeMembers, Raft};
use std::collections::{BTreeMap, BTreeSet};

/// A client-facing error body.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ErrorBody {
    pub error: String,
    /// The leader to retry at, when the node answering is not it and knows who is.
    pub leader: Option<LeaderHint>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LeaderHint {
    pub id: NodeId,
    pub addr: String,
}

/// What every handler shares.
#[derive(Clone)]
#[allow(missing_debug_implementations)] // openraft's `Raft` has no Debug.
pub(crate) struct Shared {
    pub(crate) raft: Raft<TypeConfig>,
    pub(crate) reader: KvReader,
}

/// A refusal: its status and the JSON body clients read (with the leader to retry at, when the
/// node is not the leader).
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    body: ErrorBody,
}

impl ApiError {
    fn new(status: StatusCode, error: impl ToString) -> ApiError {
        ApiError { status, body: ErrorBody { error: error.to_string(), leader: None } }
    }

    /// From a Raft call's error: "not the leader" becomes 421 with the leader's address when
    /// this node knows it (503 while there is none), anything else 503 (the node is stopping
    /// or the quorum is unreachable: a client may retry elsewhere).
    fn from_raft<E>(e: RaftError<NodeId, E>) -> ApiError
    where
        E: std::error::Error
            + openraft::TryAsRef<openraft::error::ForwardToLeader<NodeId, BasicNode>>,
    {
        let hint = e.forward_to_leader::<BasicNode>().map(|f| (f.leader_id, f.leader_node.clone()));
        let mut err = ApiError::new(StatusCode::SERVICE_UNAVAILABLE, &e);
        if let Some((Some(id), Some(node))) = hint {
            err.status = StatusCode::MISDIRECTED_REQUEST;
            err.body.leader = Some(LeaderHint { id, addr: node.addr });
        }
        err
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> HttpResponse {
        (self.status, Json(self.body)).into_response()
    }
}

type ApiResult<T> = Result<Json<T>, ApiError>;

async fn raft_append(
    State(s): State<Shared>,
    Json(rpc): Json<AppendEntriesRequest<TypeConfig>>,
) -> Json<Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>>> {
    Json(s.raft.append_entries(rpc).await)
}

async fn raft_vote(
    State(s): State<Shared>,
    Json(rpc): Json<VoteRequest<NodeId>>,
) -> Json<Result<VoteResponse<NodeId>, RaftError<NodeId>>> {
    Json(s.raft.vote(rpc).await)
}

async fn raft_snapshot(
    State(s): State<Shared>,
    Json(rpc): Json<InstallSnapshotRequest<TypeConfig>>,
) -> Json<Result<InstallSnapshotResponse<NodeId>, RaftError<NodeId, InstallSnapshotError>>> {
    Json(s.raft.install_snapshot(rpc).await)
}

/// The answer to a write: the log index it committed at.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct WriteReply {
    pub index: u64,
}

/// Commits `request` through the leader; acknowledged once a quorum has it and the leader
/// applied it.
async fn write(s: &Shared, request: Request) -> ApiResult<WriteReply> {
    let resp: ClientWriteResponse<TypeConfig> =
        s.raft.client_write(request).await.map_err(ApiError::from_raft)?;
    match resp.data {
        Response::Done => Ok(Json(WriteReply { index: resp.log_id.index })),
        Response::Rejected(why) => Err(ApiError::new(StatusCode::BAD_REQUEST, why)),
    }
}

async fn kv_put(
    State(s): State<Shared>,
    Path(key): Path<String>,
    value: String,
) -> ApiResult<WriteReply> {
    write(&s, Request::Put { key, value }).await
}

async fn kv_delete(State(s): State<Shared>, Path(key): Path<String>) -> ApiResult<WriteReply> {
    write(&s, Request::Delete { key }).await
}

/// `?local=true` reads this node's state machine as it is (a follower may lag); otherwise the
/// read goes through the leader's read index.
#[derive(Debug, Default, serde::Deserialize)]
struct ReadParams {
    #[serde(default)]
    local: bool,
}

/// Confirms leadership with a quorum and waits until the state machine has applied up to
/// the commit point, so what is read next includes every acknowledged write.
async fn linearize(s: &Shared, local: bool) -> Result<(), ApiError> {
    if !local {
        s.raft.ensure_linearizable().await.map_err(ApiError::from_raft)?;
    }
    Ok(())
}

fn storage_error(e: crate::Error) -> ApiError {
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e)
}

/// The answer to a get: `null` when the key is absent.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct GetReply {
    pub value: Option<String>,
}

async fn kv_get(
    State(s): State<Shared>,
    Path(key): Path<String>,
    Query(params): Query<ReadParams>,
) -> ApiResult<GetReply> {
    linearize(&s, params.local).await?;
    let value = s.reader.get(&key).map_err(storage_error)?;
    Ok(Json(GetReply { value: value.map(|v| String::from_utf8_lossy(&v).into_owned()) }))
}

/// A scan: keys starting with `prefix`, or `start <= key < end`; at most `limit` pairs.
#[derive(Debug, serde::Deserialize)]
struct ScanParams {
    prefix: Option<String>,
    start: Option<String>,
    end: Option<String>,
    limit: Option<usize>,
    #[serde(default)]
    local: bool,
}

/// Pairs a scan returns when the request names no limit.
const SCAN_LIMIT_DEFAULT: usize = 1000;

/// The answer to a scan: pairs in key order.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct ScanReply {
    pub pairs: Vec<(String, String)>,
}

async fn kv_scan(State(s): State<Shared>, Query(p): Query<ScanParams>) -> ApiResult<ScanReply> {
    if p.prefix.is_some() && (p.start.is_some() || p.end.is_some()) {
        let why = "a scan takes a prefix or a range (start, end), not both";
        return Err(ApiError::new(StatusCode::BAD_REQUEST, why));
    }
    linearize(&s, p.local).await?;
    let limit = p.limit.unwrap_or(SCAN_LIMIT_DEFAULT);
    let pairs = match &p.prefix {
        Some(prefix) => s.reader.scan(prefix, limit),
        None => s.reader.scan_range(p.start.as_deref().unwrap_or(""), p.end.as_deref(), limit),
    };
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    let pairs = pairs.map_err(storage_error)?.into_iter().map(|(k, v)| (text(k), text(v)));
    Ok(Json(ScanReply { pairs: pairs.collect() }))
}

/// Initialises a pristine cluster with these voters (id to address).
async fn cluster_init(
    State(s): State<Shared>,
    Json(nodes): Json<BTreeMap<NodeId, String>>,
) -> ApiResult<()> {
    let nodes: BTreeMap<NodeId, BasicNode> =
        nodes.into_iter().map(|(id, addr)| (id, BasicNode::new(addr))).collect();
    // Refused only as already initialised, or a stopping node: either way not a retry.
    let done = s.raft.initialize(nodes).await;
    done.map_err(|e| ApiError::new(StatusCode::CONFLICT, e))?;
    Ok(Json(()))
}

/// A node to add: its id and address.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct NodeSpec {
    pub id: NodeId,
    pub addr: String,
}

/// The answer to a membership change: the log index of the change.
async fn membership(
    s: &Shared,
    changes: ChangeMembers<NodeId, BasicNode>,
) -> ApiResult<WriteReply> {
    let resp = s.raft.change_membership(changes, false).await.map_err(ApiError::from_raft)?;
    Ok(Json(WriteReply { index: resp.log_id.index }))
}

/// Adds a learner and waits until it has caught up with the leader's log.
async fn add_learner(State(s): State<Shared>, Json(n): Json<NodeSpec>) -> ApiResult<WriteReply> {
    let resp = s.raft.add_learner(n.id, BasicNode::new(n.addr), true).await;
    Ok(Json(WriteReply { index: resp.map_err(ApiError::from_raft)?.log_id.index }))
}

/// Sets the voters to exactly these ids: promotes learners among them, demotes voters not
/// among them to learners.
async fn set_voters(
    State(s): State<Shared>,
    Json(voters): Json<BTreeSet<NodeId>>,
) -> ApiResult<WriteReply> {
    membership(&s, ChangeMembers::ReplaceAllVoters(voters)).await
}

/// Removes a node from the cluster: out of the voters first (if it is one), then out of the
/// nodes replicated to.
async fn remove_node(State(s): State<Shared>, Path(id): Path<NodeId>) -> ApiResult<WriteReply> {
    let voters: BTreeSet<NodeId> = {
        let metrics = s.raft.metrics().borrow().clone();
        metrics.membership_config.membership().voter_ids().collect()
    };
    if voters.contains(&id) {
        let _voters_changed =
            membership(&s, ChangeMembers::RemoveVoters(BTreeSet::from([id]))).await?;
    }
    membership(&s, ChangeMembers::RemoveNodes(BTreeSet::from([id]))).await
}

async fn metrics(State(s): State<Shared>) -> Json<openraft::RaftMetrics<NodeId, BasicNode>> {
    Json(s.raft.metrics().borrow().clone())
}

/// Request bodies up to this size: appends of many entries and snapshot chunks (bytes as JSON
/// numbers, about four times their size) pass axum's 2 MiB default.
const BODY_MAX_BYTES: usize = 64 << 20;

pub(crate) fn router(shared: Shared) -> Router {
    Router::new()
        .route("/raft/append", post(raft_append))
        .route("/raft/vote", post(raft_vote))
        .route("/raft/snapshot", post(raft_snapshot))
        .route("/kv", get(kv_scan))
        .route("/kv/{*key}", get(kv_get).put(kv_put).delete(kv_delete))
        .route("/cluster/init", post(cluster_init))
        .route("/cluster/learners", post(add_learner))
        .route("/cluster/voters", post(set_voters))
        .route("/cluster/nodes/{id}", axum::routing::delete(remove_node))
        .route("/cluster/metrics", get(metrics))
        .layer(axum::extract::DefaultBodyLimit::max(BODY_MAX_BYTES))
        .with_state(shared)
}

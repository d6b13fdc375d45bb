//! Raft RPCs between nodes: JSON over HTTP POSTs to the peer's `/raft/...` routes.
use crate::{NodeId, TypeConfig};
use openraft::error::{
    Infallible, InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Timeout,
    Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{BasicNode, RPCTypes};

/// Makes a [`Peer`] per target; they share one connection pool.
#[derive(Debug, Clone)]
pub(crate) struct Network {
    pub(crate) id: NodeId,
    pub(crate) client: reqwest::Client,
}

#[derive(Debug)]
pub(crate) struct Peer {
    id: NodeId,
    target: NodeId,
    addr: String,
    client: reqwest::Client,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Peer;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> Peer {
        Peer { id: self.id, target, addr: node.addr.clone(), client: self.client.clone() }
    }
}

type RpcResult<T, E> = Result<T, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>;

impl Peer {
    /// Posts `req` to the peer's `/raft/{path}`; the peer answers with its Raft call's result.
    /// Bounded by openraft's deadline for the RPC, so a peer that stopped answering (a
    /// stopped process keeps its socket open) is reported instead of waited on.
    async fn call<Q, T, E>(&self, action: RPCTypes, req: &Q, option: &RPCOption) -> RpcResult<T, E>
    where
        Q: serde::Serialize,
        T: serde::de::DeserializeOwned,
        E: std::error::Error + serde::de::DeserializeOwned,
    {
        let path = match action {
            RPCTypes::Vote => "vote",
            RPCTypes::InstallSnapshot => "snapshot",
            _ => "append",
        };
        let url = format!("http://{}/raft/{path}", self.addr);
        let ttl = option.hard_ttl();
        let sent = self.client.post(url).timeout(ttl).json(req).send().await;
        let resp = sent.map_err(|e| self.send_error(e, action, ttl))?;
        let result: Result<T, RaftError<NodeId, E>> =
            resp.json().await.map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        result.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }

    fn send_error<E: std::error::Error>(
        &self,
        e: reqwest::Error,
        action: RPCTypes,
        ttl: std::time::Duration,
    ) -> RPCError<NodeId, BasicNode, RaftError<NodeId, E>> {
        if e.is_timeout() {
            RPCError::Timeout(Timeout { action, id: self.id, target: self.target, timeout: ttl })
        } else {
            RPCError::Unreachable(Unreachable::new(&e))
        }
    }
}

impl RaftNetwork<TypeConfig> for Peer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<NodeId>, Infallible> {
        self.call(RPCTypes::AppendEntries, &rpc, &option).await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<NodeId>, InstallSnapshotError> {
        self.call(RPCTypes::InstallSnapshot, &rpc, &option).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> RpcResult<VoteResponse<NodeId>, Infallible> {
        self.call(RPCTypes::Vote, &rpc, &option).await
    }
}

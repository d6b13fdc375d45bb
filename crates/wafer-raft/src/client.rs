//! A client of a `wafer raft serve` cluster: sends writes and linearizable reads to the
//! leader, following the leader hints nodes answer with and retrying through elections.
use crate::server::{ErrorBody, GetReply, NodeSpec, ScanReply, WriteReply};
use crate::NodeId;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Why a request failed for good.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The cluster refused the request (a rejected key, a bad scan): retrying will not help.
    #[error("refused ({status}): {error}")]
    Refused { status: u16, error: String },
    /// No node accepted the request before the deadline (no leader, no quorum, nodes down).
    #[error("no answer within {waited_ms} ms; last: {last}")]
    Unavailable { waited_ms: u128, last: String },
    #[error("http client: {0}")]
    Build(String),
}

/// Pause between tries while the cluster has no leader.
const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// Talks to the nodes at `addrs`; clones share the leader they have found.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    addrs: Vec<String>,
    /// Where requests go first: the last leader seen.
    leader: Arc<Mutex<String>>,
    /// How long a request keeps retrying through elections and restarts.
    deadline: Duration,
}

/// One try's outcome.
enum Try<T> {
    Done(T),
    Retry { at: Option<String>, why: String },
    Refused(ClientError),
}

impl Client {
    /// A client of the nodes at `addrs` (HOST:PORT), each try bounded by `attempt`, each
    /// request by `deadline`.
    pub fn new(
        addrs: Vec<String>,
        attempt: Duration,
        deadline: Duration,
    ) -> Result<Client, ClientError> {
        let http = reqwest::Client::builder()
            .timeout(attempt)
            .build()
            .map_err(|e| ClientError::Build(e.to_string()))?;
        let first = addrs.first().cloned().unwrap_or_default();
        Ok(Client { http, addrs, leader: Arc::new(Mutex::new(first)), deadline })
    }

    fn leader(&self) -> String {
        self.leader.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn set_leader(&self, addr: String) {
        *self.leader.lock().unwrap_or_else(|e| e.into_inner()) = addr;
    }

    /// The node after `addr` in the list: where to try next when `addr` has no leader hint.
    fn next_after(&self, addr: &str) -> String {
        let at = self.addrs.iter().position(|a| a == addr).map_or(0, |i| i + 1);
        self.addrs.get(at % self.addrs.len().max(1)).cloned().unwrap_or_default()
    }

    /// Sends `build(addr)` to the leader until it answers, following hints, until the deadline.
    async fn send<T, F>(&self, build: F) -> Result<T, ClientError>
    where
        T: serde::de::DeserializeOwned,
        F: Fn(&reqwest::Client, &str) -> reqwest::RequestBuilder,
    {
        let start = Instant::now();
        let mut addr = self.leader();
        loop {
            let why = match self.try_once(build(&self.http, &addr)).await {
                Try::Done(value) => {
                    self.set_leader(addr);
                    return Ok(value);
                }
                Try::Refused(e) => return Err(e),
                Try::Retry { at: Some(hint), .. } if hint != addr => {
                    addr = hint;
                    continue;
                }
                Try::Retry { why, .. } => why,
            };
            if start.elapsed() >= self.deadline {
                return Err(ClientError::Unavailable {
                    waited_ms: start.elapsed().as_millis(),
                    last: why,
                });
            }
            addr = self.next_after(&addr);
            tokio::time::sleep(RETRY_PAUSE).await;
        }
    }

    async fn try_once<T: serde::de::DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Try<T> {
        let resp = match request.send().await {
            Ok(resp) => resp,
            Err(e) => return Try::Retry { at: None, why: e.to_string() },
        };
        let status = resp.status();
        if status.is_success() {
            return match resp.json().await {
                Ok(value) => Try::Done(value),
                Err(e) => Try::Retry { at: None, why: e.to_string() },
            };
        }
        let body: ErrorBody = match resp.json().await {
            Ok(body) => body,
            Err(e) => return Try::Retry { at: None, why: format!("{status}: {e}") },
        };
        if status.is_client_error() && status.as_u16() != 421 {
            let error = body.error;
            return Try::Refused(ClientError::Refused { status: status.as_u16(), error });
        }
        Try::Retry { at: body.leader.map(|l| l.addr), why: format!("{status}: {}", body.error) }
    }

    /// Puts `value` under `key`; returns the log index it committed at. A put retried after
    /// a lost answer may commit twice: the same value, so the map ends the same.
    pub async fn put(&self, key: &str, value: &str) -> Result<u64, ClientError> {
        let url = |addr: &str| kv_url(addr, key);
        let reply: WriteReply =
            self.send(|c, addr| c.put(url(addr)).body(value.to_owned())).await?;
        Ok(reply.index)
    }

    pub async fn delete(&self, key: &str) -> Result<u64, ClientError> {
        let reply: WriteReply = self.send(|c, addr| c.delete(kv_url(addr, key))).await?;
        Ok(reply.index)
    }

    /// A linearizable read through the leader.
    pub async fn get(&self, key: &str) -> Result<Option<String>, ClientError> {
        let reply: GetReply = self.send(|c, addr| c.get(kv_url(addr, key))).await?;
        Ok(reply.value)
    }

    /// Up to `limit` pairs whose key starts with `prefix`, through the leader.
    pub async fn scan(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<(String, String)>, ClientError> {
        let query = [("prefix", prefix.to_owned()), ("limit", limit.to_string())];
        let send =
            |c: &reqwest::Client, addr: &str| c.get(format!("http://{addr}/kv")).query(&query);
        let reply: ScanReply = self.send(send).await?;
        Ok(reply.pairs)
    }

    /// Initialises a pristine cluster at node `addr` with these voters (id to address).
    pub async fn init(
        &self,
        addr: &str,
        voters: &std::collections::BTreeMap<NodeId, String>,
    ) -> Result<(), ClientError> {
        self.ask(self.http.post(format!("http://{addr}/cluster/init")).json(voters)).await
    }

    /// Adds node `id` at `node_addr` as a learner; returns once it has caught up.
    pub async fn add_learner(&self, id: NodeId, node_addr: &str) -> Result<u64, ClientError> {
        let spec = NodeSpec { id, addr: node_addr.to_owned() };
        let send = |c: &reqwest::Client, addr: &str| {
            c.post(format!("http://{addr}/cluster/learners")).json(&spec)
        };
        Ok(self.send::<WriteReply, _>(send).await?.index)
    }

    /// Makes the voters exactly `voters` (promoting learners, demoting the others).
    pub async fn set_voters(&self, voters: &[NodeId]) -> Result<u64, ClientError> {
        let send = |c: &reqwest::Client, addr: &str| {
            c.post(format!("http://{addr}/cluster/voters")).json(voters)
        };
        Ok(self.send::<WriteReply, _>(send).await?.index)
    }

    /// Removes node `id` from the cluster.
    pub async fn remove_node(&self, id: NodeId) -> Result<u64, ClientError> {
        let send =
            |c: &reqwest::Client, addr: &str| c.delete(format!("http://{addr}/cluster/nodes/{id}"));
        Ok(self.send::<WriteReply, _>(send).await?.index)
    }

    /// Node `addr`'s own state machine, up to `limit` pairs from the first key, as it is
    /// (no leader involved).
    pub async fn scan_local(
        &self,
        addr: &str,
        limit: usize,
    ) -> Result<Vec<(String, String)>, ClientError> {
        let url = format!("http://{addr}/kv");
        let query = [("local", "true".to_owned()), ("limit", limit.to_string())];
        let reply: ScanReply = self.ask(self.http.get(url).query(&query)).await?;
        Ok(reply.pairs)
    }

    /// Node `addr`'s Raft metrics.
    pub async fn metrics(&self, addr: &str) -> Result<Metrics, ClientError> {
        self.ask(self.http.get(format!("http://{addr}/cluster/metrics"))).await
    }

    /// One request to one node, no retry.
    async fn ask<T: serde::de::DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<T, ClientError> {
        match self.try_once(request).await {
            Try::Done(value) => Ok(value),
            Try::Refused(e) => Err(e),
            Try::Retry { why, .. } => Err(ClientError::Unavailable { waited_ms: 0, last: why }),
        }
    }
}

pub type Metrics = openraft::RaftMetrics<NodeId, openraft::BasicNode>;

/// `http://ADDR/kv/KEY`, the key percent-encoded as one path segment's worth of text.
fn kv_url(addr: &str, key: &str) -> String {
    let mut url = format!("http://{addr}/kv/");
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            url.push(b as char);
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    url
}

//! The Raft types of the replicated key-value service: node ids, entries and the requests the
//! state machine applies. A leaf, so the stores and the error type name them without naming the
//! crate root that calls into them.

use std::io::Cursor;

pub type NodeId = u64;
pub type Node = openraft::BasicNode;
pub type Entry = openraft::Entry<TypeConfig>;

openraft::declare_raft_types!(
    /// The Raft types of the replicated key-value service.
    pub TypeConfig:
        D = Request,
        R = Response,
        NodeId = NodeId,
        Node = Node,
        Entry = Entry,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

/// A change to the replicated map.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Request {
    Put { key: String, value: String },
    Delete { key: String },
}

impl Request {
    pub fn key(&self) -> &str {
        match self {
            Request::Put { key, .. } | Request::Delete { key } => key,
        }
    }
}

/// What applying a [`Request`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Response {
    /// Applied (and for blank and membership entries: nothing to do).
    #[default]
    Done,
    /// Refused the same way on every node (a key over the engine's limit).
    Rejected(String),
}

#![allow(clippy::unwrap_used)] // Tests may unwrap.
//! openraft's own storage suite on the Wafer store, in both write modes, on in-memory devices
//! (each of the suite's cases builds a fresh store).
use openraft::testing::{StoreBuilder, Suite};
use openraft::StorageError;
use std::sync::Arc;
use wafer::device::{Device, MemoryDevice};
use wafer::{Db, Options};
use wafer_raft::{LogStore, NodeId, StateMachine, TypeConfig};

fn options(out_of_place: bool) -> Options {
    // Blobs from 512 bytes, so the suite's entries run through both inline and out-of-line
    // values as they grow; a pool large enough for the store's batches.
    let o = Options::test_min().with_buffer_pool_bytes(256 * 4096).with_blobs(512);
    if out_of_place {
        o.out_of_place()
    } else {
        o
    }
}

struct Builder {
    out_of_place: bool,
}

impl StoreBuilder<TypeConfig, LogStore, StateMachine, Db> for Builder {
    async fn build(&self) -> Result<(Db, LogStore, StateMachine), StorageError<NodeId>> {
        let o = options(self.out_of_place);
        let data: Arc<dyn Device> = Arc::new(MemoryDevice::new(o.file_capacity_bytes));
        let wal: Arc<dyn Device> = Arc::new(MemoryDevice::new(o.wal_capacity_bytes));
        let db = Db::open_on_devices(data, wal, o).unwrap();
        let (log, sm) = wafer_raft::open(db.clone()).unwrap();
        Ok((db, log, sm))
    }
}

#[test]
fn openraft_suite_in_place() {
    Suite::test_all(Builder { out_of_place: false }).unwrap();
}

#[test]
fn openraft_suite_out_of_place() {
    Suite::test_all(Builder { out_of_place: true }).unwrap();
}

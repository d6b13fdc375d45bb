#![allow(clippy::unwrap_used)] // Tests may unwrap.
//! What the stores keep across a reopen that follows a drop without close (nothing flushed
//! beyond what was synced): the vote, entries over 2 KiB, the purge point, the applied state
//! and the map, and an installed snapshot in place of the old map.
use openraft::storage::{RaftLogStorage, RaftLogStorageExt, RaftStateMachine};
use openraft::testing::log_id;
use openraft::{Entry, EntryPayload, RaftLogReader, RaftSnapshotBuilder, Vote};
use std::sync::Arc;
use wafer::device::{Device, MemoryDevice};
use wafer::{Db, Options};
use wafer_raft::{Request, TypeConfig};

struct Devices {
    data: Arc<MemoryDevice>,
    wal: Arc<MemoryDevice>,
    options: Options,
}

impl Devices {
    fn new(out_of_place: bool) -> Devices {
        let mut options = Options::test_min().with_buffer_pool_bytes(256 * 4096).with_blobs(512);
        if out_of_place {
            options = options.out_of_place();
        }
        Devices {
            data: Arc::new(MemoryDevice::new(options.file_capacity_bytes)),
            wal: Arc::new(MemoryDevice::new(options.wal_capacity_bytes)),
            options,
        }
    }
    fn open(&self) -> Db {
        let (d, w): (Arc<dyn Device>, Arc<dyn Device>) = (self.data.clone(), self.wal.clone());
        Db::open_on_devices(d, w, self.options.clone()).unwrap()
    }
}

fn put(index: u64, key: &str, len: usize) -> Entry<TypeConfig> {
    let value = format!("{key}:{}", "v".repeat(len));
    let request = Request::Put { key: key.into(), value };
    Entry { log_id: log_id(1, 1, index), payload: EntryPayload::Normal(request) }
}

async fn log_and_state_survive(out_of_place: bool) {
    let devices = Devices::new(out_of_place);
    {
        let (mut log, mut sm) = wafer_raft::open(devices.open()).unwrap();
        log.save_vote(&Vote::new(3, 2)).await.unwrap();
        let entries: Vec<_> = (1..=20).map(|i| put(i, &format!("k{i:02}"), 3000)).collect();
        log.blocking_append(entries.clone()).await.unwrap();
        log.purge(log_id(1, 1, 5)).await.unwrap();
        sm.apply(entries[..10].to_vec()).await.unwrap();
    } // Dropped without close: only what was synced counts.
    let (mut log, mut sm) = wafer_raft::open(devices.open()).unwrap();
    assert_eq!(log.read_vote().await.unwrap(), Some(Vote::new(3, 2)));
    let state = log.get_log_state().await.unwrap();
    assert_eq!(state.last_purged_log_id, Some(log_id(1, 1, 5)));
    assert_eq!(state.last_log_id, Some(log_id(1, 1, 20)));
    let read = log.try_get_log_entries(6..=20).await.unwrap();
    assert_eq!(read.len(), 15);
    assert_eq!(read[14], put(20, "k20", 3000));
    assert_eq!(sm.applied_state().await.unwrap().0, Some(log_id(1, 1, 10)));
    let reader = sm.reader();
    assert_eq!(reader.get("k10").unwrap().unwrap().len(), 4 + 3000);
    assert_eq!(reader.get("k11").unwrap(), None);

    // A snapshot of this node installed on a fresh one replaces its map whole.
    let snap = sm.get_snapshot_builder().await.build_snapshot().await.unwrap();
    let other = Devices::new(out_of_place);
    {
        let (_log, mut sm2) = wafer_raft::open(other.open()).unwrap();
        sm2.apply(vec![put(1, "stale", 10)]).await.unwrap();
        sm2.install_snapshot(&snap.meta, snap.snapshot).await.unwrap();
    }
    let (_log, mut sm2) = wafer_raft::open(other.open()).unwrap();
    assert_eq!(sm2.applied_state().await.unwrap().0, Some(log_id(1, 1, 10)));
    let reader2 = sm2.reader();
    assert_eq!(reader2.get("stale").unwrap(), None);
    assert_eq!(reader2.scan("k", 100).unwrap(), reader.scan("k", 100).unwrap());
    let current = sm2.get_current_snapshot().await.unwrap().unwrap();
    assert_eq!(current.meta, snap.meta);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_and_state_survive_a_reopen_in_place() {
    log_and_state_survive(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_and_state_survive_a_reopen_out_of_place() {
    log_and_state_survive(true).await;
}

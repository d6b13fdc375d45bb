//! The flash cost of the Raft log against the state machine's: one node's storage driven
//! directly (no network), the log in one out-of-place database and the state machine in
//! another, each on its own emulated SSD, so each gets its own DB, SSD and total WAF.
//!
//! ```sh
//! cargo run -p wafer-raft --example log_flash -- [ENTRIES] [KEYS] [SNAPSHOT_EVERY]
//! ```
//!
//! Each entry puts a 100-byte value under one of KEYS keys (uniform); entries are appended
//! in batches of 64 (synced), applied (synced), and every SNAPSHOT_EVERY entries a snapshot is
//! built and the log purged to 1,000 entries behind it (the server's defaults). WAL bytes go
//! to a device of their own, outside the WAF figures, as everywhere in the project.
use openraft::storage::{RaftLogStorage, RaftLogStorageExt, RaftStateMachine};
use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId, RaftSnapshotBuilder};
use std::sync::Arc;
use wafer::device::{Device, EmuDevice, MemoryDevice};
use wafer::{Db, Options};
use wafer_raft::{LogStore, Request, StateMachine, TypeConfig};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const BATCH_ENTRIES: u64 = 64;
const KEEP_LOG_ENTRIES: u64 = 1000;

/// An out-of-place database on a fresh emulated SSD (the `tiny` preset grown to 128 MiB of
/// flash, 25% over-provisioned), its WAL in memory.
fn open_db() -> Result<Db, BoxError> {
    let mut config = flashemu::Config::preset("tiny")?;
    config.set("geometry.blocks_per_chip", "512")?;
    let data: Arc<dyn Device> = Arc::new(EmuDevice::new(config)?);
    let wal: Arc<dyn Device> = Arc::new(MemoryDevice::new(64 << 20));
    let mut options = Options {
        file_capacity_bytes: data.capacity_bytes(),
        wal_capacity_bytes: 64 << 20,
        checkpoint_log_bytes: 8 << 20,
        buffer_pool_bytes: 2 << 20,
        ..Options::production()
    }
    .out_of_place()
    .with_blobs(2048);
    options.data_offset_bytes = wafer::device::BLOCK_BYTES;
    Ok(Db::open_on_devices(data, wal, options)?)
}

fn entry(index: u64, key: u64) -> Entry<TypeConfig> {
    let request = Request::Put { key: format!("key{key:08}"), value: "v".repeat(100) };
    let log_id = LogId::new(CommittedLeaderId::new(1, 1), index);
    Entry { log_id, payload: EntryPayload::Normal(request) }
}

/// xorshift64: a uniform key stream with no dependency.
fn next_key(state: &mut u64, keys: u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state % keys
}

async fn drive(
    log: &mut LogStore,
    sm: &mut StateMachine,
    entries: u64,
    keys: u64,
    snapshot_every: u64,
) -> Result<(), BoxError> {
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut index = 1;
    while index <= entries {
        let batch: Vec<_> =
            (index..index + BATCH_ENTRIES).map(|i| entry(i, next_key(&mut rng, keys))).collect();
        log.blocking_append(batch.clone()).await?;
        sm.apply(batch).await?;
        index += BATCH_ENTRIES;
        let last = index - 1;
        if last % snapshot_every < BATCH_ENTRIES {
            let snap = sm.get_snapshot_builder().await.build_snapshot().await?;
            let upto = snap.meta.last_log_id.map_or(0, |id| id.index);
            if upto > KEEP_LOG_ENTRIES {
                let purge = LogId::new(CommittedLeaderId::new(1, 1), upto - KEEP_LOG_ENTRIES);
                log.purge(purge).await?;
            }
        }
    }
    Ok(())
}

/// One database's row: user, DB-issued and flash bytes, and the three WAFs.
fn row(name: &str, db: &Db) -> String {
    let stats = db.stats();
    let user = stats.logical.user();
    let (issued, flash) = stats.flash.map_or((0, 0), |c| (c.host_write_bytes, c.flash_bytes()));
    let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let mib = |b: u64| b as f64 / f64::from(1u32 << 20);
    format!(
        "| {name} | {:.1} | {:.1} | {:.1} | {:.2} | {:.2} | {:.2} |",
        mib(user),
        mib(issued),
        mib(flash),
        ratio(issued, user),
        ratio(flash, issued),
        ratio(flash, user)
    )
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), BoxError> {
    let arg = |i: usize, default: u64| -> Result<u64, BoxError> {
        Ok(std::env::args().nth(i).map(|a| a.parse()).transpose()?.unwrap_or(default))
    };
    let (entries, keys, snapshot_every) = (arg(1, 200_000)?, arg(2, 20_000)?, arg(3, 10_000)?);
    let (log_db, sm_db) = (open_db()?, open_db()?);
    let mut log = LogStore::open(log_db.clone())?;
    let mut sm = StateMachine::open(sm_db.clone())?;
    let started = std::time::Instant::now();
    drive(&mut log, &mut sm, entries, keys, snapshot_every.max(BATCH_ENTRIES)).await?;
    println!(
        "{entries} entries, {keys} keys, snapshot every {snapshot_every}: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    println!("| store | user MiB | DB-issued MiB | flash MiB | DB WAF | SSD WAF | total WAF |");
    println!("|---|---|---|---|---|---|---|");
    println!("{}", row("log", &log_db));
    println!("{}", row("state machine", &sm_db));
    Ok(())
}

#![allow(clippy::unwrap_used)] // Tests may unwrap.
//! A three-node `wafer raft serve` cluster of real processes on loopback, a client writing
//! with acknowledgements, and SIGKILL of the leader or a follower again and again, each
//! restarted. Afterwards every acknowledged write is on every node, the nodes' state machines
//! are equal, and `wafer check` finds each node's database clean. Then a node whose data
//! directory was deleted rejoins and catches up from a snapshot (the leader's log was purged).
//!
//! Kills: 50 by default (95 s in a debug build on the 2-core machine); `WAFER_RAFT_KILLS=N`
//! runs N, e.g. a dozen (about 25 s) while working on the server.
//! `WAFER_RAFT_WRITE_MODE=out-of-place` runs the nodes' databases out of place.
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wafer_raft::client::Client;
use wafer_raft::local::{ClusterSpec, LocalCluster};
use wafer_raft::NodeId;

const KILLS_DEFAULT: usize = 50;
const KILLS_ENV: &str = "WAFER_RAFT_KILLS";
const WRITE_MODE_ENV: &str = "WAFER_RAFT_WRITE_MODE";
/// Generous: elections and restarts of debug builds on a loaded 2-core machine.
const PROGRESS_WAIT: Duration = Duration::from_secs(90);
/// Writes acknowledged after each kill (and each restart) before the next kill.
const WRITES_BETWEEN: usize = 5;

fn kills() -> usize {
    std::env::var(KILLS_ENV).ok().and_then(|v| v.parse().ok()).unwrap_or(KILLS_DEFAULT)
}

/// Snapshots every 100 entries and 20 kept behind each: the log is purged often, so a node
/// far behind (or wiped) needs a snapshot. Short elections keep the many kills quick.
fn serve_args() -> Vec<String> {
    let mode = std::env::var(WRITE_MODE_ENV).unwrap_or_else(|_| "in-place".into());
    let args = ["--election-timeout-ms", "600", "--snapshot-every", "100", "--keep-log", "20"];
    let mut args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    args.extend(["--write-mode".into(), mode]);
    args
}

/// Writes `w{i}` = `v{i}` one after another until told to stop; keeps the acknowledged `i`s.
async fn writer(client: Client, stop: Arc<AtomicBool>, acked: Arc<Mutex<Vec<u64>>>) {
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        if client.put(&format!("w{i:07}"), &format!("v{i}")).await.is_ok() {
            acked.lock().unwrap().push(i);
        }
        i += 1;
    }
}

fn acked_count(acked: &Mutex<Vec<u64>>) -> usize {
    acked.lock().unwrap().len()
}

/// Waits until `more` writes beyond `from` are acknowledged.
async fn wait_progress(acked: &Mutex<Vec<u64>>, from: usize, more: usize, what: &str) {
    let start = Instant::now();
    while acked_count(acked) < from + more {
        assert!(start.elapsed() < PROGRESS_WAIT, "no acknowledged writes {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The leader as the running nodes see it (the first that names one).
async fn leader(cluster: &mut LocalCluster, client: &Client) -> Option<NodeId> {
    for id in cluster.ids() {
        if !cluster.is_running(id) {
            continue;
        }
        let addr = cluster.addr(id).unwrap().to_owned();
        if let Ok(Some(leader)) = client.metrics(&addr).await.map(|m| m.current_leader) {
            return Some(leader);
        }
    }
    None
}

/// Waits until node `id` answers HTTP.
async fn wait_up(cluster: &LocalCluster, client: &Client, id: NodeId) {
    let addr = cluster.addr(id).unwrap().to_owned();
    let start = Instant::now();
    while client.metrics(&addr).await.is_err() {
        assert!(start.elapsed() < PROGRESS_WAIT, "node {id} did not come back up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Kill `k`: the leader on even kills, a follower (in turn) on odd ones.
async fn victim(cluster: &mut LocalCluster, client: &Client, k: usize) -> NodeId {
    let leader = leader(cluster, client).await;
    let followers: Vec<NodeId> =
        cluster.ids().into_iter().filter(|&id| Some(id) != leader).collect();
    match leader {
        Some(leader) if k & 1 == 0 => leader,
        _ => followers[k / 2 % followers.len()],
    }
}

type Pairs = Vec<(String, String)>;

/// Waits until every node's state machine holds the same pairs; returns them.
async fn converged(cluster: &LocalCluster, client: &Client) -> Pairs {
    let start = Instant::now();
    loop {
        let mut scans: Vec<Pairs> = Vec::new();
        for addr in cluster.addrs() {
            scans.push(client.scan_local(&addr, usize::MAX >> 1).await.unwrap_or_default());
        }
        if !scans[0].is_empty() && scans.iter().all(|s| *s == scans[0]) {
            return scans.swap_remove(0);
        }
        let lens: Vec<usize> = scans.iter().map(Vec::len).collect();
        assert!(start.elapsed() < PROGRESS_WAIT, "state machines differ: {lens:?} pairs");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Kills and restarts nodes `kills` times while the writer runs; returns what was acked.
async fn kill_cycles(cluster: &mut LocalCluster, client: &Client, kills: usize) -> Vec<u64> {
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(Vec::new()));
    let task = tokio::spawn(writer(client.clone(), stop.clone(), acked.clone()));
    wait_progress(&acked, 0, WRITES_BETWEEN, "before the first kill").await;
    for k in 0..kills {
        let id = victim(cluster, client, k).await;
        let before = acked_count(&acked);
        cluster.kill(id).unwrap();
        wait_progress(&acked, before, WRITES_BETWEEN, &format!("after kill {k} (node {id})")).await;
        cluster.restart(id, true).unwrap();
        wait_up(cluster, client, id).await;
        let now = acked_count(&acked);
        wait_progress(&acked, now, WRITES_BETWEEN, &format!("after restart {k}")).await;
    }
    stop.store(true, Ordering::Relaxed);
    task.await.unwrap();
    let acked = acked.lock().unwrap().clone();
    acked
}

fn assert_has_acked(pairs: &Pairs, acked: &[u64]) {
    let map: BTreeMap<&str, &str> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    for i in acked {
        let key = format!("w{i:07}");
        assert_eq!(map.get(key.as_str()).copied(), Some(format!("v{i}").as_str()), "{key}");
    }
}

/// A follower's data directory is deleted while it is down, and the cluster writes enough for
/// the leader to snapshot and purge past everything the follower had; restarted without
/// `--peers` (as a node that lost its data must), it catches up from the leader's snapshot.
async fn wiped_node_catches_up(cluster: &mut LocalCluster, client: &Client) -> Pairs {
    let leader = leader(cluster, client).await.expect("a leader");
    let id = cluster.ids().into_iter().find(|&id| id != leader).unwrap();
    cluster.kill(id).unwrap();
    std::fs::remove_dir_all(cluster.node_dir(id)).unwrap();
    for i in 0..250 {
        client.put(&format!("x{i:04}"), "after the wipe").await.unwrap();
    }
    let leader_addr = cluster.addr(leader).unwrap().to_owned();
    let purged = client.metrics(&leader_addr).await.unwrap().purged.map(|p| p.index);
    assert!(purged.unwrap_or(0) > 0, "the leader's log was not purged: {purged:?}");
    cluster.restart(id, false).unwrap();
    let pairs = converged(cluster, client).await;
    let metrics = client.metrics(cluster.addr(id).unwrap()).await.unwrap();
    assert!(metrics.snapshot.is_some(), "node {id} caught up without a snapshot");
    pairs
}

/// `wafer check` on every node's database, after a clean stop.
fn check_databases(cluster: &LocalCluster) {
    for id in cluster.ids() {
        let db = cluster.node_dir(id).join("raft.db");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_wafer"))
            .arg("check")
            .arg(&db)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "wafer check {}: {text}", db.display());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_kills_and_a_wiped_node_rejoins() {
    let dir = std::env::temp_dir().join(format!("wafer-raft-kill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let exe = env!("CARGO_BIN_EXE_wafer").into();
    let spec = ClusterSpec { exe, dir: dir.clone(), nodes: 3, serve_args: serve_args() };
    let mut cluster = LocalCluster::start(spec).unwrap();
    eprintln!("cluster in {} (node logs nN.log)", dir.display());
    // Each try waits long enough for a write queued behind an election; each write as
    // long as several.
    let client = cluster.client(Duration::from_secs(5), Duration::from_secs(60)).unwrap();
    let kills = kills();
    let acked = kill_cycles(&mut cluster, &client, kills).await;
    let pairs = converged(&cluster, &client).await;
    assert_has_acked(&pairs, &acked);
    eprintln!(
        "{kills} kills: {} writes acknowledged, {} pairs on each node",
        acked.len(),
        pairs.len()
    );

    let pairs = wiped_node_catches_up(&mut cluster, &client).await;
    assert_has_acked(&pairs, &acked);
    assert_eq!(pairs.iter().filter(|(k, _)| k.starts_with('x')).count(), 250);

    cluster.stop_all(Duration::from_secs(30)).unwrap();
    check_databases(&cluster);
    drop(cluster);
    let _ = std::fs::remove_dir_all(&dir);
}

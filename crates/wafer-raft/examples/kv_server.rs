//! A replicated key-value service: one node of it, as `wafer raft serve` runs it (both are
//! [`wafer_raft::server`]), on loopback.
//!
//! ```sh
//! cargo run -p wafer-raft --example kv_server -- --id 1 --addr 127.0.0.1:21001 --dir /tmp/n1
//! cargo run -p wafer-raft --example kv_server -- --id 2 --addr 127.0.0.1:21002 --dir /tmp/n2
//! curl -XPOST 127.0.0.1:21001/cluster/init -H 'content-type: application/json' \
//!      -d '{"1":"127.0.0.1:21001"}'
//! curl -XPOST 127.0.0.1:21001/cluster/learners -H 'content-type: application/json' \
//!      -d '{"id":2,"addr":"127.0.0.1:21002"}'
//! curl -XPOST 127.0.0.1:21001/cluster/voters -H 'content-type: application/json' -d '[1,2]'
//! curl -XPUT 127.0.0.1:21001/kv/a -d 1
//! curl 127.0.0.1:21001/kv/a            # through the leader: linearizable
//! ```
use wafer_raft::server::{Server, ServerConfig};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// `--id N --addr HOST:PORT --dir DIR`.
fn parse_args() -> Result<(ServerConfig, String), BoxError> {
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
    Ok((ServerConfig::new(id.ok_or(usage)?, dir.ok_or(usage)?), addr.ok_or(usage)?))
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let (config, addr) = parse_args()?;
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let server = Server::start(&config, listener).await?;
    println!("node {} serving on {addr}, data in {}", config.id, config.dir.display());
    tokio::signal::ctrl_c().await?;
    server.shutdown().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Tests may unwrap.
    use super::*;
    use std::collections::BTreeMap;
    use std::time::{Duration, Instant};
    use wafer_raft::client::Client;

    /// Three nodes in this process: one initialises, two join as learners and are promoted, a
    /// write to the leader reaches both followers' state machines and reads back through it;
    /// then the third node is removed from the cluster.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_reaches_every_node() {
        let dir = std::env::temp_dir().join(format!("wafer-raft-kv-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut nodes = Vec::new();
        for id in 1..=3u64 {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let config = ServerConfig::new(id, dir.join(id.to_string()));
            nodes.push(Server::start(&config, listener).await.unwrap());
        }
        let addrs: Vec<String> = nodes.iter().map(|n| n.addr().to_string()).collect();
        let (try_s, total) = (Duration::from_secs(10), Duration::from_secs(60));
        let c = Client::new(addrs.clone(), try_s, total).unwrap();
        c.init(&addrs[0], &BTreeMap::from([(1u64, addrs[0].clone())])).await.unwrap();
        nodes[0].raft().wait(Some(total)).current_leader(1, "").await.unwrap();
        for id in 2..=3u64 {
            c.add_learner(id, &addrs[id as usize - 1]).await.unwrap();
        }
        c.set_voters(&[1, 2, 3]).await.unwrap();
        c.put("greeting", "hello").await.unwrap();
        assert_eq!(c.get("greeting").await.unwrap().as_deref(), Some("hello"));
        let deadline = Instant::now() + total;
        for node in &nodes[1..] {
            while node.reader().get("greeting").unwrap().as_deref() != Some(&b"hello"[..]) {
                assert!(Instant::now() < deadline, "the write did not reach a follower");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        c.remove_node(3).await.unwrap();
        let metrics = c.metrics(&addrs[0]).await.unwrap();
        let members: Vec<u64> = metrics.membership_config.nodes().map(|(id, _)| *id).collect();
        assert_eq!(members, vec![1, 2]);
        for node in nodes {
            node.shutdown().await.unwrap();
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

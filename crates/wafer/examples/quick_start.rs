//! Open a database, write and read across trees, reopen, and export its figures.
//! `cargo run -p wafer --example quick_start`
use wafer::{Db, Durability, Options, WriteBatch};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("wafer-quick-start-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("app.db");
    // A small file; `Options::production()` is the default for real data.
    let options = Options::production().with_durability(Durability::Sync);
    let options = Options { file_capacity_bytes: 256 << 20, ..options };

    let db = Db::open(&path, options.clone())?;
    let orders = db.tree("orders")?;
    orders.put(b"order-1", b"2 apples")?;
    // One atomic batch across two trees.
    let mut batch = WriteBatch::new();
    batch.put("orders", b"order-2", b"3 pears").put("customers", b"ada", b"order-2");
    db.write(&batch)?;
    for kv in orders.prefix(b"order-") {
        let (key, value) = kv?;
        println!("{} = {}", String::from_utf8_lossy(&key), String::from_utf8_lossy(&value));
    }
    db.close()?;

    // While it is open, no other process (or second open here) may write it.
    let db = Db::open(&path, options.clone())?;
    assert!(matches!(
        Db::open(&path, options),
        Err(wafer::DbOpenError::Refused(wafer::OpenError::Locked { .. }))
    ));
    assert_eq!(db.tree("customers")?.get(b"ada")?.as_deref(), Some(&b"order-2"[..]));
    // The figures an application exports: JSON, or Prometheus text for its /metrics handler.
    let stats = db.stats();
    println!("pool hits: {}", stats.to_json()["pool"]["hits"]);
    let lines = stats.prometheus_text().lines().filter(|l| !l.starts_with('#')).count();
    println!("{lines} Prometheus samples");
    db.close()?;
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

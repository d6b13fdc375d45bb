//! Values out of line (blobs): a 64 MiB value written once, streamed back with `std::io::Read`
//! without holding it whole, and the database moved to the other write mode by dump and load.
//! `cargo run -p wafer --release --example large_values`
use std::io::Read;
use wafer::{Db, Options};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("wafer-large-values-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    // Values of 1 KiB and more go to the blob space; the leaf keeps a reference of about 19 bytes.
    let options =
        Options { file_capacity_bytes: 1 << 30, ..Options::production() }.with_blobs(1024);
    let db = Db::open(dir.join("media.db"), options.clone())?;
    let video: Vec<u8> = (0..64u32 << 20).map(|i| (i / 4096) as u8).collect();
    db.tree("videos")?.put(b"intro", &video)?;

    let mut reader = db.tree("videos")?.get_reader(b"intro")?.ok_or("the value is there")?;
    let (mut total, mut chunk) = (0usize, vec![0u8; 1 << 20]);
    loop {
        let n = reader.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        assert_eq!(chunk[..n], video[total..total + n]);
        total += n;
    }
    println!("streamed {} MiB", total >> 20);

    // The same trees in an out-of-place database: a dump, then a load.
    let mut stream = Vec::new();
    let totals = wafer::dump::dump(&db, &mut stream)?;
    let copy = Db::open(dir.join("copy.db"), options.out_of_place())?;
    wafer::dump::load(&stream[..], &copy)?;
    println!("moved {} trees, {} entries", totals.trees, totals.entries);
    assert_eq!(copy.tree("videos")?.get(b"intro")?.as_deref(), Some(&video[..]));
    drop(reader);
    db.close()?;
    copy.close()?;
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

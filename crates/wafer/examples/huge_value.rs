//! One value of N MiB (default 1024) out of line, in each write mode: written with one put,
//! read back as a stream and compared chunk by chunk, then again after a reopen.
//! `cargo run --release -p wafer --example huge_value -- 1024`
use std::io::Read;
use wafer::{Db, Options};

/// The value's byte at `offset`: varied enough that LZ4 cannot shrink it to nothing.
fn byte_at(offset: u64) -> u8 {
    (offset.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8 ^ (offset >> 12) as u8
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mib: u64 = std::env::args().nth(1).map_or(Ok(1024), |a| a.parse())?;
    let len = mib << 20;
    let value: Vec<u8> = (0..len).map(byte_at).collect();
    for out_of_place in [false, true] {
        let dir =
            std::env::temp_dir().join(format!("wafer-huge-{}-{out_of_place}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let mut options = Options::production().with_blobs(4096);
        options.file_capacity_bytes = 3 * len + (1 << 30);
        if out_of_place {
            options = options.out_of_place();
        }
        let started = std::time::Instant::now();
        let db = Db::open(dir.join("huge.db"), options.clone())?;
        db.tree("t")?.put(b"huge", &value)?;
        db.close()?;
        let wrote_s = started.elapsed().as_secs_f64();
        let db = Db::open(dir.join("huge.db"), options)?;
        let mut reader = db.tree("t")?.get_reader(b"huge")?.ok_or("the value is there")?;
        let (mut at, mut chunk) = (0u64, vec![0u8; 4 << 20]);
        loop {
            let n = reader.read(&mut chunk)?;
            if n == 0 {
                break;
            }
            if chunk[..n] != value[at as usize..at as usize + n] {
                return Err(format!("bytes differ in {at}..{}", at + n as u64).into());
            }
            at += n as u64;
        }
        assert_eq!(at, len, "the stream ends at the value's end");
        assert!(db.check()?.is_clean());
        println!(
            "{} MiB, {}: written and closed in {wrote_s:.1} s, streamed back after a reopen in {:.1} s",
            mib,
            if out_of_place { "out of place" } else { "in place" },
            started.elapsed().as_secs_f64() - wrote_s
        );
        drop(reader);
        db.close()?;
        std::fs::remove_dir_all(&dir)?;
    }
    Ok(())
}

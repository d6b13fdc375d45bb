//! Page compression speed (000 sec. 3.1): LZ4 and ZSTD levels 1 and 3 on 4 KiB pages that hold
//! YCSB-like records (a 23-byte key, then 1000-byte values whose first 39% is random and the
//! rest one repeated byte, as `wafer-bench`'s value generator makes them; LZ4 stores such values
//! at about 0.42), filled to 2/3 as after random inserts. Rates are per CPU-second of one core.
//! Run: `cargo bench -p wafer --bench codec`.
#![allow(clippy::unwrap_used)] // A bench binary: failing loudly is the right response.
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use wafer::internals::oop::codec::{decode, encode, Compression};
use wafer::internals::page::PAGE_SIZE;
use wafer_testkit::bench::ThreadCpuTime;

/// Pages of records, 2/3 full, the rest zeros (a B+tree leaf's free space).
fn pages(count: usize) -> Vec<Box<[u8; PAGE_SIZE]>> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as u8
    };
    (0..count)
        .map(|_| {
            let mut p = Box::new([0u8; PAGE_SIZE]);
            let used = PAGE_SIZE * 2 / 3;
            for (i, b) in p[..used].iter_mut().enumerate() {
                let in_record = i % 1023;
                *b = if in_record < 23 || in_record - 23 < 390 { next() } else { 7 };
            }
            p
        })
        .collect()
}

fn codecs(c: &mut Criterion<ThreadCpuTime>) {
    let input = pages(256);
    let mut group = c.benchmark_group("codec");
    group.throughput(Throughput::Bytes((input.len() * PAGE_SIZE) as u64));
    for codec in [Compression::Lz4, Compression::Zstd { level: 1 }, Compression::Zstd { level: 3 }]
    {
        let stored: Vec<Vec<u8>> = input.iter().map(|p| encode(codec, p).unwrap()).collect();
        let ratio =
            stored.iter().map(Vec::len).sum::<usize>() as f64 / (input.len() * PAGE_SIZE) as f64;
        eprintln!("{}: stored at {ratio:.3} of the page bytes", codec.name());
        group.bench_function(format!("compress/{}", codec.name()), |b| {
            b.iter(|| input.iter().map(|p| encode(codec, p).map_or(0, |s| s.len())).sum::<usize>())
        });
        let mut out = Box::new([0u8; PAGE_SIZE]);
        group.bench_function(format!("decompress/{}", codec.name()), |b| {
            b.iter(|| {
                for s in &stored {
                    decode(s, &mut out).unwrap();
                }
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(ThreadCpuTime);
    targets = codecs
}
criterion_main!(benches);

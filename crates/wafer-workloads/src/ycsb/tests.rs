//! Checks of the YCSB generators against the workload definitions.

use std::sync::Arc;

use super::*;
use crate::dist::{fnvhash64, Distribution, Rng};
use crate::op_kind::OpKind;

fn generator(spec: &WorkloadSpec) -> (WorkloadGenerator, Arc<InsertSequence>) {
    let inserts = Arc::new(InsertSequence::new(spec.record_count));
    (WorkloadGenerator::new(spec, inserts.clone()).unwrap(), inserts)
}

/// Runs `draws` operations (acknowledging inserts at once, as a single-threaded runner does)
/// and returns the fraction of each kind, in OpKind::YCSB order.
fn observed_mix(spec: &WorkloadSpec, seed: u64, draws: u32) -> [f64; 5] {
    let (mut g, inserts) = generator(spec);
    let mut rng = Rng::new(seed);
    let mut counts = [0u32; 5];
    for _ in 0..draws {
        let op = g.next_op(&mut rng);
        let i = OpKind::YCSB.iter().position(|k| *k == op.kind()).unwrap();
        counts[i] += 1;
        if let Operation::Insert { keynum, .. } = op {
            inserts.acknowledge(keynum).unwrap();
        }
    }
    counts.map(|c| f64::from(c) / f64::from(draws))
}

#[test]
fn mixes_match_workload_files() {
    let seed = 2024;
    let draws = 100_000;
    for w in Workload::ALL {
        let spec = w.spec(10_000);
        let got = observed_mix(&spec, seed, draws);
        let want = spec.mix.as_array();
        for (i, (g, e)) in got.iter().zip(want).enumerate() {
            // 3 sigma of a binomial at p = 0.5 over 100k draws is 0.0047.
            assert!((g - e).abs() < 0.006, "seed {seed} {w:?} kind {i}: {g} vs {e}");
        }
    }
}

#[test]
fn deterministic_from_seed() {
    let spec = Workload::A.spec(5000);
    let run = |seed| {
        let (mut g, _) = generator(&spec);
        let mut rng = Rng::for_thread(seed, 3);
        (0..1000).map(|_| g.next_op(&mut rng)).collect::<Vec<_>>()
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7), run(8));
}

#[test]
fn requests_only_name_existing_keys_and_are_skewed() {
    let seed = 99;
    let n = 10_000u64;
    let spec = Workload::C.spec(n);
    let (mut g, _) = generator(&spec);
    let mut rng = Rng::new(seed);
    let valid: std::collections::HashMap<Vec<u8>, u64> =
        (0..n).map(|k| (spec.key_format.key(k).as_bytes().to_vec(), k)).collect();
    let mut counts = vec![0u32; n as usize];
    let draws = 200_000;
    for _ in 0..draws {
        let Operation::Read { key } = g.next_op(&mut rng) else {
            panic!("workload C only reads");
        };
        let k = valid.get(key.as_bytes()).copied();
        let k = k.unwrap_or_else(|| panic!("seed {seed}: {key:?} was never loaded"));
        counts[k as usize] += 1;
    }
    // YCSB's hottest key: rank 0 of the 10^10 zipfian hashed into the (n + 1)-item space.
    let hottest = fnvhash64(0) % spec.request_key_space();
    let p = f64::from(counts[hottest as usize]) / f64::from(draws);
    assert!(p > 0.03, "seed {seed}: hottest key share {p}");
}

#[test]
fn workload_d_inserts_after_loaded_range_and_reads_latest() {
    let seed = 5;
    let n = 1000u64;
    let spec = Workload::D.spec(n);
    let (mut g, inserts) = generator(&spec);
    let mut rng = Rng::new(seed);
    let mut next_insert = n;
    let mut inserted: Vec<Vec<u8>> = Vec::new();
    let mut reads_of_new = 0u32;
    let mut reads = 0u32;
    for _ in 0..40_000 {
        match g.next_op(&mut rng) {
            Operation::Insert { key, keynum, .. } => {
                assert_eq!(keynum, next_insert, "seed {seed}: inserts go in counter order");
                assert_eq!(key, spec.key_format.key(keynum));
                next_insert += 1;
                inserts.acknowledge(keynum).unwrap();
                inserted.push(key.as_bytes().to_vec());
            }
            Operation::Read { key } => {
                reads += 1;
                // The 20 most recent inserts.
                let recent = &inserted[inserted.len().saturating_sub(20)..];
                if recent.iter().any(|k| k.as_slice() == key.as_bytes()) {
                    reads_of_new += 1;
                }
            }
            op => panic!("workload D does not {op:?}"),
        }
    }
    assert!(next_insert > n + 1500, "seed {seed}: {next_insert}");
    // 20 of ~3000 keys get zeta(20)/zeta(3000) ~ 0.45 of reads under latest (uniform: 0.7%).
    let frac = f64::from(reads_of_new) / f64::from(reads);
    assert!(frac > 0.3, "seed {seed}: reads of the 20 newest keys {frac}");
}

#[test]
fn unacknowledged_inserts_are_not_read() {
    let seed = 12;
    let spec = Workload::D.spec(100);
    let (mut g, _inserts) = generator(&spec);
    let mut rng = Rng::new(seed);
    let loaded: std::collections::HashSet<Vec<u8>> =
        (0..100).map(|k| spec.key_format.key(k).as_bytes().to_vec()).collect();
    for _ in 0..5000 {
        if let Operation::Read { key } = g.next_op(&mut rng) {
            assert!(loaded.contains(key.as_bytes()), "seed {seed}: read of unacked {key:?}");
        }
    }
}

#[test]
fn workload_e_scan_lengths_uniform_1_to_100() {
    let seed = 31;
    let spec = Workload::E.spec(2000);
    let (mut g, inserts) = generator(&spec);
    let mut rng = Rng::new(seed);
    let mut hist = [0u32; 101];
    let mut scans = 0u32;
    for _ in 0..100_000 {
        match g.next_op(&mut rng) {
            Operation::Scan { len, .. } => {
                assert!((1..=100).contains(&len), "seed {seed}: {len}");
                hist[len as usize] += 1;
                scans += 1;
            }
            Operation::Insert { keynum, .. } => inserts.acknowledge(keynum).unwrap(),
            op => panic!("workload E does not {op:?}"),
        }
    }
    let expect = f64::from(scans) / 100.0;
    for (len, c) in hist.iter().enumerate().skip(1) {
        let rel = (f64::from(*c) - expect).abs() / expect;
        assert!(rel < 0.1, "seed {seed}: length {len} count {c} expected {expect}");
    }
}

#[test]
fn overrides_apply() {
    let mut spec = Workload::A.spec(1000);
    spec.request_distribution =
        Distribution::HotCold { hot_ops_fraction: 0.9, hot_data_fraction: 0.1 };
    spec.value_size_bytes = 4000;
    let (mut g, _) = generator(&spec);
    let mut rng = Rng::new(1);
    let hot: std::collections::HashSet<Vec<u8>> =
        (0..100).map(|k| spec.key_format.key(k).as_bytes().to_vec()).collect();
    let mut hits = 0;
    let draws = 20_000;
    for _ in 0..draws {
        let op = g.next_op(&mut rng);
        let key = match op {
            Operation::Read { key } => key,
            Operation::Update { key, value } => {
                assert_eq!(value.len_bytes, 4000);
                key
            }
            op => panic!("{op:?}"),
        };
        hits += u32::from(hot.contains(key.as_bytes()));
    }
    let frac = f64::from(hits) / f64::from(draws);
    assert!((frac - 0.9).abs() < 0.01, "hot fraction {frac}");
}

#[test]
fn load_covers_every_key_once() {
    let spec = Workload::A.spec(1001);
    let mut seen = std::collections::HashSet::new();
    let mut rng = Rng::new(0);
    for t in 0..3 {
        let mut l = LoadGenerator::new(&spec, t, 3).unwrap();
        for _ in 0..10_000 {
            let Some(op) = l.next_op(&mut rng) else { break };
            let Operation::Insert { keynum, .. } = op else { panic!() };
            assert!(seen.insert(keynum));
        }
    }
    assert_eq!(seen.len(), 1001);
}

/// Generator speed in this build profile. Run:
/// `cargo test -p wafer-workloads --release ycsb::tests::throughput -- --ignored --nocapture`
/// (the histogram's is `metrics::histogram::tests::record_throughput` in wafer-harness)
#[test]
#[ignore = "measurement, prints figures"]
fn throughput() {
    use crate::values::ValueGenerator;
    use std::time::Instant;
    for w in Workload::ALL {
        let spec = w.spec(1_000_000);
        let (mut g, inserts) = generator(&spec);
        let mut rng = Rng::new(1);
        let n = 2_000_000u32;
        let t = Instant::now();
        let mut sink = 0u64;
        for _ in 0..n {
            let op = g.next_op(&mut rng);
            if let Operation::Insert { keynum, .. } = op {
                inserts.acknowledge(keynum).unwrap();
            }
            sink = sink.wrapping_add(op.write_bytes());
        }
        let ns = t.elapsed().as_nanos() as f64 / f64::from(n);
        println!("{}: {ns:.1} ns/op ({sink})", w.name());
    }
    let vg = ValueGenerator::new(0.412).unwrap();
    let mut buf = vec![0u8; 1000];
    let t = Instant::now();
    let n = 1_000_000u32;
    for i in 0..n {
        vg.fill(&crate::values::ValueSpec { seed: u64::from(i), len_bytes: 1000 }, &mut buf);
    }
    let ns = t.elapsed().as_nanos() as f64 / f64::from(n);
    println!("value fill 1000 B at ratio 0.412: {ns:.1} ns/value");
}

/// Writes 4 KiB pages of values at several ratios to $WAFER_VALUES_DIR for checking with the
/// lz4 CLI (see the report for the figures): `WAFER_VALUES_DIR=/tmp/v cargo test -p
/// wafer-workloads ycsb::tests::dump_value_pages -- --ignored`
#[test]
#[ignore = "writes files for an external compressor"]
fn dump_value_pages() {
    use crate::values::{ValueGenerator, ValueSpec};
    let Some(dir) = std::env::var_os("WAFER_VALUES_DIR") else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    std::fs::create_dir_all(&dir).unwrap();
    let format = KeyFormat::default();
    for ratio in [0.0, 0.12, 0.39, 0.47, 1.0] {
        let g = ValueGenerator::new(ratio).unwrap();
        let mut pages = Vec::new();
        let mut keynum = 0u64;
        // 256 pages of 4 KiB: values only, and key + value records.
        for with_keys in [false, true] {
            for _ in 0..256 {
                let mut page = Vec::with_capacity(4096);
                while page.len() < 4096 {
                    if with_keys {
                        page.extend_from_slice(format.key(keynum).as_bytes());
                    }
                    page.extend(g.value(&ValueSpec { seed: keynum, len_bytes: 1000 }));
                    keynum += 1;
                }
                page.truncate(4096);
                pages.push((with_keys, page));
            }
        }
        for (i, (with_keys, page)) in pages.iter().enumerate() {
            let name = format!("r{ratio}_{}_{i:03}.page", if *with_keys { "kv" } else { "v" });
            std::fs::write(dir.join(name), page).unwrap();
        }
    }
}

#[test]
fn zipfian_scan_lengths_favour_short_scans() {
    let seed = 64;
    let mut spec = Workload::E.spec(1000);
    spec.min_scan_length = 5;
    spec.max_scan_length = 50;
    spec.scan_length_distribution = ScanLengthDistribution::Zipfian;
    let (mut g, inserts) = generator(&spec);
    let mut rng = Rng::new(seed);
    let (mut shortest, mut scans) = (0u32, 0u32);
    for _ in 0..20_000 {
        match g.next_op(&mut rng) {
            Operation::Scan { len, .. } => {
                assert!((5..=50).contains(&len), "seed {seed}: {len}");
                scans += 1;
                shortest += u32::from(len == 5);
            }
            Operation::Insert { keynum, .. } => inserts.acknowledge(keynum).unwrap(),
            op => panic!("{op:?}"),
        }
    }
    // Rank 1 of a 46-item zipfian(0.99): 1/zeta(46) ~ 0.23 of scans.
    let frac = f64::from(shortest) / f64::from(scans);
    assert!((frac - 1.0 / crate::dist::zeta(46, 0.99)).abs() < 0.02, "seed {seed}: {frac}");
}

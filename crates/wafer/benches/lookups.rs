//! Instruction counts of point lookups under valgrind's callgrind (iai-callgrind): the same
//! binary and inputs give the same counts whatever else the machine runs, so a change of the
//! lookup path shows here when wall-clock benches drown in noise. The data are the speed
//! comparison's in-memory suite at a fifth of its size (same depth: root, one inner level,
//! leaves): 100,000 records of 16-byte keys (`user` + 12 digits) and 100-byte values, inserted
//! in a scrambled order, every page cached. Measured: 10,000 uniform random lookups that find
//! their key (`get_with`, the value looked at in place), and 10,000 of keys that are absent.
//!
//! Run: `cargo bench -p wafer --bench lookups` with valgrind and the runner of the library's
//! version (`cargo install iai-callgrind-runner --version 0.16.1`). Instructions per lookup =
//! the reported Ir / 10,000.
#![allow(clippy::unwrap_used)]
use std::hint::black_box;
use std::sync::Arc;

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use wafer::device::MemoryDevice;
use wafer::{Db, Options, Tree};

const RECORDS: u64 = 100_000;
const LOOKUPS: u64 = 10_000;

fn key(i: u64) -> Vec<u8> {
    format!("user{i:012}").into_bytes()
}

/// xorshift, so the bench needs no dependency for its key order.
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// The loaded database, its tree, and the keys to look up.
fn setup_present() -> (Db, Tree, Vec<Vec<u8>>) {
    let dev = Arc::new(MemoryDevice::new(256 << 20));
    let db = Db::open_on(dev, Options::production().with_buffer_pool_bytes(128 << 20)).unwrap();
    let tree = db.tree("bench").unwrap();
    let mut order: Vec<u64> = (0..RECORDS).collect();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in (1..order.len()).rev() {
        order.swap(i, (next(&mut x) % (i as u64 + 1)) as usize);
    }
    for i in order {
        tree.put(&key(i), &[i as u8; 100]).unwrap();
    }
    let keys = (0..LOOKUPS).map(|_| key(next(&mut x) % RECORDS)).collect();
    (db, tree, keys)
}

fn setup_absent() -> (Db, Tree, Vec<Vec<u8>>) {
    let (db, tree, keys) = setup_present();
    let missing = keys.iter().map(|k| [k.as_slice(), b"x"].concat()).collect();
    (db, tree, missing)
}

#[library_benchmark]
#[bench::present(setup_present())]
#[bench::absent(setup_absent())]
fn lookups((db, tree, keys): (Db, Tree, Vec<Vec<u8>>)) -> (Db, u64) {
    let mut bytes = 0u64;
    for k in &keys {
        bytes += tree.get_with(black_box(k), |v| v.len() as u64).unwrap().unwrap_or(0);
    }
    (db, bytes)
}

library_benchmark_group!(name = point_lookups; benchmarks = lookups);

main!(library_benchmark_groups = point_lookups);

#![allow(clippy::unwrap_used)] // Tests may unwrap.
//! Dump and load: every tree (empty ones too) moves between write modes, blobs on and off,
//! byte for byte; a damaged stream is refused with a typed error wherever it is damaged.
use std::collections::BTreeMap;
use std::sync::Arc;
use wafer::device::MemoryDevice;
use wafer::dump::{dump, load, DumpError};
use wafer::{Db, Options};

type Model = BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>;

fn db(options: Options) -> Db {
    Db::open_on(Arc::new(MemoryDevice::new(64 << 20)), options).unwrap()
}

/// A database of three trees (one empty), values from 0 bytes to 300 KiB, and its model.
fn filled(options: Options) -> (Db, Model) {
    let db = db(options);
    let mut model = Model::new();
    db.tree("empty").unwrap();
    model.insert("empty".into(), BTreeMap::new());
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for name in ["users", "photos"] {
        let t = db.tree(name).unwrap();
        let m = model.entry(name.into()).or_default();
        for i in 0..300u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = if i % 50 == 0 { 300 << 10 } else { (x % 2000) as usize };
            let value: Vec<u8> = (0..len).map(|j| (j as u64 ^ x) as u8).collect();
            t.put(&i.to_be_bytes(), &value).unwrap();
            m.insert(i.to_be_bytes().to_vec(), value);
        }
        // Deleted keys leave nothing in the dump.
        for i in (0..300u32).step_by(7) {
            t.delete(&i.to_be_bytes()).unwrap();
            m.remove(&i.to_be_bytes()[..]);
        }
    }
    (db, model)
}

fn contents(db: &Db) -> Model {
    let mut out = Model::new();
    for name in db.tree_names().unwrap() {
        let t = db.tree(&name).unwrap();
        out.insert(name, t.iter().map(|kv| kv.unwrap()).collect());
    }
    out
}

#[test]
fn a_dump_loads_into_every_mode_and_dumps_again_identically() {
    let (source, model) = filled(Options::test_min().with_blobs(1024));
    assert_eq!(contents(&source), model);
    let mut stream = Vec::new();
    let totals = dump(&source, &mut stream).unwrap();
    assert_eq!(totals.trees, 3);
    assert_eq!(totals.entries, model.values().map(|t| t.len() as u64).sum::<u64>());
    // Without blobs a value over a leaf's limit cannot be stored: a typed refusal.
    let err = load(&stream[..], &db(Options::test_min().out_of_place())).unwrap_err();
    assert!(matches!(err, DumpError::Db(wafer::Error::ValueTooLarge { .. })), "{err}");
    for target in
        [Options::test_min().with_blobs(4000), Options::test_min().out_of_place().with_blobs(100)]
    {
        let copy = db(target);
        assert_eq!(load(&stream[..], &copy).unwrap(), totals);
        assert_eq!(contents(&copy), model);
        assert!(copy.check().unwrap().is_clean());
        let mut again = Vec::new();
        dump(&copy, &mut again).unwrap();
        assert!(again == stream, "the same state dumps to the same bytes");
        // A second load into a database that now holds trees is refused.
        assert!(matches!(load(&stream[..], &copy), Err(DumpError::NotEmpty(_))));
    }
}

/// Every truncation and a flipped bit at spread positions: a typed error each time, never a
/// panic, and never a load that reports success.
#[test]
fn a_damaged_stream_is_refused_wherever_it_is_damaged() {
    let small = db(Options::test_min());
    let t = small.tree("t").unwrap();
    for i in 0..20u8 {
        t.put(&[i], &vec![i; usize::from(i) * 9]).unwrap();
    }
    let mut stream = Vec::new();
    dump(&small, &mut stream).unwrap();
    for cut in 0..stream.len() {
        let err = load(&stream[..cut], &db(Options::test_min())).unwrap_err();
        assert!(
            matches!(err, DumpError::NotADump | DumpError::Truncated { .. }),
            "cut at {cut}: {err}"
        );
    }
    for at in (0..stream.len()).step_by(3) {
        let mut bad = stream.clone();
        bad[at] ^= 0x10;
        let r = load(&bad[..], &db(Options::test_min()));
        assert!(r.is_err(), "a flipped bit at byte {at} loaded");
    }
    let mut long = stream.clone();
    long.push(0);
    assert!(matches!(load(&long[..], &db(Options::test_min())), Err(DumpError::Malformed { .. })));
}

//! Checks shared by the cargo-fuzz targets (`fuzz/fuzz_targets/`) and the stable
//! `tests/decoders_never_panic.rs`: each function feeds one on-disk decoder arbitrary bytes and
//! panics only when a property fails (a decoder panicking, or a round trip or model disagreeing).
//!
//! Checksummed formats are resealed before decoding where the checksum position is known, so
//! the fuzzer reaches the field checks behind the checksum instead of stopping at it. Not part
//! of the engine's API: hidden from the docs, kept here so fuzzing needs no private access.
#![allow(clippy::unwrap_used)]

use crate::buffer::{DoublewriteStore, PageStore};
use crate::device::MemoryDevice;
use crate::device::{Device, WritePurpose, BLOCK_BYTES};
use crate::durable::record;
use crate::page::{self, meta::Meta, node, PageBuf, PageKind, PAGE_SIZE};
use crate::space::{snapshot, Location, PageMap};
use crate::wal::{Durability, Wal, WalError, WalOptions};
use std::sync::Arc;

/// Bounds every loop a check runs over decoded data (a decoder that loops forever shows up as
/// a fuzzer timeout; these bound the check's own work).
const RECORDS_READ_MAX: usize = 4096;

fn page_from(data: &[u8]) -> Box<PageBuf> {
    let mut p = Box::new([0u8; PAGE_SIZE]);
    let n = data.len().min(PAGE_SIZE);
    p[..n].copy_from_slice(&data[..n]);
    p
}

/// A node page: sealed so verification reaches the structure check; a page that verifies must
/// then survive every accessor, and a leaf put/delete must leave a page that still verifies.
pub fn page_node(data: &[u8]) {
    let mut p = page_from(data);
    let pid = page::page_id(&p);
    let _ = page::verify(&p, pid); // unsealed: the checksum path
    page::seal(&mut p);
    let Ok(kind) = page::verify(&p, pid) else { return };
    if kind == PageKind::Free {
        return;
    }
    let n = node::slot_count(&p);
    let _ = (node::used_bytes(&p), node::free_bytes(&p));
    for i in 0..n {
        let k = node::key(&p, i).to_vec();
        assert_eq!(node::search(&p, &k), Ok(i), "a verified page finds its own key {i}");
        if kind == PageKind::Leaf {
            let _ = node::value(&p, i);
        } else {
            let _ = node::child(&p, i);
            let _ = node::child_at_pos(&p, node::child_pos_for(&p, &k));
            let _ = node::child_pos_below(&p, &k);
        }
    }
    let entries = node::entries(&p);
    assert_eq!(entries.len(), n);
    if kind != PageKind::Leaf {
        return;
    }
    // Mutations on the verified leaf: the key and value come from the input's tail.
    let tail = data.get(PAGE_SIZE..).unwrap_or(&[]);
    let split = tail.len() / 2;
    let key = &tail[..split.min(node::MAX_KEY_BYTES)];
    let value = &tail[split..][..(tail.len() - split).min(node::MAX_VALUE_BYTES)];
    let mut q = p.clone();
    if node::leaf_put(&mut q, key, value) {
        let i = node::search(&q, key).expect("a put key is found");
        assert_eq!(node::value(&q, i), value);
    }
    page::seal(&mut q);
    assert_eq!(page::verify(&q, pid), Ok(PageKind::Leaf), "leaf_put keeps a valid page valid");
    if let Some((k, _)) = entries.first() {
        let mut r = p.clone();
        assert!(node::leaf_delete(&mut r, k));
        node::compact(&mut r);
        page::seal(&mut r);
        assert_eq!(page::verify(&r, pid), Ok(PageKind::Leaf), "delete + compact keeps it valid");
        assert_eq!(node::slot_count(&r), n - 1);
    }
}

/// The meta page (superblock): decode after sealing; whatever decodes re-encodes to itself.
pub fn page_meta(data: &[u8]) {
    let mut p = page_from(data);
    let _ = Meta::decode(&p);
    page::seal(&mut p);
    let Ok(meta) = Meta::decode(&p) else { return };
    let mut q = Box::new([0u8; PAGE_SIZE]);
    meta.encode(&mut q);
    page::seal(&mut q);
    assert_eq!(Meta::decode(&q), Ok(meta), "meta round trip");
}

/// Redo record payloads (`durable::record`): first byte the kind, the rest the payload; every
/// decoded record re-encodes to the same payload.
pub fn redo_record(data: &[u8]) {
    let Some((&kind, payload)) = data.split_first() else { return };
    let Ok(rec) = record::decode(kind, payload) else { return };
    // A compressed record: the round trip is of the payload it decompresses to.
    let plain;
    let (kind, payload) = if kind & record::KIND_COMPRESSED != 0 {
        let Ok(p) = record::decompress(payload) else { return };
        plain = p;
        (kind & !record::KIND_COMPRESSED, &plain[..])
    } else {
        (kind, payload)
    };
    let leaf = matches!(rec, record::Record::Put { .. } | record::Record::Delete { .. });
    if leaf && payload.first() != Some(&record::LEAF_VERSION) {
        // Version 1 leaf records are read, no longer written: their round trip is by value.
        return;
    }
    let mut out = Vec::new();
    match &rec {
        record::Record::Put { pid, tree_id, key, value } => {
            let change = page::PageChange::LeafPut { tree_id: *tree_id, key, value };
            assert_eq!(record::encode_change(*pid, &change, &mut out), kind);
        }
        record::Record::Delete { pid, tree_id, key } => {
            let change = page::PageChange::LeafDelete { tree_id: *tree_id, key };
            assert_eq!(record::encode_change(*pid, &change, &mut out), kind);
        }
        record::Record::Rebuild { pid, tree_id, insert, keep } => {
            let change = page::PageChange::NodeRebuild { tree_id: *tree_id, insert, keep: *keep };
            assert_eq!(record::encode_change(*pid, &change, &mut out), kind);
        }
        record::Record::Image { pid, page } => {
            let change = page::PageChange::Image { page: &page[..] };
            assert_eq!(record::encode_change(*pid, &change, &mut out), kind);
        }
        // Earlier versions of state records are read, no longer written: their round trip is
        // by value.
        record::Record::Checkpoint(_) if payload.first() != Some(&record::STATE_VERSION) => return,
        record::Record::Commit(_) if payload.first() != Some(&record::COMMIT_VERSION) => return,
        record::Record::Commit(c) => record::encode_logged_commit(c, &mut out),
        record::Record::Checkpoint(b) => record::encode_checkpoint(&b.state, &b.extents, &mut out),
        record::Record::Abort => return,
    }
    assert_eq!(out, payload, "redo record round trip");
}

/// The catalog entry value; and the same bytes as an entry of the garbage tree (the engine's
/// other catalog-level tree), the first 8 bytes its key.
pub fn catalog_entry(data: &[u8]) {
    if let Ok((tree_id, root)) = crate::db::catalog::decode(data) {
        assert_eq!(&crate::db::catalog::encode(tree_id, root)[..], data, "catalog round trip");
    }
    let (k, v) = data.split_at(data.len().min(8));
    if let Ok((pid, tree_id)) = crate::db::garbage::decode(k, v) {
        assert_eq!(pid.to_be_bytes(), k, "garbage key round trip");
        assert_eq!(&crate::db::garbage::encode(tree_id)[..], v, "garbage value round trip");
    }
}

/// A stored value (tag, inline value or blob reference), and blob pages checked against a
/// reference: decoding never panics, and a decoded reference encodes back to the same bytes
/// (version 2; a version-1 reference decodes to one that round-trips).
pub fn blob_ref(data: &[u8]) {
    match crate::blob::decode_stored(data) {
        Ok(crate::blob::Stored::Blob(r)) => {
            if data.get(1) == Some(&2) {
                assert_eq!(&r.encode()[..], data, "blob reference round trip");
            }
            assert_eq!(
                crate::blob::decode_stored(&r.encode()),
                Ok(crate::blob::Stored::Blob(r)),
                "a decoded reference re-encodes to itself"
            );
            let _ = r.page_range();
            let mut p = [0u8; PAGE_SIZE];
            let n = data.len().min(PAGE_SIZE);
            p[..n].copy_from_slice(&data[..n]);
            for i in 0..3 {
                let _ = crate::blob::format::chunk(&p, &r, i);
            }
            let _ = crate::blob::check_page_structure(&p);
        }
        Ok(crate::blob::Stored::Inline(v)) => assert_eq!(v, &data[1..]),
        Err(_) => {}
    }
}

/// A dump stream loaded into an empty database: refused or loaded, never a panic; what loads
/// dumps again with the same totals.
pub fn dump_stream(data: &[u8]) {
    let db = crate::Db::open_on(Arc::new(MemoryDevice::new(8 << 20)), crate::Options::test_min())
        .expect("a memory device opens");
    if let Ok(totals) = crate::dump::load(data, &db) {
        let mut again = Vec::new();
        let redumped = crate::dump::dump(&db, &mut again).expect("a loaded database dumps");
        assert_eq!(redumped.trees, totals.trees, "trees are created by name once");
        assert!(redumped.entries <= totals.entries, "a key repeated in the stream is one entry");
    }
}

fn seal_crc_at_20(block: &mut [u8]) {
    let c = crc32c::crc32c(&block[..20]);
    let c = crc32c::crc32c_append(c, &[0u8; 4]);
    let c = crc32c::crc32c_append(c, &block[24..]);
    block[20..24].copy_from_slice(&c.to_le_bytes());
}

/// Input bytes as whole 4 KiB blocks (at most `max_blocks`), the last one zero-padded.
fn blocks_from(data: &[u8], max_blocks: usize) -> Vec<u8> {
    let blocks = data.len().div_ceil(BLOCK_BYTES as usize).clamp(1, max_blocks);
    let mut out = vec![0u8; blocks * BLOCK_BYTES as usize];
    let n = data.len().min(out.len());
    out[..n].copy_from_slice(&data[..n]);
    out
}

/// Out-of-place map snapshots: raw bytes (every block resealed when the first input byte is
/// odd), and a round trip of a map built from the input.
pub fn map_snapshot(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    let mut bytes = blocks_from(rest, 64);
    if mode & 1 == 1 {
        bytes.chunks_mut(BLOCK_BYTES as usize).for_each(seal_crc_at_20);
    }
    let (zones, slots) = (u32::from(mode >> 4) + 1, u32::from(mode & 0x0e) * 64 + 1);
    let _ = snapshot::decode_header(&bytes[..BLOCK_BYTES as usize]);
    let _ = snapshot::decode(&bytes, zones, slots);
    // Round trip: pairs of (pid, slot) from the input.
    let mut map = PageMap::new();
    for pair in rest.chunks_exact(4).take(2048) {
        // Spans up to 4096 page ids: several entry blocks, fast enough to fuzz.
        let pid = u64::from(u16::from_le_bytes([pair[0], pair[1]]) % 4096);
        let slot = u32::from(u16::from_le_bytes([pair[2], pair[3]])) % slots;
        map.set(pid, Location::new(slot % zones, slot, PAGE_SIZE as u16));
    }
    let encoded = snapshot::encode(&map, 7, zones, slots, None);
    let decoded = snapshot::decode(&encoded, zones, slots).expect("an encoded snapshot decodes");
    assert_eq!(decoded.map, map, "snapshot round trip");
    assert_eq!(decoded.header.lsn, 7);
}

/// Out-of-place free-page sections: raw (resealed) bytes, then a round trip.
pub fn free_pages(data: &[u8]) {
    use crate::oop::free::{synthesize, FreePages};
    let Some((&mode, rest)) = data.split_first() else { return };
    let mut bytes = blocks_from(rest, 16);
    if mode & 1 == 1 {
        bytes.chunks_mut(BLOCK_BYTES as usize).for_each(seal_crc_at_20);
    }
    let lsn = u64::from(mode >> 1);
    let _ = FreePages::decode(&bytes, lsn, u64::MAX);
    let _ = FreePages::decode(&bytes, lsn, 1 << 20);
    let mut free = FreePages::default();
    for e in rest.chunks_exact(6).take(1024) {
        let pid = u64::from(u16::from_le_bytes([e[0], e[1]])) + 1;
        let aux = u64::from(u16::from_le_bytes([e[2], e[3]]));
        free.insert(pid, synthesize(pid, aux, u64::from(e[4])));
    }
    let encoded = free.encode(lsn);
    let decoded = FreePages::decode(&encoded, lsn, 1 << 17).expect("an encoded section decodes");
    let mut a: Vec<_> = free.pids().collect();
    let mut b: Vec<_> = decoded.pids().collect();
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, b, "free-page round trip");
}

/// Out-of-place map journal records: `[kind][len][payload]` records from the input applied to
/// an empty map as recovery replays them, then the map rebuilt into a space (which checks every
/// location against the geometry).
pub fn oop_journal(data: &[u8]) {
    use crate::oop::free::FreePages;
    use crate::oop::journal;
    use crate::space::{Space, SpaceOptions};
    let mut map = PageMap::new();
    let mut free = FreePages::default();
    let pid_limit = 1 << 12;
    let mut rest = data;
    for lsn in 0..256u64 {
        let [kind, len, tail @ ..] = rest else { break };
        let len = usize::from(*len % 32).min(tail.len());
        let r = crate::wal::WalRecord {
            lsn: crate::wal::Lsn(lsn),
            kind: *kind % 8,
            payload: tail[..len].to_vec(),
        };
        rest = &tail[len..];
        let _ = journal::apply(&r, &mut map, &mut free, pid_limit);
    }
    let _ = Space::rebuild_from_map(SpaceOptions::test_min(), map);
}

/// The doublewrite area: a header block (resealed when the first byte is odd) and slots from the
/// input, then recovery over it.
pub fn doublewrite(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    let mut area = blocks_from(rest, 8);
    if mode & 1 == 1 {
        let c = crc32c::crc32c(&area[4..BLOCK_BYTES as usize]);
        area[..4].copy_from_slice(&c.to_le_bytes());
    }
    let data_offset = 8 * BLOCK_BYTES;
    let device = Arc::new(MemoryDevice::new(data_offset + 16 * BLOCK_BYTES));
    device.write_at(0, &area, WritePurpose::Doublewrite).unwrap();
    let Ok(store) = DoublewriteStore::new(device, data_offset) else { return };
    let _ = store.recover();
}

fn wal_options() -> WalOptions {
    WalOptions { recovery_lookahead_blocks: 8, ..WalOptions::test_min() }
}

const WAL_DEVICE_BLOCKS: u64 = 2 + 24;

/// WAL recovery over raw device bytes: two header blocks then log blocks, each log block's
/// checksum resealed when the first byte is odd (the headers when bit 1 is set).
pub fn wal_raw(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    let mut bytes = blocks_from(rest, WAL_DEVICE_BLOCKS as usize);
    for (i, block) in bytes.chunks_mut(BLOCK_BYTES as usize).enumerate() {
        if i < 2 && mode & 2 == 2 {
            let c = crc32c::crc32c(&block[4..80]);
            block[..4].copy_from_slice(&c.to_le_bytes());
        } else if i >= 2 && mode & 1 == 1 {
            let c = crc32c::crc32c(&block[4..]);
            block[..4].copy_from_slice(&c.to_le_bytes());
        }
    }
    let device = Arc::new(MemoryDevice::new(WAL_DEVICE_BLOCKS * BLOCK_BYTES));
    device.write_at(0, &bytes, WritePurpose::Wal).unwrap();
    drain_wal(device);
}

/// Recovers whatever the device holds; returns the records read (None when recovery failed).
fn drain_wal(device: Arc<MemoryDevice>) -> Option<Vec<(u8, Vec<u8>)>> {
    let mut recovery = Wal::open(device, wal_options()).ok()?;
    let mut out = Vec::new();
    for _ in 0..RECORDS_READ_MAX {
        match recovery.next_record() {
            Ok(Some(r)) => out.push((r.kind, r.payload)),
            Ok(None) => {
                let (wal, _report) = recovery.finish().ok()?;
                // The recovered log takes appends again (unless it is full).
                match wal.append(1, b"after recovery") {
                    Ok(lsn) => wal.commit(lsn, Durability::Sync).unwrap(),
                    Err(WalError::LogFull { .. }) => {}
                    Err(e) => panic!("append after recovery: {e}"),
                }
                return Some(out);
            }
            Err(_) => return None,
        }
    }
    panic!("recovery returned more than {RECORDS_READ_MAX} records from a tiny device");
}

/// WAL model check: records from the input are appended and committed (some spanning blocks)
/// until the small log is full, then bytes of the device are damaged as the input
/// says; recovery must return a prefix of the committed records or a typed error, never other
/// records.
pub fn wal_model(data: &[u8]) {
    let device = Arc::new(MemoryDevice::new(WAL_DEVICE_BLOCKS * BLOCK_BYTES));
    let wal = Wal::create(device.clone(), wal_options()).unwrap();
    let mut written: Vec<(u8, Vec<u8>)> = Vec::new();
    let mut rest = data;
    // Records: [kind][len u8 * 37 bytes of pattern] until a 0xff kind starts the damage list.
    while let Some((&kind, tail)) = rest.split_first() {
        if kind == 0xff || written.len() >= 64 {
            rest = tail;
            break;
        }
        let Some((&len, tail2)) = tail.split_first() else { break };
        rest = tail2;
        let payload: Vec<u8> =
            (0..usize::from(len % 200) * 37).map(|i| (i as u8).wrapping_mul(kind | 1)).collect();
        let Ok(lsn) = wal.append(kind, &payload) else { break };
        wal.commit(lsn, Durability::Sync).unwrap();
        written.push((kind, payload));
    }
    wal.close().unwrap();
    // Damage: [offset u16, scaled to the device][xor] triples.
    let damage = rest.chunks_exact(3).take(32);
    let undamaged = damage.len() == 0;
    let mut bytes = vec![0u8; (WAL_DEVICE_BLOCKS * BLOCK_BYTES) as usize];
    device.read_at(0, &mut bytes).unwrap();
    for d in damage {
        let offset = usize::from(u16::from_le_bytes([d[0], d[1]])) * 3 % bytes.len();
        bytes[offset] ^= d[2] | 1;
    }
    device.write_at(0, &bytes, WritePurpose::Wal).unwrap();
    if let Some(read) = drain_wal(device) {
        assert!(read.len() <= written.len(), "recovery invented records");
        assert_eq!(&written[..read.len()], &read[..], "recovery returned a non-prefix");
        assert!(!undamaged || read.len() == written.len(), "an undamaged log lost records");
    } else {
        assert!(!undamaged, "an undamaged log failed recovery");
    }
}

/// Valid inputs for each check (by the fuzz target's name): seeds for the fuzz corpora and the
/// starting points the stable test mutates.
pub fn valid_inputs(target: &str) -> Vec<Vec<u8>> {
    match target {
        "page_node" => {
            let mut p = Box::new([0u8; PAGE_SIZE]);
            page::format(&mut p, 5, PageKind::Leaf, 3, 0);
            for i in 0u32..40 {
                let key = format!("key{:05}", i * 7);
                assert!(node::leaf_put(&mut p, key.as_bytes(), &i.to_le_bytes().repeat(3)));
            }
            page::seal(&mut p);
            let mut inner = Box::new([0u8; PAGE_SIZE]);
            page::format(&mut inner, 6, PageKind::Inner, 3, 9);
            let entries: Vec<node::Entry> = (0u64..20)
                .map(|i| (format!("sep{i:03}").into_bytes(), node::child_value(100 + i)))
                .collect();
            node::build(&mut inner, &entries);
            page::seal(&mut inner);
            let mut leaf = p.to_vec();
            leaf.extend_from_slice(b"key00010value");
            vec![leaf, inner.to_vec()]
        }
        "page_meta" => {
            let meta = Meta {
                write_mode: 1,
                catalog_root: 1,
                high_water: 40,
                free_head: 7,
                free_count: 3,
                last_lsn: 900,
                next_tree_id: 4,
                page_capacity: 1 << 20,
                write_clock: 77,
                wal: true,
                checkpoint_lsn: 4136,
                blobs: false,
                layout_bytes: 0,
            };
            let mut p = Box::new([0u8; PAGE_SIZE]);
            meta.encode(&mut p);
            page::seal(&mut p);
            vec![p.to_vec()]
        }
        "redo_record" => {
            let mut out = Vec::new();
            let mut seeds = Vec::new();
            let put = page::PageChange::LeafPut { tree_id: 2, key: b"k1", value: b"value" };
            let kind = record::encode_change(9, &put, &mut out);
            seeds.push([&[kind][..], &out].concat());
            let del = page::PageChange::LeafDelete { tree_id: 2, key: b"k1" };
            let kind = record::encode_change(9, &del, &mut out);
            seeds.push([&[kind][..], &out].concat());
            let state = record::EngineState {
                alloc: crate::alloc::AllocState { high_water: 10, free_head: 3, free_count: 1 },
                next_tree_id: 5,
                write_clock: 99,
            };
            let extents = vec![record::ExtentOp::Take(40..41), record::ExtentOp::Give(7..9)];
            let body = record::CommitBody { state, folded: true, extents };
            record::encode_commit(&body, None, &mut out);
            seeds.push([&[record::KIND_COMMIT][..], &out].concat());
            let later = record::EngineState { write_clock: 100, ..state };
            let next = record::CommitBody { state: later, ..body.clone() };
            record::encode_commit(&next, Some(&state), &mut out);
            seeds.push([&[record::KIND_COMMIT][..], &out].concat());
            record::encode_checkpoint(&state, &body.extents, &mut out);
            seeds.push([&[record::KIND_CHECKPOINT][..], &out].concat());
            let big = vec![7u8; 1200];
            let put = page::PageChange::LeafPut { tree_id: 2, key: b"large", value: &big };
            let kind = record::encode_change(9, &put, &mut out);
            let mut packed = Vec::new();
            if let Some(k) = record::compress(kind, &out, &mut packed) {
                seeds.push([&[k][..], &packed].concat());
            }
            seeds
        }
        "catalog_entry" => {
            let mut garbage = 40u64.to_be_bytes().to_vec();
            garbage.extend_from_slice(&crate::db::garbage::encode(3));
            vec![crate::db::catalog::encode(3, 17).to_vec(), garbage]
        }
        "blob_ref" => {
            let r = crate::blob::BlobRef { first: 40, len_bytes: 9000, seq: 7, crc: 3, clock: 2 };
            vec![r.encode(), r.encode_v1(0), crate::blob::encode_inline(b"inline")]
        }
        "map_snapshot" => {
            let mut map = PageMap::new();
            for pid in (0..600u64).step_by(3) {
                map.set(pid, Location::new((pid % 4) as u32, pid as u32 % 129, PAGE_SIZE as u16));
            }
            // mode 0x33: resealed, 4 zones, 129 slots per zone.
            vec![[&[0x33u8][..], &snapshot::encode(&map, 5, 4, 129, None)].concat()]
        }
        "free_pages" => {
            let mut free = crate::oop::free::FreePages::default();
            for pid in 1..300u64 {
                free.insert(pid, crate::oop::free::synthesize(pid, pid - 1, 3));
            }
            vec![[&[0x03u8][..], &free.encode(1)].concat()]
        }
        "doublewrite" => {
            // A real doublewrite batch of three pages, as the store leaves it in its area.
            let data_offset = 8 * BLOCK_BYTES;
            let device = Arc::new(MemoryDevice::new(data_offset + 16 * BLOCK_BYTES));
            let store = DoublewriteStore::new(device.clone(), data_offset).unwrap();
            let pages: Vec<Box<PageBuf>> = (1..4u64)
                .map(|pid| {
                    let mut p = Box::new([0u8; PAGE_SIZE]);
                    page::format(&mut p, pid, PageKind::Leaf, 1, 0);
                    page::seal(&mut p);
                    p
                })
                .collect();
            let batch: Vec<(u64, &PageBuf)> =
                pages.iter().enumerate().map(|(i, p)| (i as u64 + 1, &**p)).collect();
            store.write_batch(&batch, WritePurpose::UserEviction).unwrap();
            let mut area = vec![0u8; data_offset as usize];
            device.read_at(0, &mut area).unwrap();
            vec![[&[0u8][..], &area].concat(), vec![1u8; 1 + 3 * BLOCK_BYTES as usize]]
        }
        "oop_journal" => {
            let mut out = Vec::new();
            for pid in 1..20u64 {
                out.extend_from_slice(&[crate::oop::journal::KIND_SET, 16]);
                let loc = Location::new(0, pid as u32, PAGE_SIZE as u16);
                out.extend_from_slice(&crate::oop::journal::set_payload(pid, loc));
            }
            out.extend_from_slice(&[crate::oop::journal::KIND_FREE, 24]);
            out.extend_from_slice(&crate::oop::journal::free_payload(3, 0, 9));
            let loc = Location::new(1, 2, PAGE_SIZE as u16);
            let sets = crate::oop::journal::sets_payload(&[(4, loc), (5, loc)]);
            out.extend_from_slice(&[crate::oop::journal::KIND_SETS, sets.len() as u8]);
            out.extend_from_slice(&sets);
            let drops = crate::oop::journal::drops_payload(&[4..6, 9..10]);
            out.extend_from_slice(&[crate::oop::journal::KIND_DROPS, drops.len() as u8]);
            out.extend_from_slice(&drops);
            vec![out]
        }
        "wal_raw" => {
            let device = Arc::new(MemoryDevice::new(WAL_DEVICE_BLOCKS * BLOCK_BYTES));
            let wal = Wal::create(device.clone(), wal_options()).unwrap();
            for i in 0..20u8 {
                let lsn = wal.append(i, &vec![i; usize::from(i) * 20]).unwrap();
                wal.commit(lsn, Durability::Sync).unwrap();
            }
            wal.close().unwrap();
            let mut bytes = vec![0u8; (WAL_DEVICE_BLOCKS * BLOCK_BYTES) as usize];
            device.read_at(0, &mut bytes).unwrap();
            vec![[&[0x00u8][..], &bytes].concat()]
        }
        "dump_stream" => {
            let db = crate::Db::open_on(
                Arc::new(MemoryDevice::new(8 << 20)),
                crate::Options::test_min(),
            )
            .unwrap();
            db.tree("empty").unwrap();
            let t = db.tree("t").unwrap();
            for i in 0..5u8 {
                t.put(&[i], &vec![i; usize::from(i) * 30]).unwrap();
            }
            let mut out = Vec::new();
            crate::dump::dump(&db, &mut out).unwrap();
            vec![out]
        }
        "wal_model" => vec![
            (0..40u8).flat_map(|i| [i, i.wrapping_mul(13)]).collect(),
            [(0..20u8).flat_map(|i| [i, 150]).collect::<Vec<_>>(), vec![0xff, 10, 20, 0x40]]
                .concat(),
        ],
        _ => Vec::new(),
    }
}

/// One check: it panics only when a property fails.
pub type Check = fn(&[u8]);

/// Every check by its fuzz target's name.
pub const CHECKS: &[(&str, Check)] = &[
    ("page_node", page_node),
    ("page_meta", page_meta),
    ("redo_record", redo_record),
    ("catalog_entry", catalog_entry),
    ("blob_ref", blob_ref),
    ("map_snapshot", map_snapshot),
    ("free_pages", free_pages),
    ("doublewrite", doublewrite),
    ("oop_journal", oop_journal),
    ("wal_raw", wal_raw),
    ("wal_model", wal_model),
    ("dump_stream", dump_stream),
];

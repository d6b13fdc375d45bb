//! One conformance suite, run against every backend: whatever the engine sees through the trait
//! must not depend on which device is underneath.
use super::*;
use crate::rng::SplitMix64;

/// Ops in the big batch: more than two io_uring submission rounds.
const BATCH_OPS: usize = 300;

/// Deterministic contents for block `block` written in generation `generation`.
fn pattern(block: u64, generation: u64, len: usize) -> Vec<u8> {
    let mut rng = SplitMix64::new(block.wrapping_mul(0x1000_0001) ^ generation.rotate_left(32));
    (0..len).map(|_| rng.next_u64() as u8).collect()
}

fn op(offset: u64, data: &[u8]) -> WriteOp<'_> {
    WriteOp { offset, data, purpose: WritePurpose::UserEviction, placement: Placement::None }
}

/// A buffer whose start is deliberately not 4096-aligned, so direct I/O must bounce it.
struct Unaligned(Vec<u8>);
impl Unaligned {
    fn new(len: usize) -> Unaligned {
        Unaligned(vec![0xEE; len + 1])
    }
    fn buf(&mut self) -> &mut [u8] {
        &mut self.0[1..]
    }
}

/// Compares bytes, naming the first difference instead of dumping kilobytes.
pub fn same(got: &[u8], want: &[u8], label: &str, what: &str) {
    assert_eq!(got.len(), want.len(), "{label}: {what}: length");
    if let Some(i) = got.iter().zip(want).position(|(g, w)| g != w) {
        panic!("{label}: {what}: first difference at byte {i}: got {} want {}", got[i], want[i]);
    }
}

/// Runs the suite on a fresh (never written) device of at least `BATCH_OPS * 2` blocks.
///
/// The steps share the device, so their block ranges are disjoint and their order matters:
/// the refused-request step checks that block 3 still holds what the read-after-write step put
/// there, and the trim step trims blocks the big batch wrote.
pub fn run(dev: &dyn Device, label: &str) {
    let blocks = dev.capacity_bytes() / BLOCK_BYTES;
    assert!(blocks >= 2 * BATCH_OPS as u64 + 16, "{label}: device too small for the suite");
    unwritten_reads_zero(dev, label, blocks);
    let one = read_after_write(dev, label);
    let (targets, datas) = big_batch(dev, label);
    merged_run(dev, label);
    trim_zeroes_only_its_block(dev, label, &targets, &datas);
    bad_requests_change_nothing(dev, label, &one);
    overwrite(dev, label);
}

/// Unwritten blocks read as zeros, at both ends.
fn unwritten_reads_zero(dev: &dyn Device, label: &str, blocks: u64) {
    let b = BLOCK_BYTES;
    for block in [0, blocks - 1] {
        let mut buf = vec![0xAAu8; b as usize];
        dev.read_at(block * b, &mut buf).unwrap();
        assert!(buf.iter().all(|x| *x == 0), "{label}: unwritten block {block} is not zero");
    }
}

/// Read after write, single and multi-block, aligned and unaligned buffers. Writes block 3 and
/// blocks 8..12; returns block 3's contents.
fn read_after_write(dev: &dyn Device, label: &str) -> Vec<u8> {
    let b = BLOCK_BYTES;
    let page = b as usize;
    let one = pattern(3, 1, page);
    dev.write_at(3 * b, &one, WritePurpose::Metadata).unwrap();
    let four = pattern(8, 1, 4 * page);
    let mut four_unaligned = Unaligned::new(four.len());
    four_unaligned.buf().copy_from_slice(&four);
    dev.write_at(8 * b, four_unaligned.buf(), WritePurpose::Wal).unwrap();
    let mut got = vec![0u8; page];
    dev.read_at(3 * b, &mut got).unwrap();
    same(&got, &one, label, "read after write");
    let mut got4 = Unaligned::new(4 * page);
    dev.read_at(8 * b, got4.buf()).unwrap();
    same(got4.buf(), &four, label, "multi-block read after write (unaligned)");
    one
}

/// A big batch: BATCH_OPS scattered single-block writes (above the blocks used so far), then
/// one batch reading them all. Returns the blocks written and their contents.
fn big_batch(dev: &dyn Device, label: &str) -> (Vec<u64>, Vec<Vec<u8>>) {
    let b = BLOCK_BYTES;
    let page = b as usize;
    let span = 2 * BATCH_OPS as u64 - 1;
    let targets: Vec<u64> = (0..BATCH_OPS as u64).map(|i| (i * 7) % span + 16).collect();
    let mut distinct = targets.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), BATCH_OPS, "targets must not overlap (order in a batch is free)");
    let datas: Vec<Vec<u8>> = targets.iter().map(|t| pattern(*t, 2, page)).collect();
    let ops: Vec<WriteOp<'_>> = targets.iter().zip(&datas).map(|(t, d)| op(t * b, d)).collect();
    dev.write_batch(&ops).unwrap();
    let mut bufs: Vec<Unaligned> = (0..BATCH_OPS).map(|_| Unaligned::new(page)).collect();
    let mut reads: Vec<ReadOp<'_>> = targets
        .iter()
        .zip(bufs.iter_mut())
        .map(|(t, buf)| ReadOp { offset: t * b, buf: buf.buf() })
        .collect();
    dev.read_batch(&mut reads).unwrap();
    drop(reads);
    for ((t, d), buf) in targets.iter().zip(&datas).zip(bufs.iter_mut()) {
        same(buf.buf(), d, label, &format!("batch block {t}"));
    }
    dev.sync().unwrap();
    (targets, datas)
}

/// Contiguous runs handed over out of order, an unaligned buffer among them (a file device
/// merges them into vectored writes): the same bytes as one write per op.
fn merged_run(dev: &dyn Device, label: &str) {
    let b = BLOCK_BYTES;
    let page = b as usize;
    let first = 2 * BATCH_OPS as u64 + 1;
    let run_blocks = [first + 3, first, first + 1];
    let run_datas: Vec<Vec<u8>> = run_blocks.iter().map(|t| pattern(*t, 3, page)).collect();
    let mut odd = Unaligned::new(page);
    odd.buf().copy_from_slice(&pattern(first + 2, 3, page));
    let mut run_ops: Vec<WriteOp<'_>> =
        run_blocks.iter().zip(&run_datas).map(|(t, d)| op(t * b, d)).collect();
    run_ops.push(op((first + 2) * b, odd.buf()));
    dev.write_batch(&run_ops).unwrap();
    let mut whole = vec![0u8; 4 * page];
    dev.read_at(first * b, &mut whole).unwrap();
    for (i, block) in (first..first + 4).enumerate() {
        same(&whole[i * page..(i + 1) * page], &pattern(block, 3, page), label, "merged run");
    }
}

/// Trim reads zeros and leaves the neighbours alone.
fn trim_zeroes_only_its_block(dev: &dyn Device, label: &str, targets: &[u64], datas: &[Vec<u8>]) {
    let b = BLOCK_BYTES;
    let (t0, t1) = (targets[0], targets[1]);
    dev.trim(t0 * b, b).unwrap();
    let mut z = vec![0xAAu8; b as usize];
    dev.read_at(t0 * b, &mut z).unwrap();
    assert!(z.iter().all(|x| *x == 0), "{label}: trimmed block {t0} is not zero");
    dev.read_at(t1 * b, &mut z).unwrap();
    same(&z, &datas[1], label, &format!("trim touched block {t1}"));
}

/// Bad requests are refused with the right error and change nothing, even inside a batch.
/// `one` is what block 3 holds.
fn bad_requests_change_nothing(dev: &dyn Device, label: &str, one: &[u8]) {
    let b = BLOCK_BYTES;
    let page = b as usize;
    let cap = dev.capacity_bytes();
    let junk = vec![0x55u8; page];
    assert!(matches!(
        dev.write_at(cap, &junk, WritePurpose::Metadata),
        Err(DeviceError::OutOfRange { .. })
    ));
    assert!(matches!(
        dev.read_at(cap - b, &mut vec![0; 2 * page]),
        Err(DeviceError::OutOfRange { .. })
    ));
    assert!(matches!(
        dev.write_at(b / 2, &junk, WritePurpose::Metadata),
        Err(DeviceError::Misaligned { .. })
    ));
    assert!(matches!(
        dev.write_at(0, &junk[..100], WritePurpose::Metadata),
        Err(DeviceError::Misaligned { .. })
    ));
    assert!(matches!(
        dev.read_at(b + 512, &mut vec![0; page]),
        Err(DeviceError::Misaligned { .. })
    ));
    assert!(matches!(dev.trim(cap - b, 2 * b), Err(DeviceError::OutOfRange { .. })));
    let mixed = [op(3 * b, &junk), op(cap, &junk)];
    assert!(matches!(dev.write_batch(&mixed), Err(DeviceError::OutOfRange { .. })));
    let mut got = vec![0u8; page];
    dev.read_at(3 * b, &mut got).unwrap();
    same(&got, one, label, "a refused batch changed block 3");
}

/// Overwrite: the newest bytes win.
fn overwrite(dev: &dyn Device, label: &str) {
    let b = BLOCK_BYTES;
    let page = b as usize;
    let newer = pattern(3, 9, page);
    dev.write_at(3 * b, &newer, WritePurpose::UserCheckpoint).unwrap();
    let mut got = vec![0u8; page];
    dev.read_at(3 * b, &mut got).unwrap();
    same(&got, &newer, label, "overwrite");
    dev.sync().unwrap();
}

mod backends {
    use super::*;
    use std::path::PathBuf;

    const CAPACITY_BYTES: u64 = 1024 * BLOCK_BYTES;

    /// A fresh path under the temp dir, removed on drop.
    struct TempFile(PathBuf);
    impl TempFile {
        fn new(label: &str) -> TempFile {
            let name = format!("wafer-device-{label}-{}.img", std::process::id());
            let path = std::env::temp_dir().join(name);
            let _ = std::fs::remove_file(&path);
            TempFile(path)
        }
    }
    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    /// Opens a file device, or says why the filesystem refuses direct I/O and returns None.
    fn open_file(tmp: &TempFile, options: FileOptions) -> Option<FileDevice> {
        match FileDevice::open(&tmp.0, CAPACITY_BYTES, options) {
            Ok(dev) => Some(dev),
            Err(DeviceError::Io { op, source, .. })
                if options.direct && source.raw_os_error() == Some(libc::EINVAL) =>
            {
                eprintln!("SKIP {options:?} on {}: {op}: {source}", tmp.0.display());
                None
            }
            Err(e) => panic!("open {options:?}: {e}"),
        }
    }

    #[test]
    fn memory() {
        run(&MemoryDevice::new(CAPACITY_BYTES), "memory");
    }

    #[test]
    fn counted_memory() {
        let stats = std::sync::Arc::new(crate::stats::IoStats::default());
        run(&Counted::new(MemoryDevice::new(CAPACITY_BYTES), stats.clone()), "counted");
        assert!(
            stats.snapshot().bytes(WritePurpose::UserEviction) >= BATCH_OPS as u64 * BLOCK_BYTES
        );
    }

    #[test]
    fn fault_device() {
        run(&FaultDevice::new(CAPACITY_BYTES), "fault");
    }

    #[test]
    fn file_buffered() {
        let tmp = TempFile::new("buffered");
        run(&open_file(&tmp, FileOptions::BUFFERED).unwrap(), "file-buffered");
    }

    #[test]
    fn file_direct() {
        let tmp = TempFile::new("direct");
        if let Some(dev) = open_file(&tmp, FileOptions::DIRECT) {
            run(&dev, "file-direct");
        }
    }

    fn uring(options: FileOptions, label: &str) {
        let tmp = TempFile::new(label);
        let Some(dev) = open_file(&tmp, options) else { return };
        match dev.io_uring_unavailable_reason() {
            Some(reason) => {
                eprintln!("{label}: io_uring unavailable, testing the fallback: {reason}")
            }
            None => eprintln!("{label}: io_uring in use"),
        }
        assert_eq!(dev.uses_io_uring(), dev.io_uring_unavailable_reason().is_none());
        run(&dev, label);
    }

    #[test]
    fn file_uring() {
        uring(FileOptions::URING, "file-uring");
    }

    #[test]
    fn file_direct_uring() {
        uring(FileOptions::DIRECT_URING, "file-direct-uring");
    }

    #[test]
    fn file_survives_reopen() {
        let tmp = TempFile::new("reopen");
        let data = pattern(5, 5, BLOCK_BYTES as usize);
        {
            let dev = open_file(&tmp, FileOptions::BUFFERED).unwrap();
            dev.write_at(5 * BLOCK_BYTES, &data, WritePurpose::Metadata).unwrap();
            dev.sync().unwrap();
        }
        let dev = open_file(&tmp, FileOptions::BUFFERED).unwrap();
        let mut got = vec![0u8; data.len()];
        dev.read_at(5 * BLOCK_BYTES, &mut got).unwrap();
        assert_eq!(got, data);
    }

    /// A file cut short behind the device's back: reads past its end must fail with the op name
    /// and the offset of the first failing op, on every path, while the other ops complete.
    #[test]
    fn file_short_reads_fail_with_op_and_offset() {
        for (options, name) in
            [(FileOptions::BUFFERED, "pread"), (FileOptions::URING, "io_uring read")]
        {
            let tmp = TempFile::new(name.split(' ').next().unwrap_or("x"));
            let dev = open_file(&tmp, options).unwrap();
            let name = if dev.uses_io_uring() { name } else { "pread" };
            let data = pattern(1, 1, BLOCK_BYTES as usize);
            dev.write_at(BLOCK_BYTES, &data, WritePurpose::Metadata).unwrap();
            let half = CAPACITY_BYTES / 2;
            std::fs::OpenOptions::new().write(true).open(&tmp.0).unwrap().set_len(half).unwrap();
            let mut bufs = vec![vec![0u8; BLOCK_BYTES as usize]; 200];
            let offsets: Vec<u64> = (0..200u64)
                .map(|i| if i == 150 || i == 170 { half + i * BLOCK_BYTES } else { BLOCK_BYTES })
                .collect();
            let mut ops: Vec<ReadOp<'_>> = offsets
                .iter()
                .zip(bufs.iter_mut())
                .map(|(o, b)| ReadOp { offset: *o, buf: b })
                .collect();
            match dev.read_batch(&mut ops) {
                Err(DeviceError::Io { op, offset, .. }) => {
                    assert_eq!((op, offset), (name, half + 150 * BLOCK_BYTES));
                }
                other => panic!("{options:?}: expected an I/O error, got {other:?}"),
            }
            drop(ops);
            same(&bufs[0], &data, name, "op before the failure");
            if dev.uses_io_uring() {
                // io_uring runs the whole batch: ops after the failed one completed too.
                same(&bufs[199], &data, name, "op after the failure");
            }
        }
    }
}

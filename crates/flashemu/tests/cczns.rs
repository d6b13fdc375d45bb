//! CCZNS (002 sec. III): compressed write and decompressed read on the emulated ZNS device.
//! Round trips, byte-granular pointers, padding zones, zone-end padding, OOB limits, illegal
//! reads refused (changing nothing), exact flash accounting, engine time; property tests.
#![allow(clippy::unwrap_used)]
use flashemu::{Config, EmuError, Ssd, StoreKind, ZoneState, LBA_BYTES};
use proptest::prelude::*;

const PAGE: u64 = 16384;
/// tiny with 16 KiB pages: zones of 2 blocks x 16 pages x 16 KiB = 512 KiB.
const ZONE_BYTES: u64 = 512 * 1024;

fn config() -> Config {
    let mut config = Config::preset("tiny").unwrap();
    // Pages first: the zone capacity follows the geometry when the interface is set.
    config.set("geometry.flash-page-bytes", "16384").unwrap();
    config.set("interface", "zns").unwrap();
    config.set("max-open-zones", "4").unwrap();
    config.set("max-active-zones", "4").unwrap();
    config.set("cczns", "on").unwrap();
    config.store = StoreKind::Memory;
    config.validate().unwrap();
    config
}

fn device() -> Ssd {
    Ssd::new(config()).unwrap()
}

/// Text-like bytes: words from a small vocabulary, so ZSTD shrinks them about 3x.
fn text(seed: u64, len: usize) -> Vec<u8> {
    const WORDS: [&str; 12] = [
        "flash ", "zone ", "write ", "pointer ", "chunk ", "the ", "of ", "page ", "read ",
        "engine ", "and ", "byte ",
    ];
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len + 16);
    while out.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out.extend_from_slice(WORDS[(state % WORDS.len() as u64) as usize].as_bytes());
    }
    out.truncate(len);
    out
}

/// Bytes no compressor shrinks.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 56) as u8
        })
        .collect()
}

fn wp(ssd: &Ssd, zone: u32) -> u64 {
    ssd.report_zones().unwrap()[zone as usize].write_pointer_bytes
}

fn dr(ssd: &mut Ssd, at: u64, feedback: u32) -> Result<Vec<u8>, EmuError> {
    let mut buf = vec![0u8; 1 << 20];
    let n = ssd.decompressed_read(at, feedback, &mut buf)?;
    buf.truncate(n);
    Ok(buf)
}

#[test]
fn single_chunk_round_trip_moves_the_pointer_by_the_compressed_bytes() {
    let mut ssd = device();
    let raw = text(1, 4096);
    let out = ssd.compressed_write(0, &[&raw]).unwrap();
    let chunk = out.chunks[0];
    assert!(chunk.compressed && chunk.stored_bytes < 4096 / 2, "{chunk:?}");
    assert_eq!((chunk.byte_address, chunk.raw_bytes), (0, 4096));
    assert_eq!(chunk.feedback_bytes, chunk.stored_bytes, "a conventional zone does not pad");
    assert_eq!(wp(&ssd, 0), u64::from(chunk.stored_bytes));
    assert_eq!(out.write_pointer_bytes, u64::from(chunk.stored_bytes));
    // The next CW lands right behind it, byte-granular.
    let second = ssd.compressed_write(wp(&ssd, 0), &[&text(2, 3000)]).unwrap().chunks[0];
    assert_eq!(second.byte_address, u64::from(chunk.stored_bytes));
    assert_eq!(dr(&mut ssd, 0, chunk.feedback_bytes).unwrap(), raw);
    assert_eq!(dr(&mut ssd, second.byte_address, second.feedback_bytes).unwrap(), text(2, 3000));
    let c = ssd.counters();
    assert_eq!(c.host_write_bytes, 7096);
    assert_eq!(c.cw_raw_bytes, 7096);
    assert_eq!(c.cw_stored_bytes, u64::from(chunk.stored_bytes + second.stored_bytes));
    assert_eq!(c.flash_bytes(), 0, "less than a flash page: still in the write buffer");
    assert_eq!(c.dr_raw_bytes, 7096);
}

#[test]
fn multi_chunk_write_packs_and_multi_chunk_read_returns_what_fits() {
    let mut ssd = device();
    let raws: Vec<Vec<u8>> = (0..8).map(|i| text(10 + i, 4096)).collect();
    let refs: Vec<&[u8]> = raws.iter().map(Vec::as_slice).collect();
    let out = ssd.compressed_write(0, &refs).unwrap();
    assert_eq!(out.chunks.len(), 8);
    for pair in out.chunks.windows(2) {
        assert_eq!(pair[1].byte_address, pair[0].byte_address + u64::from(pair[0].feedback_bytes));
    }
    let total: u64 = out.chunks.iter().map(|c| u64::from(c.feedback_bytes)).sum();
    assert_eq!(wp(&ssd, 0), total);
    let mut buf = vec![0u8; 8 * 4096];
    let read = ssd.decompressed_read_multi(0, total, &mut buf).unwrap();
    assert_eq!((read.chunks.len(), read.chunks_in_range, read.filled_bytes), (8, 8, 8 * 4096));
    assert_eq!(buf, raws.concat());
    // A buffer for three and a half chunks gets three (002's prefetch: as many as fit).
    let mut small = vec![0u8; 3 * 4096 + 2048];
    let read = ssd.decompressed_read_multi(0, total, &mut small).unwrap();
    assert_eq!((read.chunks.len(), read.chunks_in_range, read.filled_bytes), (3, 8, 3 * 4096));
    assert_eq!(&small[..3 * 4096], &raws[..3].concat()[..]);
    // A sub-range of whole chunks in the middle.
    let from = out.chunks[2].byte_address;
    let len = out.chunks[5].byte_address - from;
    let read = ssd.decompressed_read_multi(from, len, &mut buf).unwrap();
    assert_eq!(read.chunks.len(), 3);
    assert_eq!(&buf[..3 * 4096], &raws[2..5].concat()[..]);
}

#[test]
fn incompressible_chunks_pass_through_raw() {
    let mut ssd = device();
    let raw = noise(3, 4096);
    let chunk = ssd.compressed_write(0, &[&raw]).unwrap().chunks[0];
    assert!(!chunk.compressed);
    assert_eq!((chunk.stored_bytes, chunk.feedback_bytes), (4096, 4096));
    assert_eq!(ssd.counters().cw_passthrough_chunks, 1);
    assert_eq!(dr(&mut ssd, 0, 4096).unwrap(), raw);
}

#[test]
fn padding_zone_aligns_each_write_and_admits_block_writes() {
    let mut ssd = device();
    ssd.zone_open_padding(1).unwrap();
    let zone = ZONE_BYTES;
    let out = ssd.compressed_write(zone, &[&text(4, 4096), &text(5, 5000)]).unwrap();
    let last = out.chunks[1];
    assert_eq!(out.chunks[0].feedback_bytes, out.chunks[0].stored_bytes);
    assert!(last.feedback_bytes > last.stored_bytes);
    assert_eq!((last.byte_address + u64::from(last.feedback_bytes)) % LBA_BYTES, 0);
    assert!(ssd.report_zones().unwrap()[1].padding);
    // The pointer is block-aligned: a plain block write may follow in the same zone.
    let lba = wp(&ssd, 1) / LBA_BYTES;
    ssd.write(lba, 1, Some(&vec![7u8; 4096]), flashemu::Placement::None).unwrap();
    assert_eq!(dr(&mut ssd, last.byte_address, last.feedback_bytes).unwrap(), text(5, 5000));
    // ... and the block data is no chunk.
    assert!(matches!(dr(&mut ssd, lba * LBA_BYTES, 4096), Err(EmuError::IllegalRead { .. })));
    // A conventional zone with an unaligned pointer refuses block writes.
    ssd.compressed_write(0, &[&text(6, 4096)]).unwrap();
    let err = ssd.write(1, 1, None, flashemu::Placement::None).unwrap_err();
    assert!(matches!(err, EmuError::NotAtWritePointer { .. }), "{err}");
    // Only an empty zone can become a padding zone.
    assert!(matches!(ssd.zone_open_padding(0), Err(EmuError::InvalidZoneState { .. })));
}

/// `cczns.chunk_align_bytes = 32`: every chunk starts on a 32-byte unit, its feedback covers
/// the rounding (so multi-chunk DRs walk the chunks by feedback as before), the rounding is
/// counted as padding, and a read between two chunks is refused.
#[test]
fn an_alignment_unit_places_every_chunk_on_it() {
    let mut config = config();
    config.set("cczns.chunk-align-bytes", "32").unwrap();
    config.validate().unwrap();
    let mut ssd = Ssd::new(config.clone()).unwrap();
    ssd.zone_open_padding(0).unwrap();
    let raws: Vec<Vec<u8>> = (0..6).map(|i| text(40 + i, 4096)).collect();
    let refs: Vec<&[u8]> = raws.iter().map(Vec::as_slice).collect();
    let out = ssd.compressed_write(0, &refs).unwrap();
    let mut rounding = 0;
    for (i, c) in out.chunks.iter().enumerate() {
        assert_eq!(c.byte_address % 32, 0, "{c:?}");
        if i + 1 < out.chunks.len() {
            assert_eq!(c.feedback_bytes, c.stored_bytes.next_multiple_of(32));
            rounding += u64::from(c.feedback_bytes - c.stored_bytes);
        }
        assert_eq!(dr(&mut ssd, c.byte_address, c.feedback_bytes).unwrap(), raws[i]);
    }
    let last = out.chunks[5];
    let end = last.byte_address + u64::from(last.feedback_bytes);
    assert_eq!((end % LBA_BYTES, wp(&ssd, 0)), (0, end));
    let pad = rounding + u64::from(last.feedback_bytes - last.stored_bytes);
    let stored: u64 = out.chunks.iter().map(|c| u64::from(c.stored_bytes)).sum();
    assert_eq!(stored + pad, end, "every byte up to the pointer is a chunk or padding");
    let mut buf = vec![0u8; 6 * 4096];
    let read = ssd.decompressed_read_multi(0, end, &mut buf).unwrap();
    assert_eq!((read.chunks.len(), buf), (6, raws.concat()));
    let gap = u64::from(out.chunks[0].stored_bytes);
    if gap % 32 != 0 {
        assert!(matches!(dr(&mut ssd, gap, 32), Err(EmuError::IllegalRead { .. })));
    }
    // The unit must be a power of two up to a block.
    for bad in ["48", "8192", "0"] {
        let mut c = config.clone();
        c.set("cczns.chunk-align-bytes", bad).unwrap();
        assert!(c.validate().is_err(), "{bad}");
    }
}

/// Fills zone 0 with incompressible 64 KiB chunks up to `left` bytes before its end.
fn fill_leaving(ssd: &mut Ssd, left: u64) {
    let chunk = noise(9, 65536);
    while ZONE_BYTES - wp(ssd, 0) > left + 65536 {
        ssd.compressed_write(wp(ssd, 0), &[&chunk]).unwrap();
    }
    let rest = (ZONE_BYTES - wp(ssd, 0) - left) as usize;
    ssd.compressed_write(wp(ssd, 0), &[&noise(10, rest)]).unwrap();
    assert_eq!(ZONE_BYTES - wp(ssd, 0), left);
}

#[test]
fn a_chunk_that_would_straddle_the_zone_end_pads_and_finishes_the_zone() {
    let mut ssd = device();
    fill_leaving(&mut ssd, 1000);
    let small = text(11, 1000); // compresses far below 1000
    let big = noise(12, 2000); // stays 2000: cannot fit
    let at = wp(&ssd, 0);
    let out = ssd.compressed_write(at, &[&small, &big, &small]).unwrap();
    assert_eq!(out.chunks.len(), 1, "the prefix that fits");
    assert!(out.zone_finished);
    let info = ssd.report_zones().unwrap()[0];
    assert_eq!(info.state, ZoneState::Full);
    assert_eq!(out.write_pointer_bytes, ZONE_BYTES);
    // Every byte of the zone was programmed: data, then the padding to the end.
    let c = ssd.counters();
    assert_eq!(c.flash_bytes(), ZONE_BYTES);
    assert_eq!(c.flash_host_bytes, at + u64::from(out.chunks[0].stored_bytes));
    assert_eq!(c.flash_pad_bytes, ZONE_BYTES - c.flash_host_bytes);
    assert_eq!(dr(&mut ssd, at, out.chunks[0].feedback_bytes).unwrap(), small);
    let err = ssd.compressed_write(ZONE_BYTES - 1, &[&small]).unwrap_err();
    assert!(matches!(err, EmuError::ZoneFull { zone: 0 }), "{err}");
}

#[test]
fn flash_pages_are_programmed_as_they_fill_and_padding_is_counted_apart() {
    let mut ssd = device();
    ssd.zone_open_padding(0).unwrap();
    let mut stored = 0;
    let mut fed_back = 0;
    for i in 0..40 {
        let out =
            ssd.compressed_write(wp(&ssd, 0), &[&text(i, 3000), &text(i + 100, 2000)]).unwrap();
        stored += out.chunks.iter().map(|c| u64::from(c.stored_bytes)).sum::<u64>();
        fed_back += out.chunks.iter().map(|c| u64::from(c.feedback_bytes)).sum::<u64>();
    }
    let c = ssd.counters();
    assert_eq!(wp(&ssd, 0), fed_back);
    assert_eq!(c.cw_stored_bytes, stored);
    assert_eq!(c.flash_bytes(), (fed_back / PAGE) * PAGE, "only whole pages programmed");
    // Finish programs the buffered partial page, padded (pages never written stay erased).
    ssd.zone_finish(0).unwrap();
    let c = ssd.counters();
    assert_eq!(c.flash_host_bytes, stored, "host data is exactly the stored chunk bytes");
    assert_eq!(c.flash_pad_bytes, fed_back.next_multiple_of(PAGE) - stored);
}

#[test]
fn illegal_reads_are_refused() {
    let mut ssd = device();
    let out = ssd.compressed_write(0, &[&text(20, 4096), &text(21, 4096)]).unwrap();
    let [a, b] = [out.chunks[0], out.chunks[1]];
    let illegal = |r: Result<Vec<u8>, EmuError>| matches!(r, Err(EmuError::IllegalRead { .. }));
    assert!(illegal(dr(&mut ssd, 1, a.feedback_bytes)), "inside a chunk");
    assert!(illegal(dr(&mut ssd, 0, a.feedback_bytes + 1)), "wrong size");
    let end = wp(&ssd, 0);
    assert!(illegal(dr(&mut ssd, end, 100)), "beyond the pointer");
    assert!(illegal(dr(&mut ssd, ZONE_BYTES * 1000, 100)), "beyond the device");
    let mut buf = vec![0u8; 1 << 16];
    let total = u64::from(a.feedback_bytes + b.feedback_bytes);
    for (from, len) in [(0, total - 1), (0, total + 1), (1, total - 1), (0, 0)] {
        let r = ssd.decompressed_read_multi(from, len, &mut buf);
        assert!(matches!(r, Err(EmuError::IllegalRead { .. })), "range {from}+{len}: {r:?}");
    }
    let mut tiny = vec![0u8; 100];
    let err = ssd.decompressed_read(0, a.feedback_bytes, &mut tiny).unwrap_err();
    assert!(matches!(err, EmuError::BufferTooSmall { needed: 4096, len: 100 }), "{err}");
    let counters = ssd.counters();
    assert_eq!(counters.host_read_bytes, 0, "refused reads return nothing");
    // After a reset the chunks are gone with their OOB.
    ssd.zone_reset(0).unwrap();
    assert!(illegal(dr(&mut ssd, 0, a.feedback_bytes)));
}

#[test]
fn refused_writes_change_nothing() {
    let mut ssd = device();
    ssd.compressed_write(0, &[&text(30, 4096)]).unwrap();
    let before = (ssd.report_zones().unwrap(), ssd.counters());
    let chunk = text(31, 4096);
    let errors = [
        ssd.compressed_write(5, &[&chunk]).unwrap_err(),
        ssd.compressed_write(wp(&ssd, 0), &[]).unwrap_err(),
        ssd.compressed_write(wp(&ssd, 0), &[&chunk, &[]]).unwrap_err(),
        ssd.compressed_write(wp(&ssd, 0), &[&vec![1u8; ZONE_BYTES as usize + 1]]).unwrap_err(),
    ];
    assert!(matches!(errors[0], EmuError::NotAtByteWritePointer { .. }));
    assert!(matches!(errors[1], EmuError::BadChunks(_)));
    assert!(matches!(errors[2], EmuError::BadChunks(_)));
    assert!(matches!(errors[3], EmuError::ChunkTooLarge { .. }));
    // 43 tiny chunks all start in one 16 KiB page: its OOB holds 42 entries.
    let crumbs: Vec<Vec<u8>> = (0..43).map(|i| vec![i as u8; 8]).collect();
    let refs: Vec<&[u8]> = crumbs.iter().map(Vec::as_slice).collect();
    let err = ssd.compressed_write(wp(&ssd, 0), &refs).unwrap_err();
    assert!(matches!(err, EmuError::OobFull { entries: 41.., .. }), "{err}");
    assert_eq!(before, (ssd.report_zones().unwrap(), ssd.counters()));
}

#[test]
fn commands_need_a_cczns_device_and_reads_need_stored_bytes() {
    let mut plain = Config::preset("tiny").unwrap();
    plain.set("interface", "zns").unwrap();
    let mut ssd = Ssd::new(plain.clone()).unwrap();
    let err = ssd.compressed_write(0, &[b"abc"]).unwrap_err();
    assert!(matches!(err, EmuError::WrongInterface { .. }), "{err}");
    let mut conventional = Config::preset("tiny").unwrap();
    conventional.set("cczns", "on").unwrap();
    assert!(conventional.validate().is_err(), "CCZNS needs ZNS");
    let mut none = config();
    none.store = StoreKind::None;
    let mut ssd = Ssd::new(none).unwrap();
    let chunk = ssd.compressed_write(0, &[&text(40, 4096)]).unwrap().chunks[0];
    assert!(chunk.stored_bytes < 4096, "sizes are real even when bytes are not kept");
    assert!(matches!(dr(&mut ssd, 0, chunk.feedback_bytes), Err(EmuError::NoStoredData)));
}

#[test]
fn config_round_trips_through_toml() {
    let mut config = config();
    config.set("cczns.compress-bytes-per-s", "5e9").unwrap();
    config.set("cczns.zstd-level", "3").unwrap();
    let back = Config::from_toml(&config.to_toml().unwrap()).unwrap();
    assert_eq!(back, config);
    let mut bad = config.clone();
    bad.set("cczns.zstd-level", "0").unwrap();
    assert!(bad.validate().is_err());
}

#[test]
fn engine_time_is_bytes_over_throughput_plus_latency() {
    let mut config = config();
    config.set("timing", "chips").unwrap();
    config.set("cczns.compress-bytes-per-s", "1e9").unwrap();
    config.set("cczns.compress-latency-ns", "5000").unwrap();
    let mut ssd = Ssd::new(config).unwrap();
    // 4 KiB of text: 4096 ns in the compressor, 5000 ns latency, nothing reaches flash yet.
    ssd.compressed_write(0, &[&text(50, 4096)]).unwrap();
    let report = ssd.timing_report().unwrap();
    assert_eq!(report.engine_busy_ns, 4096);
    assert_eq!(report.device_ns, 4096 + 5000);
    assert_eq!(report.host_write_bytes, 4096);
    // A second CW queues behind the first in the compressor (QD 1: after it completes).
    ssd.compressed_write(wp(&ssd, 0), &[&text(51, 8192)]).unwrap();
    let report = ssd.timing_report().unwrap();
    assert_eq!(report.engine_busy_ns, 4096 + 8192);
    assert!(report.device_ns >= 4096 + 5000 + 8192 + 5000);
}

/// A DR senses the flash page its chunk sits in once, even when the chunk crosses a 4 KiB
/// slot: tR, one transfer per slot, then the decompressor.
#[test]
fn a_dr_across_a_slot_in_one_flash_page_is_one_sense() {
    let mut config = config();
    config.set("timing", "chips").unwrap();
    config.set("cczns.decompress-bytes-per-s", "1e9").unwrap();
    config.set("cczns.decompress-latency-ns", "5000").unwrap();
    let mut ssd = Ssd::new(config).unwrap();
    let timing = ssd.config().timing;
    let first = ssd.compressed_write(0, &[&noise(1, 3500)]).unwrap().chunks[0];
    let chunk = ssd.compressed_write(wp(&ssd, 0), &[&text(2, 4096)]).unwrap().chunks[0];
    let end = chunk.byte_address + u64::from(chunk.feedback_bytes);
    assert!(chunk.byte_address < LBA_BYTES && end > LBA_BYTES && end < PAGE, "{chunk:?}");
    ssd.restart_timing_window();
    assert_eq!(dr(&mut ssd, chunk.byte_address, chunk.feedback_bytes).unwrap(), text(2, 4096));
    let one_sense = timing.read_ns + 2 * timing.transfer_ns + 4096 + 5000;
    assert_eq!(ssd.timing_report().unwrap().device_ns, one_sense);
    // The chunk in one slot: one sense, one transfer.
    ssd.restart_timing_window();
    dr(&mut ssd, first.byte_address, first.feedback_bytes).unwrap();
    let one_slot = timing.read_ns + timing.transfer_ns + 3500 + 5000;
    assert_eq!(ssd.timing_report().unwrap().device_ns, one_slot);
}

fn chunk_strategy() -> impl Strategy<Value = (u64, usize, bool)> {
    (any::<u64>(), 2000usize..20_000, any::<bool>())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Any sequence of CWs (random sizes, compressible or not, padding zone or not) reads back
    /// chunk by chunk and write by write; the pointer is the sum of reported sizes; a start
    /// one byte off any chunk is refused.
    #[test]
    fn every_chunk_reads_back(
        writes in prop::collection::vec(prop::collection::vec(chunk_strategy(), 1..6), 1..12),
        padding in any::<bool>(),
    ) {
        let mut ssd = device();
        if padding {
            ssd.zone_open_padding(0).unwrap();
        }
        let mut placed = Vec::new();
        for write in &writes {
            let raws: Vec<Vec<u8>> = write
                .iter()
                .map(|&(seed, len, squeezable)| {
                    if squeezable { text(seed, len) } else { noise(seed, len) }
                })
                .collect();
            let refs: Vec<&[u8]> = raws.iter().map(Vec::as_slice).collect();
            let at = wp(&ssd, 0);
            if at == ZONE_BYTES {
                break;
            }
            let out = ssd.compressed_write(at, &refs).unwrap();
            prop_assert_eq!(out.chunks.first().map_or(at, |c| c.byte_address), at);
            let fed: u64 = out.chunks.iter().map(|c| u64::from(c.feedback_bytes)).sum();
            if !out.zone_finished {
                prop_assert_eq!(wp(&ssd, 0), at + fed);
            }
            if padding && !out.chunks.is_empty() {
                prop_assert_eq!((at + fed) % LBA_BYTES, 0);
            }
            let mut buf = vec![0u8; raws.iter().map(Vec::len).sum()];
            if !out.chunks.is_empty() {
                let read = ssd.decompressed_read_multi(at, fed, &mut buf).unwrap();
                prop_assert_eq!(read.chunks.len(), out.chunks.len());
                prop_assert_eq!(&buf[..read.filled_bytes], &raws[..out.chunks.len()].concat()[..]);
            }
            placed.extend(out.chunks.iter().copied().zip(raws.into_iter()));
        }
        for (chunk, raw) in &placed {
            prop_assert_eq!(&dr(&mut ssd, chunk.byte_address, chunk.feedback_bytes).unwrap(), raw);
            let off = dr(&mut ssd, chunk.byte_address + 1, chunk.feedback_bytes);
            let refused = matches!(off, Err(EmuError::IllegalRead { .. }));
            prop_assert!(refused, "read one byte into a chunk: {:?}", off);
        }
    }
}

//! How much grouping by deathtime can gain, on the model device (the bound on GDT's gain).
//!
//! GDT groups pages by a deathtime predicted from their write history. Its gain is capped by
//! how predictable deaths are, so these tests run the real space (GDT placement, greedy-until-
//! zone victims) on one recorded write-back stream with three kinds of write history:
//! - *real*: the last four write times, as the buffer pool stamps them;
//! - *rate oracle*: the page's true mean rewrite interval over the whole stream, the best any
//!   estimator from past writes can know (a page written at random times with a fixed rate has
//!   no better predictor of its next write);
//! - *clairvoyant*: the write's actual death, known from the future of the stream.
//!
//! Streams: zipfian page writes straight to the device, and YCSB-A-like accesses (half
//! updates) through a CLOCK buffer pool of 10% of the pages that writes dirty pages back on
//! eviction, as Table 1 runs. Through the pool the hottest pages stay cached; the write-backs
//! that reach the device come from pages whose rates differ little, and each write's death is
//! nearly memoryless. Measured at `gdt_gain_is_bounded_by_the_write_rate_through_a_pool`'s
//! scale and at 2048 zones x 32 slots (docs/internals/gc.md "What GDT can gain"): the rate oracle
//! gains 2-3% through the pool at zipf 0.8-1.2, the clairvoyant oracle halves DB WAF; on direct
//! writes the real history gains 6% (zipf 0.8) to 19% (1.2), close to the rate oracle.
use flashemu::rng::SplitMix64;

use super::model_device::write_described;
use crate::device::WritePurpose;
use crate::space::placement::WRITE_HISTORY_LEN;
use crate::space::{
    Lsn, PageDesc, PlacementKind, Space, SpaceOptions, VictimPolicyKind, SLOT_BYTES,
};

const SLOTS_PER_ZONE: u32 = 32;
const ZONES: u32 = 1024;
const OPEN_ZONES: u32 = 16;
const BATCH_PAGES: usize = 64;

fn options(placement: PlacementKind, policy: VictimPolicyKind) -> SpaceOptions {
    let zone_bytes = u64::from(SLOTS_PER_ZONE) * SLOT_BYTES;
    SpaceOptions {
        data_offset_bytes: 0,
        data_bytes: zone_bytes * u64::from(ZONES),
        zone_bytes,
        zone_stride_bytes: zone_bytes,
        max_open_zones: OPEN_ZONES,
        gc_free_zones_low: 3,
        gc_free_zones_high: 4,
        gc_reserve_zones: 2,
        placement_handles: 0,
        placement,
        policy,
        nowa: None,
        artifact: crate::space::ArtifactOptions::default(),
    }
}

/// Zipfian page choice with the ranks scattered over the page ids.
struct Zipf {
    cdf: Vec<f64>,
    page_of_rank: Vec<u32>,
}

impl Zipf {
    fn new(pages: usize, theta: f64, rng: &mut SplitMix64) -> Zipf {
        assert!(pages > 1 && theta > 0.0);
        let mut cdf: Vec<f64> = (1..=pages).map(|r| (r as f64).powf(-theta)).collect();
        let mut sum = 0.0;
        for c in cdf.iter_mut() {
            sum += *c;
            *c = sum;
        }
        cdf.iter_mut().for_each(|c| *c /= sum);
        let mut page_of_rank: Vec<u32> = (0..pages as u32).collect();
        for i in (1..pages).rev() {
            page_of_rank.swap(i, rng.below(i as u64 + 1) as usize);
        }
        Zipf { cdf, page_of_rank }
    }

    fn sample(&self, rng: &mut SplitMix64) -> u32 {
        let u = rng.below(1 << 53) as f64 / (1u64 << 53) as f64;
        let rank = self.cdf.partition_point(|&c| c < u).min(self.cdf.len() - 1);
        self.page_of_rank[rank]
    }
}

/// `writes` zipfian page writes.
fn direct_stream(pages: usize, theta: f64, writes: usize, seed: u64) -> Vec<u32> {
    let mut rng = SplitMix64::new(seed);
    let zipf = Zipf::new(pages, theta, &mut rng);
    (0..writes).map(|_| zipf.sample(&mut rng)).collect()
}

/// The write-backs of zipfian accesses (half of them updates) through a CLOCK pool of
/// `cache_pages`: a dirty page is written when it is evicted.
fn pool_stream(pages: usize, theta: f64, writes: usize, cache_pages: usize, seed: u64) -> Vec<u32> {
    assert!(cache_pages > 0 && cache_pages < pages);
    let mut rng = SplitMix64::new(seed);
    let zipf = Zipf::new(pages, theta, &mut rng);
    let mut frame_of = vec![u32::MAX; pages];
    // (page, referenced, dirty)
    let mut frames: Vec<(u32, bool, bool)> = Vec::with_capacity(cache_pages);
    let (mut hand, mut out) = (0usize, Vec::with_capacity(writes));
    // Bound: every miss past the warm-up evicts; a dirty eviction is one write-back, and
    // half the accesses dirty their page, so 64 accesses per write-back is far beyond need.
    for _ in 0..writes.saturating_mul(64) {
        if out.len() == writes {
            break;
        }
        let (page, update) = (zipf.sample(&mut rng), rng.below(2) == 0);
        match frame_of[page as usize] {
            u32::MAX if frames.len() < cache_pages => {
                frame_of[page as usize] = frames.len() as u32;
                frames.push((page, true, update));
            }
            u32::MAX => {
                // Second chance: at most one sweep clears every reference bit.
                while frames[hand].1 {
                    frames[hand].1 = false;
                    hand = (hand + 1) % cache_pages;
                }
                let (evicted, _, dirty) = frames[hand];
                if dirty {
                    out.push(evicted);
                }
                frame_of[evicted as usize] = u32::MAX;
                frame_of[page as usize] = hand as u32;
                frames[hand] = (page, true, update);
                hand = (hand + 1) % cache_pages;
            }
            frame => {
                let f = &mut frames[frame as usize];
                f.1 = true;
                f.2 |= update;
            }
        }
    }
    assert_eq!(out.len(), writes, "the pool wrote back too little");
    out
}

/// What the written page's history tells GDT.
#[derive(Debug, Clone, Copy, PartialEq)]
enum History {
    Real,
    RateOracle,
    Clairvoyant,
}

/// Per position of `stream`: the write times a history of kind `kind` shows (time = position
/// + `start`, newest first).
fn histories(stream: &[u32], pages: usize, kind: History, start: u64) -> Vec<[u64; 4]> {
    let mut next = vec![usize::MAX; stream.len()];
    let mut seen = vec![usize::MAX; pages];
    let mut writes_of = vec![0u64; pages];
    for (i, &p) in stream.iter().enumerate().rev() {
        next[i] = seen[p as usize];
        seen[p as usize] = i;
        writes_of[p as usize] += 1;
    }
    let mut real = vec![[0u64; WRITE_HISTORY_LEN]; pages];
    let lived = |now: u64, life: u64| [now, now.saturating_sub(life.max(1)).max(1), 0, 0];
    let mut out = Vec::with_capacity(stream.len());
    for (i, &p) in stream.iter().enumerate() {
        let now = start + i as u64;
        let h = &mut real[p as usize];
        *h = [now, h[0], h[1], h[2]];
        out.push(match kind {
            History::Real => *h,
            History::RateOracle => lived(now, stream.len() as u64 / writes_of[p as usize]),
            History::Clairvoyant if next[i] == usize::MAX => [now, 0, 0, 0],
            History::Clairvoyant => lived(now, (next[i] - i) as u64),
        });
    }
    out
}

/// Steady DB WAF of `stream` (after 2x the capacity) on a space at 90% fill.
fn db_waf(
    stream: &[u32],
    placement: PlacementKind,
    policy: VictimPolicyKind,
    kind: History,
) -> f64 {
    let mut space = Space::new(options(placement, policy)).expect("valid options");
    let pages = (space.capacity_slots() * 9 / 10) as usize;
    let mut lsn: Lsn = 0;
    let desc = |pid: u64, history: [u64; 4]| PageDesc {
        write_history: history,
        ..PageDesc::plain(pid, WritePurpose::UserEviction)
    };
    let fill: Vec<u64> = (0..pages as u64).collect();
    for chunk in fill.chunks(BATCH_PAGES) {
        let descs: Vec<PageDesc> = chunk.iter().map(|&p| desc(p, [p + 1, 0, 0, 0])).collect();
        write_described(&mut space, &descs, &mut lsn).expect("fill fits");
    }
    let history = histories(stream, pages, kind, pages as u64 + 1);
    let warmup = 2 * space.capacity_slots() as usize;
    let mut warm = None;
    for (at, chunk) in stream.chunks(BATCH_PAGES).enumerate() {
        let mut descs: Vec<PageDesc> = Vec::with_capacity(BATCH_PAGES);
        for (k, &p) in chunk.iter().enumerate() {
            // A batch writes a page once (the pool's batches hold distinct pages).
            if !descs.iter().any(|d| d.pid == u64::from(p)) {
                descs.push(desc(u64::from(p), history[at * BATCH_PAGES + k]));
            }
        }
        write_described(&mut space, &descs, &mut lsn).expect("the space keeps up");
        if warm.is_none() && (at + 1) * BATCH_PAGES >= warmup {
            warm = Some(space.counters());
        }
    }
    space.check_invariants().expect("invariants hold");
    let steady = space.counters().since(&warm.expect("the stream passes the warm-up"));
    steady.db_waf().expect("user writes were measured")
}

/// (random placement with greedy victims, GDT real, GDT rate oracle, GDT clairvoyant).
fn compare(stream: &[u32]) -> [f64; 4] {
    let gdt = |kind| db_waf(stream, PlacementKind::Gdt, VictimPolicyKind::GreedyUntilZone, kind);
    let random = PlacementKind::Random { seed: 1 };
    [
        db_waf(stream, random, VictimPolicyKind::Greedy, History::Real),
        gdt(History::Real),
        gdt(History::RateOracle),
        gdt(History::Clairvoyant),
    ]
}

fn pages() -> usize {
    (u64::from(SLOTS_PER_ZONE) * u64::from(ZONES) * 9 / 10) as usize
}

/// Zipfian writes straight to the device: rates differ by orders of magnitude, and the
/// real history gets most of what knowing them gains.
#[test]
fn gdt_gains_on_direct_zipfian_writes_about_what_the_write_rate_allows() {
    let stream = direct_stream(pages(), 0.99, 10 * pages(), 0x6D71);
    let [random, real, rate, clairvoyant] = compare(&stream);
    eprintln!("direct zipf 0.99: random {random:.3}, GDT {real:.3}, rate oracle {rate:.3}, clairvoyant {clairvoyant:.3}");
    assert!(real < random * 0.95, "GDT {real:.3} vs random {random:.3}");
    assert!(real < rate * 1.06, "GDT {real:.3} vs rate oracle {rate:.3}");
    assert!(clairvoyant < random * 0.7, "clairvoyant {clairvoyant:.3} vs {random:.3}");
}

/// Through a 10% pool: even the true write rate of every page gains little, while the
/// clairvoyant oracle still halves DB WAF (the machinery can group; the deaths are not
/// predictable from the past).
#[test]
fn gdt_gain_is_bounded_by_the_write_rate_through_a_pool() {
    let stream = pool_stream(pages(), 0.8, 10 * pages(), pages() / 10, 0x6D72);
    let [random, real, rate, clairvoyant] = compare(&stream);
    eprintln!("pool zipf 0.8: random {random:.3}, GDT {real:.3}, rate oracle {rate:.3}, clairvoyant {clairvoyant:.3}");
    assert!(rate > random * 0.94, "rate oracle {rate:.3} vs random {random:.3}");
    assert!(real > random * 0.94, "GDT {real:.3} vs random {random:.3}");
    assert!(clairvoyant < random * 0.7, "clairvoyant {clairvoyant:.3} vs {random:.3}");
}

//! Wafer's I/O batch sizes chosen from a device profile's cost terms (001 sec. 5 applied to
//! this engine's B-tree rather than to an LSM).
//!
//! Each choice prices one 4 KiB page of the work it governs as a function of the batch size b,
//! with the cost terms the profile fitted, following what the store does with a batch:
//! - out of place (oop/append.rs) a batch is appended as one run and synced:
//!   beta(1) + (s(1) + sync(b)) / b per page;
//! - in place (buffer/doublewrite.rs) a header and the b copies go to the doublewrite area as
//!   one run, synced, then the b pages to their random homes submitted together, which the
//!   device serves min(b, queue depth) deep, synced again before the area is reused:
//!   ((b + 1) beta(1) + s(1) + sync(b + 1)) / b + s(d) + beta(d) + sync(b) / b per page;
//! - a GC batch reads b scattered live pages together (t(d) + alpha(d) each) and appends them
//!   as one synced run: beta(1) + (s(1) + sync(b)) / b more.
//!
//! sync(n) is the profile's fdatasync latency after n pages (nothing when it was not measured).
//! The choice is the smallest candidate (powers of two, and the cap itself) whose cost is
//! within [`WITHIN`] of the cheapest: past it a larger batch buys little and costs pool frames
//! and latency. Beyond the profile's largest k the costs are taken as flat (nothing was
//! measured there).
use serde::Serialize;

use super::{Costs, DeviceProfile};

/// A batch within this share of the cheapest candidate's cost per page is good enough.
pub const WITHIN: f64 = 0.10;
const PAGE_BYTES: u64 = 4096;
/// The largest batch considered: 16 MiB of pages.
const BATCH_PAGES_MAX: u64 = 4096;
/// Eviction writes back at most this share of the pool at once, so misses meanwhile still
/// find clean frames.
const POOL_SHARE_DIVISOR: u64 = 8;

/// What the engine's configuration bounds the choices by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub pool_pages: u64,
    /// Doublewrite slots in place (`data_offset_bytes / 4096 - 1`); None out of place.
    pub doublewrite_slots: Option<u64>,
    /// Device operations the io_uring submission keeps in flight (`device::uring`).
    pub queue_depth: u64,
}

impl Bounds {
    pub fn of(options: &wafer::Options, queue_depth: u64) -> Bounds {
        let in_place = options.write_mode == wafer::WriteMode::InPlace && options.doublewrite;
        Bounds {
            pool_pages: options.buffer_pool_bytes / PAGE_BYTES,
            doublewrite_slots: in_place
                .then(|| (options.data_offset_bytes / PAGE_BYTES).saturating_sub(1)),
            queue_depth: queue_depth.max(1),
        }
    }
}

/// One parameter: today's value, the model's, and the per-page costs behind them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Choice {
    pub parameter: &'static str,
    /// Where it lives: an `Options` field the command can set, or a constant it cannot.
    pub location: &'static str,
    pub is_option: bool,
    pub current: u64,
    pub chosen: u64,
    pub current_us_per_page: f64,
    pub chosen_us_per_page: f64,
    pub why: String,
}

/// The profile's costs at depth `d`, flat beyond its largest k.
fn at(profile: &DeviceProfile, d: u64) -> Costs {
    let k_max = profile.fits.iter().map(|f| u64::from(f.k)).max().unwrap_or(1);
    profile.costs_at(d.clamp(1, k_max) as u32)
}

/// Powers of two up to `cap`, and `cap` itself: a cap such as the doublewrite area's 255 slots
/// is a batch the engine can run, one page short of the next power of two.
fn candidates(cap: u64) -> Vec<u64> {
    let cap = cap.clamp(1, BATCH_PAGES_MAX);
    let mut all: Vec<u64> =
        (0..=BATCH_PAGES_MAX.ilog2()).map(|i| 1u64 << i).take_while(|&b| b <= cap).collect();
    if !cap.is_power_of_two() {
        all.push(cap);
    }
    all
}

/// The smallest candidate within `WITHIN` of the cheapest, with its cost.
fn pick(cap: u64, cost: &dyn Fn(u64) -> f64) -> (u64, f64) {
    let all: Vec<(u64, f64)> = candidates(cap).into_iter().map(|b| (b, cost(b))).collect();
    let best = all.iter().map(|c| c.1).fold(f64::INFINITY, f64::min);
    all.into_iter().find(|c| c.1 <= best * (1.0 + WITHIN)).unwrap_or((1, cost(1)))
}

/// Microseconds of one sequential run of `pages` pages: one setup, then beta per page.
fn run_us(profile: &DeviceProfile, pages: u64) -> f64 {
    let one = at(profile, 1);
    one.s_us + pages as f64 * one.beta_us
}

/// Microseconds of one doublewrite chunk of `pages` pages (doublewrite.rs `write_chunk`):
/// header and copies as one run, sync, the homes min(pages, depth) deep, sync.
fn doublewrite_chunk_us(profile: &DeviceProfile, bounds: &Bounds, pages: u64) -> f64 {
    let home = at(profile, pages.min(bounds.queue_depth));
    run_us(profile, pages + 1)
        + profile.sync_us(pages + 1)
        + pages as f64 * (home.s_us + home.beta_us)
        + profile.sync_us(pages)
}

/// Per-page cost of an eviction batch of `b` pages, microseconds.
pub fn eviction_us(profile: &DeviceProfile, bounds: &Bounds, b: u64) -> f64 {
    let b = b.max(1);
    let batch_us = match bounds.doublewrite_slots {
        None => run_us(profile, b) + profile.sync_us(b),
        Some(slots) => {
            // A batch larger than the area goes through it in chunks of `slots` pages.
            let slots = slots.max(1);
            let full_chunks = b / slots;
            let rest = b % slots;
            let rest_us = if rest > 0 { doublewrite_chunk_us(profile, bounds, rest) } else { 0.0 };
            full_chunks as f64 * doublewrite_chunk_us(profile, bounds, slots) + rest_us
        }
    };
    batch_us / b as f64
}

/// Per-page cost of a GC batch of `b` pages (read scattered, appended as one synced run).
pub fn gc_us(profile: &DeviceProfile, bounds: &Bounds, b: u64) -> f64 {
    let b = b.max(1);
    let read = at(profile, b.min(bounds.queue_depth));
    read.t_us + read.alpha_us + (run_us(profile, b) + profile.sync_us(b)) / b as f64
}

/// The two batch sizes that are `Options` fields, chosen for `options`' write mode and pool.
pub fn choose(profile: &DeviceProfile, options: &wafer::Options, queue_depth: u64) -> Vec<Choice> {
    let bounds = Bounds::of(options, queue_depth);
    let mut cap = (bounds.pool_pages / POOL_SHARE_DIVISOR).max(1);
    if let Some(slots) = bounds.doublewrite_slots {
        cap = cap.min(slots.max(1));
    }
    let evict = |b: u64| eviction_us(profile, &bounds, b);
    let (chosen, chosen_us) = pick(cap, &evict);
    let current = options.eviction_batch_pages as u64;
    let one = at(profile, 1);
    let eviction = Choice {
        parameter: "eviction batch (pages)",
        location: "Options::eviction_batch_pages",
        is_option: true,
        current,
        chosen,
        current_us_per_page: evict(current.max(1)),
        chosen_us_per_page: chosen_us,
        why: format!(
            "each batch's run setup s(1) = {:.1} us and {} fdatasync of {:.0} us are spread over \
             b pages against beta(1) = {:.2} us each{}; capped at {cap} (1/{POOL_SHARE_DIVISOR} \
             of the pool{})",
            one.s_us,
            if bounds.doublewrite_slots.is_some() { "two" } else { "one" },
            profile.sync_us(chosen),
            one.beta_us,
            if bounds.doublewrite_slots.is_some() {
                ", and in place the b home writes go min(b, queue depth) deep: s(d) + beta(d)"
            } else {
                ""
            },
            if bounds.doublewrite_slots.is_some() { ", the doublewrite slots" } else { "" },
        ),
    };
    let gc = |b: u64| gc_us(profile, &bounds, b);
    let (gc_chosen, gc_chosen_us) = pick(BATCH_PAGES_MAX, &gc);
    let gc_current = u64::from(options.out_of_place.gc_batch_pages);
    let deep = at(profile, bounds.queue_depth);
    let gc_choice = Choice {
        parameter: "GC read batch (pages)",
        location: "Options::out_of_place.gc_batch_pages",
        is_option: true,
        current: gc_current,
        chosen: gc_chosen,
        current_us_per_page: gc(gc_current.max(1)),
        chosen_us_per_page: gc_chosen_us,
        why: format!(
            "a batch's scattered reads go min(b, queue depth) deep: t(1) + alpha(1) = {:.1} us \
             one deep, {:.1} us {} deep; its append spreads s(1) and a sync over b pages",
            one.t_us + one.alpha_us,
            deep.t_us + deep.alpha_us,
            bounds.queue_depth
        ),
    };
    vec![eviction, gc_choice]
}

/// The depth past which reads (t + alpha) or writes (s + beta) of single random pages stop
/// getting cheaper: what the model says of the concurrency constants no option sets.
pub fn saturating_depth(profile: &DeviceProfile, write: bool) -> (u64, f64) {
    let k_max = profile.fits.iter().map(|f| u64::from(f.k)).max().unwrap_or(1);
    let cost = |d: u64| {
        let c = at(profile, d);
        if write {
            c.s_us + c.beta_us
        } else {
            c.t_us + c.alpha_us
        }
    };
    pick(k_max, &cost)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mqssd::{DeviceInfo, Op, Point, SyncCost, SyncPoint};

    /// A profile from exact affine costs: setups falling as 1/sqrt(k), flat page costs.
    fn profile() -> DeviceProfile {
        profile_of(|k| Costs {
            s_us: 60.0 / f64::from(k).sqrt(),
            beta_us: 1.3,
            t_us: 78.0 / f64::from(k).sqrt(),
            alpha_us: 3.5,
        })
    }

    fn profile_of(costs: fn(u32) -> Costs) -> DeviceProfile {
        let mut points = Vec::new();
        for k in [1u32, 2, 4, 8, 16, 32] {
            let c = costs(k);
            for r in [0.001, 0.01, 0.1, 1.0] {
                let w = c.write_bytes_per_s(r, 4096);
                points.push(Point { op: Op::Write, k, r, bytes_per_s: w });
                points.push(Point { op: Op::Read, k, r, bytes_per_s: c.read_bytes_per_s(r, 4096) });
            }
        }
        let info = DeviceInfo {
            device: "synthetic".into(),
            page_bytes: 4096,
            file_bytes: 0,
            direct: true,
            seconds_per_point: 0.0,
        };
        DeviceProfile::fit(info, points).expect("fit")
    }

    #[test]
    fn out_of_place_batches_grow_until_the_setup_is_amortised() {
        let p = profile();
        let options = wafer::Options::production().out_of_place();
        let choices = choose(&p, &options, 128);
        let evict = &choices[0];
        // beta = 1.3 us: s / b within 10% of the cheapest needs b of several hundred pages.
        assert!(evict.chosen >= 256 && evict.chosen <= options.buffer_pool_bytes / 4096 / 8);
        assert!(evict.chosen_us_per_page <= evict.current_us_per_page);
        assert!(evict.chosen.is_power_of_two());
        let gc = &choices[1];
        assert!(gc.chosen >= 32, "reads need depth: {gc:?}");
    }

    #[test]
    fn in_place_is_capped_by_the_doublewrite_area() {
        let p = profile();
        let options = wafer::Options::production();
        let choices = choose(&p, &options, 128);
        let slots = options.data_offset_bytes / 4096 - 1;
        assert!(choices[0].chosen <= slots, "{:?}", choices[0]);
        // A batch of one page writes one home at a time: the most expensive.
        let bounds = Bounds::of(&options, 128);
        assert!(eviction_us(&p, &bounds, 1) > eviction_us(&p, &bounds, choices[0].chosen));
    }

    #[test]
    fn reads_saturate_within_the_profiled_depths() {
        let (depth, cost) = saturating_depth(&profile(), false);
        assert!((1..=32).contains(&depth) && cost > 0.0);
    }

    /// Costs the same at every depth (s 50, beta 1, t 80, alpha 4 us) and a sync of 2000 us
    /// whatever was written: every figure below is worked by hand.
    fn flat_with_sync() -> DeviceProfile {
        let mut p = profile_of(|_| Costs { s_us: 50.0, beta_us: 1.0, t_us: 80.0, alpha_us: 4.0 });
        let points = vec![SyncPoint { pages: 1, us: 2000.0 }, SyncPoint { pages: 64, us: 2000.0 }];
        p.sync = Some(SyncCost::fit(points).expect("fit"));
        p
    }

    fn close(got: f64, want: f64) -> bool {
        (got / want - 1.0).abs() < 1e-6
    }

    #[test]
    fn batches_are_priced_with_the_syncs_the_store_does() {
        let p = flat_with_sync();
        let oop = Bounds { pool_pages: 1 << 20, doublewrite_slots: None, queue_depth: 128 };
        // One run of 64 pages, one sync: (50 + 64 + 2000) / 64.
        assert!(close(eviction_us(&p, &oop, 64), 2114.0 / 64.0));
        let dw = Bounds { doublewrite_slots: Some(255), ..oop };
        // Header + 64 copies (50 + 65), sync, 64 homes (64 x 51), sync.
        let b64 = 115.0 + 2000.0 + 3264.0 + 2000.0;
        assert!(close(eviction_us(&p, &dw, 64), b64 / 64.0));
        // 300 pages: a chunk of 255 and one of 45.
        let chunk = |n: f64| 50.0 + (n + 1.0) + 2000.0 + n * 51.0 + 2000.0;
        assert!(close(eviction_us(&p, &dw, 300), (chunk(255.0) + chunk(45.0)) / 300.0));
        // GC: 128 reads (80 + 4 each), one run of 128 and a sync.
        assert!(close(gc_us(&p, &oop, 128), 84.0 + (50.0 + 128.0 + 2000.0) / 128.0));
    }

    #[test]
    fn a_sync_per_batch_moves_the_in_place_choice_to_larger_batches() {
        let mut options = wafer::Options::production();
        options.buffer_pool_bytes = 1 << 30;
        let synced = choose(&flat_with_sync(), &options, 128);
        // Cheapest at the 255-slot cap: (50 + 256 + 2000 + 255 x 51 + 2000) / 255 = 67.89 us;
        // 128 pages cost (50 + 129 + 2000 + 128 x 51 + 2000) / 128 = 83.65 us, not within 10%.
        assert_eq!(synced[0].chosen, 255);
        assert!(close(synced[0].chosen_us_per_page, 17311.0 / 255.0));
        let bounds = Bounds::of(&options, 128);
        assert!(close(eviction_us(&flat_with_sync(), &bounds, 128), 10707.0 / 128.0));
        let mut unsynced = flat_with_sync();
        unsynced.sync = None;
        // Without syncs: 52 + 51 / b, cheapest 52.2 at 255; 16 is within 10% (55.19), 8 not.
        assert_eq!(choose(&unsynced, &options, 128)[0].chosen, 16);
    }

    #[test]
    fn the_cap_itself_is_a_candidate() {
        assert_eq!(candidates(255).last(), Some(&255));
        assert_eq!(candidates(256).last(), Some(&256));
        assert_eq!(candidates(0), vec![1]);
    }
}

//! GC simulations: uniform random page overwrites at a fixed fill, greedy (or cost-benefit) GC,
//! the DB WAF reached in steady state compared with the analytic LRU/FIFO cleaning model:
//!
//!   X = exp(-a (1 - X)),  WAF = 1 / (1 - X),  a = capacity slots / live pages
//!
//! (X: valid ratio of the cleaned zone when zones are cleaned oldest-first; greedy can only do
//! better under uniform writes, so the model is an upper bound). Figures measured by these
//! tests are in docs/results/engine.md.
use flashemu::rng::SplitMix64;

use super::model_device::{gc_until_satisfied, write_batch, write_described};
use crate::device::WritePurpose;
use crate::space::{
    snapshot, Lsn, PageDesc, PageId, PlacementKind, Space, SpaceError, SpaceOptions,
    VictimPolicyKind, SLOT_BYTES,
};

/// The LRU cleaning model's WAF for space ratio `a` > 1.
pub fn lru_model_waf(a: f64) -> f64 {
    assert!(a > 1.0);
    // Fixed-point iteration from 0 climbs monotonically to the root below 1; the contraction
    // factor is a * X < 1, so a bounded number of steps reaches 1e-12.
    let mut x = 0.0f64;
    for _ in 0..100_000 {
        let next = (-a * (1.0 - x)).exp();
        if (next - x).abs() < 1e-12 {
            x = next;
            break;
        }
        x = next;
    }
    1.0 / (1.0 - x)
}

fn sim_options(slots_per_zone: u32, zone_count: u32, policy: VictimPolicyKind) -> SpaceOptions {
    SpaceOptions {
        data_offset_bytes: 0,
        data_bytes: u64::from(slots_per_zone) * u64::from(zone_count) * SLOT_BYTES,
        zone_bytes: u64::from(slots_per_zone) * SLOT_BYTES,
        zone_stride_bytes: u64::from(slots_per_zone) * SLOT_BYTES,
        max_open_zones: 4,
        gc_free_zones_low: 3,
        gc_free_zones_high: 4,
        gc_reserve_zones: 2,
        placement_handles: 0,
        placement: crate::space::PlacementKind::Separate,
        policy,
        nowa: None,
        artifact: crate::space::ArtifactOptions::default(),
    }
}

#[derive(Debug)]
struct SimResult {
    waf_steady: f64,
    waf_cumulative: f64,
    victim_valid_ratio: f64,
    victims: u64,
    /// The model at the nominal a = capacity / live.
    model_waf: f64,
    /// The model at the space data can really use: capacity minus the time-average of empty
    /// zones (GC keeps low..high of them) and the open zones' unwritten tails.
    model_waf_effective: f64,
    a_effective: f64,
}

/// Fills `live` pages, then overwrites uniformly at random in batches of `batch` until `writes`
/// user pages were written; steady state is measured after 2x the capacity was written.
fn simulate(
    space: &mut Space,
    live: u64,
    writes: u64,
    batch: usize,
    seed: u64,
) -> Result<SimResult, SpaceError> {
    let mut rng = SplitMix64::new(seed);
    let mut lsn: Lsn = 0;
    let mut pids: Vec<PageId> = Vec::with_capacity(batch);
    let mut next_fill = 0u64;
    let warmup = 2 * space.capacity_slots();
    let mut warm = None;
    let mut written = 0u64;
    let (mut aside_sum, mut aside_samples) = (0u128, 0u64);
    while written < writes {
        pids.clear();
        for _ in 0..batch {
            let pid = if next_fill < live {
                next_fill += 1;
                next_fill - 1
            } else {
                rng.below(live)
            };
            pids.push(pid);
        }
        write_batch(space, &pids, &mut lsn)?;
        written += batch as u64;
        if warm.is_none() && written >= warmup {
            warm = Some(space.counters());
        }
        if warm.is_some() {
            aside_sum += u128::from(slots_aside(space));
            aside_samples += 1;
        }
    }
    let aside_mean = aside_sum as f64 / aside_samples.max(1) as f64;
    let end = space.counters();
    let steady = end.since(&warm.unwrap_or_default());
    Ok(SimResult {
        waf_steady: steady.db_waf().unwrap_or(0.0),
        waf_cumulative: end.db_waf().unwrap_or(0.0),
        victim_valid_ratio: steady.mean_victim_valid_ratio().unwrap_or(0.0),
        victims: end.gc_victims,
        model_waf: lru_model_waf(space.capacity_slots() as f64 / live as f64),
        model_waf_effective: lru_model_waf(
            (space.capacity_slots() as f64 - aside_mean) / live as f64,
        ),
        a_effective: (space.capacity_slots() as f64 - aside_mean) / live as f64,
    })
}

/// Slots that cannot hold data right now: empty zones and open zones' tails.
fn slots_aside(space: &Space) -> u64 {
    let spz = u64::from(space.slots_per_zone());
    let tails: u64 = space
        .zones()
        .iter()
        .filter(|(_, z)| z.state() == crate::space::ZoneState::Open)
        .map(|(_, z)| spz - u64::from(z.write_ptr_slots()))
        .sum();
    u64::from(space.empty_zone_count()) * spz + tails
}

#[test]
fn lru_model_matches_known_points() {
    // a = 1/0.9: X = 0.8069, WAF = 5.178 (000 sec. 7.2 sees 75% valid victims at 90% fill
    // on a skewed workload with greedy GC).
    let waf = lru_model_waf(1.0 / 0.9);
    assert!((waf - 5.178).abs() < 0.005, "{waf}");
    // a = 2: X = 0.2032, WAF = 1.255.
    assert!((lru_model_waf(2.0) - 1.255).abs() < 0.01);
}

/// 90% fill, 256 zones of 64 slots, 2M page writes (122x the capacity).
/// Measured (seed 0x90F1): steady DB WAF 5.51 (victims 81.9% valid); the LRU model gives 5.18
/// at the nominal a = 1/0.9 and 5.94 at the space data can really use (a_eff = 1.095: GC keeps
/// 3-4 zones empty and two zones are open), so greedy beats oldest-first cleaning by 7%.
#[test]
fn greedy_at_90_percent_fill_runs_indefinitely_below_the_lru_bound() {
    let mut space = Space::new(sim_options(64, 256, VictimPolicyKind::Greedy)).unwrap();
    let live = space.capacity_slots() * 9 / 10;
    let r = simulate(&mut space, live, 2_000_000, 16, 0x90F1).unwrap();
    eprintln!("greedy 90%: {r:?}");
    space.check_invariants().unwrap();
    assert_eq!(space.live_slots(), live);
    // Greedy beats oldest-first cleaning over the same usable space.
    assert!(r.waf_steady > 1.5 && r.waf_steady < r.model_waf_effective, "{r:?}");
    // WAF = 1 / (1 - victim valid ratio) once the fill phase is behind.
    let implied = 1.0 / (1.0 - r.victim_valid_ratio);
    assert!((implied - r.waf_steady).abs() / r.waf_steady < 0.05, "{r:?}");
}

#[test]
fn cost_benefit_at_90_percent_fill_runs_indefinitely() {
    let mut space = Space::new(sim_options(64, 256, VictimPolicyKind::CostBenefit)).unwrap();
    let live = space.capacity_slots() * 9 / 10;
    let r = simulate(&mut space, live, 300_000, 16, 0xCB90).unwrap();
    eprintln!("cost-benefit 90%: {r:?}");
    space.check_invariants().unwrap();
    // Under uniform writes age carries no information; the LFS cleaner approaches the LRU model.
    assert!(r.waf_steady > 1.5 && r.waf_steady < r.model_waf_effective * 1.1, "{r:?}");
}

/// Hot/cold overwrites (90% of writes to 10% of the pages) at 80% fill, each page's write
/// history kept as the buffer pool stamps it. Steady DB WAF with `placement` and `policy`.
fn hot_cold_waf(placement: PlacementKind, policy: VictimPolicyKind, seed: u64) -> (f64, Space) {
    let options = SpaceOptions { max_open_zones: 8, placement, ..sim_options(64, 256, policy) };
    let mut space = Space::new(options).unwrap();
    let live = space.capacity_slots() * 8 / 10;
    let hot = live / 10;
    let mut rng = SplitMix64::new(seed);
    let mut history = vec![[0u64; 4]; live as usize];
    let (mut lsn, mut clock) = (0 as Lsn, 0u64);
    let (writes, warmup) = (400_000u64, 2 * space.capacity_slots());
    let mut warm = None;
    let mut next_fill = 0u64;
    // Bound: writes / 16 batches.
    for written in (0..writes).step_by(16) {
        let mut descs = Vec::with_capacity(16);
        while descs.len() < 16 {
            let pid = if next_fill < live {
                next_fill += 1;
                next_fill - 1
            } else if rng.below(10) < 9 {
                rng.below(hot)
            } else {
                hot + rng.below(live - hot)
            };
            if descs.iter().any(|d: &PageDesc| d.pid == pid) {
                continue;
            }
            clock += 1;
            let h = &mut history[pid as usize];
            *h = [clock, h[0], h[1], h[2]];
            descs.push(PageDesc {
                write_history: *h,
                ..PageDesc::plain(pid, WritePurpose::UserEviction)
            });
        }
        write_described(&mut space, &descs, &mut lsn).unwrap();
        if warm.is_none() && written >= warmup {
            warm = Some(space.counters());
        }
    }
    space.check_invariants().unwrap();
    assert_eq!(space.live_slots(), live);
    let steady = space.counters().since(&warm.unwrap_or_default());
    (steady.db_waf().unwrap_or(0.0), space)
}

/// Grouping by deathtime on a skewed workload (hot pages live ~1.5k writes, cold ~118k).
/// Measured (seed 0x6D7): one user zone with greedy GC 2.96; GDT with greedy-until-zone 2.77
/// (greedy settles where hot and cold zones are taken at the same valid ratio, ~63%, so
/// separating them gains little); cost-benefit order 2.01 without GDT, 1.80 with it (hot zones
/// are left to die before they are taken).
#[test]
fn gdt_separates_hot_from_cold_and_cuts_db_waf() {
    let greedy = |p| hot_cold_waf(p, VictimPolicyKind::Greedy, 0x6D7).0;
    let (plain, gdt_greedy) = (greedy(PlacementKind::Separate), {
        hot_cold_waf(PlacementKind::Gdt, VictimPolicyKind::GreedyUntilZone, 0x6D7).0
    });
    let plain_cb = hot_cold_waf(PlacementKind::Separate, VictimPolicyKind::CostBenefit, 0x6D7).0;
    let (gdt, space) =
        hot_cold_waf(PlacementKind::Gdt, VictimPolicyKind::CostBenefitUntilZone, 0x6D7);
    let edt = space.counters().edt;
    eprintln!(
        "hot/cold 80%: DB WAF greedy {plain:.3}, GDT greedy-until-zone {gdt_greedy:.3}, \
         cost-benefit {plain_cb:.3}, GDT cost-benefit-until-zone {gdt:.3}; {edt:?}"
    );
    assert!(gdt_greedy < plain, "GDT {gdt_greedy:.3} vs greedy {plain:.3}");
    assert!(gdt < plain * 0.7 && gdt < plain_cb * 0.95, "GDT {gdt:.3}, {plain:.3}, {plain_cb:.3}");
    // Most deaths of the hot set fall near their prediction; the error is bounded.
    assert!(edt.predictions > 100_000 && edt.within_2x * 4 > edt.predictions, "{edt:?}");
}

/// Live data beyond the space: the write that does not fit fails with OutOfSpace, every page
/// written before keeps its location, and freeing pages makes room again.
#[test]
fn live_data_beyond_capacity_fails_typed_and_loses_nothing() {
    let mut space = Space::new(sim_options(8, 40, VictimPolicyKind::Greedy)).unwrap();
    let mut rng = SplitMix64::new(0x0F5);
    let mut lsn = 0;
    let mut model = std::collections::HashSet::new();
    let mut next_pid = 0u64;
    let mut failed = None;
    // Mix overwrites (which GC can reclaim) with new pages until the space is exhausted.
    for _ in 0..10_000 {
        let pid = if next_pid == 0 || rng.below(3) == 0 { next_pid } else { rng.below(next_pid) };
        match write_batch(&mut space, &[pid], &mut lsn) {
            Ok(()) => {
                next_pid = next_pid.max(pid + 1);
                model.insert(pid);
            }
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
        space.check_invariants().unwrap();
    }
    let Some(SpaceError::OutOfSpace { live_slots, capacity_slots, .. }) = failed else {
        panic!("expected out of space, got {failed:?}");
    };
    eprintln!("out of space at {live_slots} live of {capacity_slots} slots");
    // What is lost is only the reserve GC keeps and the open zones' unwritten tails.
    assert!(live_slots >= capacity_slots * 8 / 10, "{live_slots} of {capacity_slots}");
    space.check_invariants().unwrap();
    assert_eq!(space.live_slots(), model.len() as u64);
    // GC may have moved pages; each is still mapped, to a slot that names it.
    for pid in &model {
        let loc = space.location(*pid).unwrap();
        assert_eq!(space.reverse().get(loc.zone, loc.slot), crate::space::SlotEntry::Page(*pid));
    }
    // Free a quarter of the pages: writes go on.
    for pid in 0..next_pid / 4 {
        lsn += 1;
        space.free_pid(pid, lsn);
    }
    for pid in 0..next_pid / 8 {
        write_batch(&mut space, &[pid], &mut lsn).unwrap();
    }
    space.check_invariants().unwrap();
}

/// After a long run, the state rebuilt from a map snapshot equals the incremental one (map,
/// reverse map, valid counts; full zones keep their write pointer; open zones are sealed), and
/// the rebuilt space goes on running.
#[test]
fn rebuild_from_snapshot_equals_incremental_state_and_keeps_running() {
    let options = sim_options(16, 64, VictimPolicyKind::Greedy);
    let mut space = Space::new(options).unwrap();
    let live = space.capacity_slots() * 85 / 100;
    simulate(&mut space, live, 40_000, 8, 0x4EB1).unwrap();
    let bytes = snapshot::encode(space.map(), 1, space.zone_count(), space.slots_per_zone(), None);
    let snap = snapshot::decode(&bytes, space.zone_count(), space.slots_per_zone()).unwrap();
    let (mut rebuilt, to_reset) = Space::rebuild_from_map(options, snap.map).unwrap();
    rebuilt.check_invariants().unwrap();
    assert_eq!(rebuilt.map(), space.map());
    for (z, zone) in rebuilt.zones().iter() {
        let before = space.zones().get(z);
        assert_eq!(zone.valid_slots(), before.valid_slots(), "zone {z}");
        for slot in 0..space.slots_per_zone() {
            let (a, b) = (rebuilt.reverse().get(z, slot), space.reverse().get(z, slot));
            if let crate::space::SlotEntry::Page(_) = b {
                assert_eq!(a, b, "zone {z} slot {slot}");
            }
        }
        if zone.valid_slots() == 0 {
            assert!(to_reset.contains(&z));
        } else {
            assert_eq!(zone.write_ptr_slots(), space.slots_per_zone());
        }
    }
    let mut lsn = 0;
    gc_until_satisfied(&mut rebuilt, &mut lsn).unwrap();
    let r = simulate(&mut rebuilt, live, 40_000, 8, 0x4EB2).unwrap();
    assert!(r.waf_steady > 1.0);
    rebuilt.check_invariants().unwrap();
}

/// The full table: fills 80-95%, both policies, 4M page writes each on 256 zones x 64 slots.
/// `cargo test -p wafer --release oop::sim_tests::waf_table -- --ignored --nocapture`
#[test]
#[ignore = "long; run with --release --ignored --nocapture for the docs/results/engine.md table"]
fn waf_table() {
    for policy in [VictimPolicyKind::Greedy, VictimPolicyKind::CostBenefit] {
        for fill_pct in [80u64, 85, 90, 95] {
            let mut space = Space::new(sim_options(64, 256, policy)).unwrap();
            let live = space.capacity_slots() * fill_pct / 100;
            let r = simulate(&mut space, live, 4_000_000, 16, 0x7AB1E + fill_pct).unwrap();
            space.check_invariants().unwrap();
            eprintln!(
                "{policy:?} fill {fill_pct}%: steady DB WAF {:.3} (cumulative {:.3}), victim valid {:.3}, \
                 victims {}, LRU model WAF {:.3} nominal / {:.3} effective (a_eff {:.4})",
                r.waf_steady, r.waf_cumulative, r.victim_valid_ratio, r.victims, r.model_waf,
                r.model_waf_effective, r.a_effective
            );
        }
    }
}

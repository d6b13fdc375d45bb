//! Model-based test: random batches, overwrites, frees, abandoned slots, GC cycles (some
//! interleaved with user overwrites of the pages being moved), a log whose durable point lags,
//! and crashes, checked after every step against a HashMap model and the full invariant check.
//!
//! The model also keeps what every slot of the device holds (which page version, garbage, or
//! trimmed) and the log of map records. A crash recovers the map from the last checkpoint plus
//! the *durable* records only, and checks that every recovered page still finds its own version
//! at its slot: this is the end-to-end test of "a zone is reused only after the records that
//! moved its pages out are durable". Seeds are printed; a failure names the seed.
use std::collections::{HashMap, HashSet};

use crate::rng::SplitMix64;

/// The group GC copyback goes to in these tests (user batches use even groups).
const GC_GROUP: u32 = 1;
use crate::device::WritePurpose;
use crate::space::{
    snapshot, Location, Lsn, PageId, PageMap, SlotRun, Space, SpaceError, SpaceOptions,
    VictimPolicyKind, ZoneId,
};

/// What a device slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Content {
    /// The version of `page` whose map record has this LSN.
    Page(PageId, Lsn),
    /// Written with data no record points at (reserved, abandoned, or not yet committed).
    Garbage,
    /// Trimmed / reset since.
    Trimmed,
}

struct Harness {
    space: Space,
    model: HashMap<PageId, (Location, Lsn)>,
    /// Slots handed out since their zone's last reset: none may be handed out twice.
    written: HashSet<(ZoneId, u32)>,
    device: HashMap<(ZoneId, u32), Content>,
    /// Map as of the last checkpoint (all durable), and the records since: (lsn, page, where).
    checkpoint: HashMap<PageId, (Location, Lsn)>,
    log: Vec<(Lsn, PageId, Option<Location>)>,
    lsn: Lsn,
    durable: Lsn,
    rng: SplitMix64,
    pid_count: u64,
    victims: u64,
    crashes: u64,
    /// NoWA compensations over the run (the space restarts its counters at each crash).
    compensations: u64,
}

impl Harness {
    fn note_runs(&mut self, runs: &[SlotRun]) {
        for run in runs {
            for slot in run.first_slot..run.first_slot + run.slots {
                assert!(
                    self.written.insert((run.zone, slot)),
                    "slot {}/{slot} handed out twice",
                    run.zone
                );
                self.device.insert((run.zone, slot), Content::Garbage);
            }
        }
    }

    fn flush(&mut self, durable: Lsn) {
        assert!(durable <= self.lsn);
        self.durable = self.durable.max(durable);
        let spz = self.space.slots_per_zone();
        for zone in self.space.release_ready(self.durable) {
            assert!(
                self.model.values().all(|(l, _)| l.zone != zone),
                "released zone {zone} holds a page"
            );
            self.written.retain(|(z, _)| *z != zone);
            for slot in 0..spz {
                self.device.insert((zone, slot), Content::Trimmed);
            }
        }
    }

    /// Reserve, retrying once after a full flush when zones only wait for the log.
    fn reserve(
        &mut self,
        n: u32,
        group: u32,
        purpose: WritePurpose,
    ) -> Result<Vec<SlotRun>, SpaceError> {
        // The rooms the concatenated layout goes by are the runs reserved, NoWA's detours into
        // other groups' zones included.
        let reserve = |space: &mut Space| {
            let rooms = space.stretch_rooms(&[], group, n);
            let runs = space.reserve_batch(n, group, purpose)?;
            let slots: Vec<u32> = runs.iter().map(|r| r.slots).collect();
            assert_eq!(rooms, slots, "stretch rooms differ from the reserved runs");
            Ok(runs)
        };
        let runs = match reserve(&mut self.space) {
            Err(SpaceError::AwaitingDurability { lsn_needed }) => {
                assert!(lsn_needed <= self.lsn);
                self.flush(self.lsn);
                reserve(&mut self.space)
            }
            other => other,
        }?;
        self.note_runs(&runs);
        Ok(runs)
    }

    /// Page data written and synced at `loc`, record logged, map updated.
    fn commit(&mut self, pid: PageId, loc: Location) {
        self.lsn += 1;
        let old = self.space.commit(pid, loc, self.lsn);
        assert_eq!(old, self.model.insert(pid, (loc, self.lsn)).map(|(l, _)| l));
        self.device.insert((loc.zone, loc.slot), Content::Page(pid, self.lsn));
        self.log.push((self.lsn, pid, Some(loc)));
    }

    fn user_batch(&mut self) {
        let n = 1 + self.rng.below(6) as u32;
        let group = self.rng.below(3) as u32 * 2; // groups 0, 2, 4: GC uses 1
        let mut attempts = 0;
        let runs = loop {
            match self.reserve(n, group, WritePurpose::UserEviction) {
                Ok(runs) => break runs,
                Err(SpaceError::NeedsGc { .. }) if attempts < self.space.zone_count() => {
                    attempts += 1;
                    assert!(self.gc(), "NeedsGc but no victim");
                }
                // Live pages stay below 60% of the area: never final here.
                Err(e) => panic!("unexpected {e:?} with {} live pages", self.model.len()),
            }
        };
        for run in &runs {
            for i in 0..run.slots {
                let loc = run.location(i, 4096);
                if self.rng.below(20) == 0 {
                    self.space.abandon(loc); // a write that failed before its record
                    continue;
                }
                let pid = self.rng.below(self.pid_count);
                self.commit(pid, loc);
            }
        }
    }

    fn free(&mut self) {
        let pid = self.rng.below(self.pid_count);
        self.lsn += 1;
        let old = self.model.remove(&pid).map(|(l, _)| l);
        assert_eq!(self.space.free_pid(pid, self.lsn), old);
        self.log.push((self.lsn, pid, None));
    }

    /// One GC cycle; false when there was no victim.
    fn gc(&mut self) -> bool {
        let before = self.space.counters().nowa_compensations;
        let Some(plan) = self.space.plan_gc() else { return false };
        self.victims += 1;
        self.compensations += self.space.counters().nowa_compensations - before;
        // Every victim's pages (several with a NoWA compensation), victim by victim in slot
        // order.
        let victim_index = |zone| plan.zones.iter().position(|z| *z == zone);
        let mut expected: Vec<_> = self
            .model
            .iter()
            .filter(|(_, (l, _))| victim_index(l.zone).is_some())
            .map(|(p, (l, _))| (*p, *l))
            .collect();
        expected.sort_by_key(|(_, l)| (victim_index(l.zone), l.slot));
        assert_eq!(plan.valid, expected, "plan of zones {:?}", plan.zones);
        // Sometimes the user overwrites a page while GC is moving it.
        if !plan.valid.is_empty() && self.rng.below(3) == 0 {
            let (pid, _) = plan.valid[self.rng.below(plan.valid.len() as u64) as usize];
            if let Ok(runs) = self.reserve(1, 0, WritePurpose::UserEviction) {
                self.commit(pid, runs[0].location(0, 4096));
            }
        }
        // The LSN of this cycle's last move: all the mechanism knows. Earlier invalidations of
        // the victim's slots are the space's to remember.
        let mut last_move_lsn = 0;
        for (pid, from) in &plan.valid {
            let runs = match self.reserve(1, GC_GROUP, WritePurpose::GcCopy) {
                Ok(runs) => runs,
                Err(e) => panic!("GC reserve failed: {e:?}"),
            };
            let to = runs[0].location(0, 4096);
            if self.model.get(pid).map(|(l, _)| l) == Some(from) {
                self.commit(*pid, to); // commit_gc_move's success path
                last_move_lsn = self.lsn;
            } else {
                assert!(!self.space.commit_gc_move(*pid, *from, to, self.lsn + 1));
            }
        }
        for zone in &plan.zones {
            self.space.finish_victim(*zone, last_move_lsn);
        }
        true
    }

    fn check(&self) {
        self.space.check_invariants().unwrap();
        assert_eq!(self.space.map().mapped_count(), self.model.len() as u64);
        for (pid, (loc, lsn)) in &self.model {
            assert_eq!(self.space.location(*pid), Some(*loc), "page {pid}");
            assert_eq!(self.device.get(&(loc.zone, loc.slot)), Some(&Content::Page(*pid, *lsn)));
        }
        assert!(self.space.open_zone_count() <= self.space.options().max_open_zones);
    }

    /// Crash with the log durable up to `self.durable`, then recover: checkpoint map + durable
    /// records, through a snapshot, rebuilt; every recovered page must find its version.
    fn crash(&mut self) {
        self.crashes += 1;
        let mut recovered = self.checkpoint.clone();
        for (lsn, pid, loc) in self.log.iter().filter(|(lsn, _, _)| *lsn <= self.durable) {
            match loc {
                Some(loc) => recovered.insert(*pid, (*loc, *lsn)),
                None => recovered.remove(pid),
            };
        }
        for (pid, (loc, lsn)) in &recovered {
            assert_eq!(
                self.device.get(&(loc.zone, loc.slot)),
                Some(&Content::Page(*pid, *lsn)),
                "after the crash page {pid} (record lsn {lsn}, durable {}) lost its data at {loc:?}",
                self.durable
            );
        }
        let mut map = PageMap::new();
        for (pid, (loc, _)) in &recovered {
            map.set(*pid, *loc);
        }
        let zones = self.space.zone_count();
        let spz = self.space.slots_per_zone();
        // NoWA's model goes through the snapshot too (saved now, as a checkpoint would).
        let nowa = self.space.nowa_snapshot();
        let bytes = snapshot::encode(&map, self.durable, zones, spz, nowa.as_ref());
        let snap = snapshot::decode(&bytes, zones, spz).unwrap();
        assert_eq!(snap.nowa, nowa);
        let (mut rebuilt, to_reset) =
            Space::rebuild_from_map(*self.space.options(), snap.map).unwrap();
        if let Some(saved) = &snap.nowa {
            rebuilt.restore_nowa(saved);
            let model = rebuilt.nowa().map(|m| m.live_units()).unwrap_or(0);
            let zones_with_data = rebuilt.zones().count(|z| z.valid_slots() > 0);
            assert!(model > 0 || zones_with_data == 0, "restored model lost every unit");
        }
        rebuilt.check_invariants().unwrap();
        for (z, zone) in rebuilt.zones().iter() {
            let live = recovered.values().filter(|(l, _)| l.zone == z).count() as u32;
            assert_eq!(zone.valid_slots(), live, "zone {z}");
            assert_eq!(to_reset.contains(&z), live == 0);
        }
        // Reset zones are trimmed; the others are sealed whole: nothing appends there again.
        self.written.retain(|(z, _)| !to_reset.contains(z));
        for z in &to_reset {
            for slot in 0..spz {
                self.device.insert((*z, slot), Content::Trimmed);
            }
        }
        for (z, zone) in rebuilt.zones().iter() {
            for slot in 0..zone.write_ptr_slots() {
                self.written.insert((z, slot));
            }
        }
        self.space = rebuilt;
        self.model = recovered.clone();
        self.checkpoint = recovered;
        self.log.clear();
        self.durable = self.lsn;
    }
}

/// Options drawn from `rng`: small zones, few of them, and each placement, policy and GC
/// variant on some seeds. The draw order is fixed, so a seed names the same run.
fn random_options(rng: &mut SplitMix64) -> SpaceOptions {
    let slots_per_zone = 2 + rng.below(7) as u32;
    let zone_count = 24 + rng.below(24) as u32;
    let max_open_zones = 2 + rng.below(3) as u32;
    let options = SpaceOptions {
        data_offset_bytes: 4096 * rng.below(4),
        data_bytes: u64::from(zone_count * slots_per_zone) * 4096,
        zone_bytes: u64::from(slots_per_zone) * 4096,
        zone_stride_bytes: u64::from(slots_per_zone) * 4096,
        max_open_zones,
        gc_free_zones_low: 3,
        gc_free_zones_high: 4 + rng.below(3) as u32,
        gc_reserve_zones: 2,
        // FDP hints on half the seeds: one handle per open zone.
        placement_handles: if rng.below(2) == 0 { 0 } else { max_open_zones as u16 },
        placement: if rng.below(2) == 0 {
            crate::space::PlacementKind::Separate
        } else {
            crate::space::PlacementKind::Random { seed: rng.next_u64() }
        },
        policy: if rng.below(2) == 0 {
            VictimPolicyKind::Greedy
        } else {
            VictimPolicyKind::CostBenefit
        },
        // NoWA on a third of the seeds, with a unit of 1-4 zones and a budget the data
        // exceeds, so routing and compensations run.
        nowa: (rng.below(3) == 0).then(|| crate::space::nowa::NoWaOptions {
            unit_slots: u64::from(slots_per_zone) * (1 + rng.below(4)),
            budget_units: 2 + rng.below(8) as u32,
            mode: if rng.below(2) == 0 {
                crate::space::nowa::NoWaMode::Unit
            } else {
                crate::space::nowa::NoWaMode::Group
            },
        }),
        // The artifact's GC bursts and survivors among user writes on a quarter of the seeds
        // each (drawn last, so the other draws of a seed are as before).
        artifact: crate::space::ArtifactOptions {
            gc_burst: rng.below(4) == 0,
            gc_with_user: rng.below(4) == 0,
            ..crate::space::ArtifactOptions::default()
        },
    };
    // The run sizes its page ids by this geometry: the options must give the drawn zones.
    assert_eq!(
        (options.zone_count(), options.slots_per_zone()),
        (zone_count, slots_per_zone),
        "{options:?}"
    );
    options
}

impl Harness {
    /// One random action (GC first whenever the space needs it), then the full check.
    fn step(&mut self) {
        // The flush below draws a durable LSN up to the last one handed out.
        assert!(self.durable <= self.lsn, "durable {} past lsn {}", self.durable, self.lsn);
        let action = self.rng.below(100);
        if self.space.needs_gc() {
            let _ = self.gc();
        } else if action < 60 {
            self.user_batch();
        } else if action < 70 {
            self.free();
        } else if action < 80 {
            let _ = self.gc();
        } else if action < 97 {
            let durable = self.durable + self.rng.below(self.lsn - self.durable + 1);
            self.flush(durable);
        } else {
            self.crash();
        }
        self.check();
    }
}

fn run(seed: u64, steps: u32) -> u64 {
    eprintln!("model seed {seed:#x}");
    let mut rng = SplitMix64::new(seed);
    let options = random_options(&mut rng);
    // Live pages up to ~60% of the area: GC always has room.
    let pid_count = options.data_bytes / 4096 * 6 / 10;
    let mut h = Harness {
        space: Space::new(options).unwrap(),
        model: HashMap::new(),
        written: HashSet::new(),
        device: HashMap::new(),
        checkpoint: HashMap::new(),
        log: Vec::new(),
        lsn: 0,
        durable: 0,
        rng,
        pid_count,
        victims: 0,
        crashes: 0,
        compensations: 0,
    };
    for _ in 0..steps {
        h.step();
    }
    let compensations = h.compensations;
    eprintln!(
        "  {steps} steps, {} victims, {} crashes, lsn {}, {compensations} NoWA compensations",
        h.victims, h.crashes, h.lsn
    );
    assert!(h.victims > 0, "the run never collected");
    compensations
}

#[test]
fn space_matches_the_model_and_survives_crashes() {
    let mut compensations = 0;
    for case in 0..12u64 {
        compensations += run(0x5ACE_0000 + case, 1500);
    }
    assert!(compensations > 0, "no seed ran a NoWA compensation");
}

#[test]
#[ignore = "long: cargo test -p wafer --release space::tests::model::long -- --ignored"]
fn long_model_run() {
    let mut compensations = 0;
    for case in 0..200u64 {
        compensations += run(0x1_5ACE_0000 + case, 20_000);
    }
    assert!(compensations > 0, "no seed ran a NoWA compensation");
}

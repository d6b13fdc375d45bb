//! Model-based test: random batches, overwrites, frees, abandoned slots, GC cycles (some
//! interleaved with user overwrites of the pages being moved), delayed log durability, and
//! recovery rebuilds, checked after every step against a HashMap model and the full invariant
//! check. Seeds are printed; a failure names the seed and the step.
use std::collections::{HashMap, HashSet};

use flashemu::rng::SplitMix64;

use super::driver::GC_GROUP;
use crate::device::WritePurpose;
use crate::space::{
    snapshot, Location, Lsn, PageId, SlotRun, Space, SpaceError, SpaceOptions, VictimPolicyKind,
    ZoneId,
};

struct Harness {
    space: Space,
    model: HashMap<PageId, Location>,
    /// Slots handed out since their zone's last reset: none may be handed out twice.
    written: HashSet<(ZoneId, u32)>,
    lsn: Lsn,
    durable: Lsn,
    rng: SplitMix64,
    pid_count: u64,
    victims: u64,
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
            }
        }
    }

    fn flush(&mut self, durable: Lsn) {
        assert!(durable <= self.lsn);
        self.durable = self.durable.max(durable);
        for zone in self.space.release_ready(self.durable) {
            assert!(
                self.model.values().all(|l| l.zone != zone),
                "released zone {zone} holds a page"
            );
            self.written.retain(|(z, _)| *z != zone);
        }
    }

    /// Reserve, retrying once after a full flush when zones only wait for the log.
    fn reserve(
        &mut self,
        n: u32,
        group: u32,
        purpose: WritePurpose,
    ) -> Result<Vec<SlotRun>, SpaceError> {
        let runs = match self.space.reserve_batch(n, group, purpose) {
            Err(SpaceError::AwaitingDurability { lsn_needed }) => {
                assert!(lsn_needed <= self.lsn);
                self.flush(self.lsn);
                self.space.reserve_batch(n, group, purpose)
            }
            other => other,
        }?;
        self.note_runs(&runs);
        Ok(runs)
    }

    fn user_batch(&mut self) {
        let n = 1 + self.rng.below(6) as u32;
        let group = self.rng.below(3) as u32 * 2; // groups 0, 2, 4: GC uses 1
        let before = self.space.counters();
        let mut attempts = 0;
        let runs = loop {
            match self.reserve(n, group, WritePurpose::UserEviction) {
                Ok(runs) => break runs,
                Err(SpaceError::NeedsGc { .. }) if attempts < self.space.zone_count() => {
                    attempts += 1;
                    assert!(self.gc(), "NeedsGc but no victim");
                    self.flush(self.lsn);
                }
                Err(SpaceError::OutOfSpace { .. }) => {
                    // Live pages stay below 60% of the area: never final here.
                    panic!("out of space with {} live pages", self.model.len());
                }
                Err(e) => panic!("unexpected {e:?}"),
            }
        };
        let _ = before;
        for run in &runs {
            for i in 0..run.slots {
                let loc = run.location(i, 4096);
                if self.rng.below(20) == 0 {
                    self.space.abandon(loc); // a write that failed before its record
                    continue;
                }
                let pid = self.rng.below(self.pid_count);
                self.lsn += 1;
                let old = self.space.commit(pid, loc, self.lsn);
                assert_eq!(old, self.model.insert(pid, loc));
            }
        }
    }

    fn free(&mut self) {
        let pid = self.rng.below(self.pid_count);
        self.lsn += 1;
        assert_eq!(self.space.free_pid(pid, self.lsn), self.model.remove(&pid));
    }

    /// One GC cycle; false when there was no victim.
    fn gc(&mut self) -> bool {
        let Some(plan) = self.space.plan_gc() else { return false };
        self.victims += 1;
        let mut expected: Vec<_> =
            self.model.iter().filter(|(_, l)| l.zone == plan.zone).map(|(p, l)| (*p, *l)).collect();
        expected.sort_by_key(|(_, l)| l.slot);
        assert_eq!(plan.valid, expected, "plan of zone {}", plan.zone);
        // Sometimes the user overwrites a page while GC is moving it.
        if !plan.valid.is_empty() && self.rng.below(3) == 0 {
            let (pid, _) = plan.valid[self.rng.below(plan.valid.len() as u64) as usize];
            if let Ok(runs) = self.reserve(1, 0, WritePurpose::UserEviction) {
                self.lsn += 1;
                let loc = runs[0].location(0, 4096);
                self.space.commit(pid, loc, self.lsn);
                self.model.insert(pid, loc);
            }
        }
        for (pid, from) in &plan.valid {
            let runs = match self.reserve(1, GC_GROUP, WritePurpose::GcCopy) {
                Ok(runs) => runs,
                Err(e) => panic!("GC reserve failed: {e:?}"),
            };
            let to = runs[0].location(0, 4096);
            self.lsn += 1;
            let moved = self.space.commit_gc_move(*pid, *from, to, self.lsn);
            assert_eq!(moved, self.model.get(pid) == Some(from));
            if moved {
                self.model.insert(*pid, to);
            }
        }
        self.space.finish_victim(plan.zone, self.lsn);
        true
    }

    fn check(&self) {
        self.space.check_invariants().unwrap();
        assert_eq!(self.space.map().mapped_count(), self.model.len() as u64);
        for (pid, loc) in &self.model {
            assert_eq!(self.space.location(*pid), Some(*loc), "page {pid}");
        }
        assert!(self.space.open_zone_count() <= self.space.options().max_open_zones);
    }

    /// Checkpoint + crash + recovery: the map through a snapshot, the rest rebuilt.
    fn recover(&mut self) {
        let zones = self.space.zone_count();
        let spz = self.space.slots_per_zone();
        let bytes = snapshot::encode(self.space.map(), self.lsn, zones, spz);
        let snap = snapshot::decode(&bytes, zones, spz).unwrap();
        let (rebuilt, to_reset) = Space::rebuild_from_map(*self.space.options(), snap.map).unwrap();
        rebuilt.check_invariants().unwrap();
        for (z, zone) in rebuilt.zones().iter() {
            assert_eq!(zone.valid_slots(), self.space.zones().get(z).valid_slots(), "zone {z}");
            assert_eq!(to_reset.contains(&z), zone.valid_slots() == 0);
        }
        // Recovery resets every unreferenced zone and seals the others whole.
        self.written.retain(|(z, _)| !to_reset.contains(z));
        for (z, zone) in rebuilt.zones().iter() {
            for slot in zone.write_ptr_slots().min(spz)..spz {
                assert!(!self.written.contains(&(z, slot)));
            }
            for slot in 0..zone.write_ptr_slots() {
                self.written.insert((z, slot));
            }
        }
        self.space = rebuilt;
        self.durable = self.lsn;
    }
}

fn run(seed: u64, steps: u32) {
    eprintln!("model seed {seed:#x}");
    let mut rng = SplitMix64::new(seed);
    let slots_per_zone = 2 + rng.below(7) as u32;
    let zone_count = 24 + rng.below(24) as u32;
    let max_open_zones = 2 + rng.below(3) as u32;
    let options = SpaceOptions {
        data_offset_bytes: 4096 * rng.below(4),
        data_bytes: u64::from(zone_count * slots_per_zone) * 4096,
        zone_bytes: u64::from(slots_per_zone) * 4096,
        max_open_zones,
        gc_free_zones_low: 3,
        gc_free_zones_high: 4 + rng.below(3) as u32,
        gc_reserve_zones: 2,
        placement_handles: rng.below(3) as u16,
        policy: if rng.below(2) == 0 {
            VictimPolicyKind::Greedy
        } else {
            VictimPolicyKind::CostBenefit
        },
    };
    // Live pages up to ~60% of the area: GC always has room.
    let pid_count = u64::from(zone_count * slots_per_zone) * 6 / 10;
    let mut h = Harness {
        space: Space::new(options).unwrap(),
        model: HashMap::new(),
        written: HashSet::new(),
        lsn: 0,
        durable: 0,
        rng,
        pid_count,
        victims: 0,
    };
    for step in 0..steps {
        let action = h.rng.below(100);
        if h.space.needs_gc() {
            let _ = h.gc();
        } else if action < 60 {
            h.user_batch();
        } else if action < 70 {
            h.free();
        } else if action < 80 {
            let _ = h.gc();
        } else if action < 97 {
            let durable = h.durable + h.rng.below(h.lsn - h.durable + 1);
            h.flush(durable);
        } else {
            h.recover();
        }
        h.check();
        let _ = step;
    }
    eprintln!("  {steps} steps, {} victims, lsn {}", h.victims, h.lsn);
    assert!(h.victims > 0, "the run never collected");
}

#[test]
fn space_matches_the_model_under_random_operations() {
    for case in 0..12u64 {
        run(0x5ACE_0000 + case, 1500);
    }
}

#[test]
#[ignore = "long: cargo test -p wafer --release space::tests::model::long -- --ignored"]
fn long_model_run() {
    for case in 0..200u64 {
        run(0x1_5ACE_0000 + case, 20_000);
    }
}

//! Page packing (000 sec. 3.2, Figure 3): compressed pages of one write group are placed into
//! 4 KiB slots by best-fit decreasing, so no page crosses a slot's end and every page is read
//! with exactly one aligned 4 KiB read. Pages start at multiples of [`PACK_ALIGN_BYTES`] (the
//! map's offset unit), so each takes its size rounded up to that.
use super::map::{PACK_ALIGN_BYTES, SLOT_BYTES};

/// Pages one packing call takes at most (bounds the bin search: a write-back batch or a GC
/// chunk is far smaller).
pub const PACK_PAGES_MAX: usize = 1 << 16;

/// One slot of a packing: (page index, offset in the slot) for each page in it, by offset.
pub type SlotFill = Vec<(u32, u16)>;

/// Bytes a page of `stored_bytes` takes in a slot.
pub fn footprint(stored_bytes: u16) -> u16 {
    assert!(stored_bytes >= 1 && u64::from(stored_bytes) <= SLOT_BYTES);
    stored_bytes.div_ceil(PACK_ALIGN_BYTES) * PACK_ALIGN_BYTES
}

/// Best-fit decreasing: pages by size, largest first, each into the slot whose free tail is
/// the smallest that still holds it (else a new slot). `sizes[i]` is page i's stored size.
/// Slots come out in the order they were opened; pages within a slot by offset.
pub fn best_fit_decreasing(sizes: &[u16]) -> Vec<SlotFill> {
    assert!(sizes.len() <= PACK_PAGES_MAX, "{} pages to pack", sizes.len());
    let mut order: Vec<u32> = (0..sizes.len() as u32).collect();
    // Ties by index: the same batch always packs the same way.
    order.sort_by_key(|&i| (std::cmp::Reverse(sizes[i as usize]), i));
    let slot_bytes = SLOT_BYTES as u16;
    let mut fills: Vec<SlotFill> = Vec::new();
    let mut used: Vec<u16> = Vec::new();
    for i in order {
        let need = footprint(sizes[i as usize]);
        let best = (0..fills.len())
            .filter(|&s| slot_bytes - used[s] >= need)
            .min_by_key(|&s| (slot_bytes - used[s], s));
        let s = best.unwrap_or_else(|| {
            fills.push(Vec::new());
            used.push(0);
            fills.len() - 1
        });
        fills[s].push((i, used[s]));
        used[s] += need;
        assert!(u64::from(used[s]) <= SLOT_BYTES);
    }
    assert!(fills.len() <= sizes.len());
    fills
}

/// Compressed pages end to end (packing off, 000's comparison for packing; and blob pages):
/// in the given order, at [`PACK_ALIGN_BYTES`], so a page may run on into the next slot and is
/// read with one two-slot read. Never past a run's end: `run_slots` are the runs the stretch
/// will be reserved as (each in one zone, from [`crate::space::Space::stretch_rooms`]), and where
/// the next page would cross into the next run, the rest of the run stays empty. A slot may
/// hold no page start (only the tail of one that crosses into it).
///
/// The layout never takes more slots than pages: a page starts at the latest at the slot its
/// index names, since a skipped tail is shorter than the page that skipped it. So runs of
/// `sizes.len()` slots in all always hold it.
pub fn concatenate(sizes: &[u16], run_slots: &[u32]) -> Vec<SlotFill> {
    assert!(sizes.len() <= PACK_PAGES_MAX, "{} pages to pack", sizes.len());
    let total_slots: u64 = run_slots.iter().map(|r| u64::from(*r)).sum();
    assert!(total_slots >= sizes.len() as u64, "{run_slots:?} for {} pages", sizes.len());
    let mut run_ends = run_slots.iter().scan(0u64, |end, r| {
        *end += u64::from(*r) * SLOT_BYTES;
        Some(*end)
    });
    let mut run_end_bytes = run_ends.next().unwrap_or(0);
    let mut at_bytes = 0u64;
    let mut fills: Vec<SlotFill> = Vec::new();
    for (i, &size) in sizes.iter().enumerate() {
        // Bound: each pass moves to the next run, and there are `run_slots.len()` of them.
        for _ in 0..run_slots.len() {
            if at_bytes + u64::from(size) <= run_end_bytes {
                break;
            }
            at_bytes = run_end_bytes;
            run_end_bytes = run_ends.next().unwrap_or(run_end_bytes);
        }
        assert!(at_bytes + u64::from(size) <= run_end_bytes, "page {i} fits no run");
        let slot = (at_bytes / SLOT_BYTES) as usize;
        fills.resize_with(fills.len().max(slot + 1), Vec::new);
        fills[slot].push((i as u32, (at_bytes % SLOT_BYTES) as u16));
        at_bytes += u64::from(footprint(size));
    }
    fills.resize_with(at_bytes.div_ceil(SLOT_BYTES) as usize, Vec::new);
    assert!(fills.len() <= sizes.len(), "{} slots for {} pages", fills.len(), sizes.len());
    fills
}

/// One page per slot, in the given order (no packing: uncompressed pages, or packing off).
pub fn one_per_slot(pages: usize) -> Vec<SlotFill> {
    assert!(pages <= PACK_PAGES_MAX);
    (0..pages as u32).map(|i| vec![(i, 0)]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Every page lands exactly once, inside its slot, aligned, without overlapping another;
        /// the slot count is at least any packing's lower bound and within any-fit's bound.
        #[test]
        fn packing_never_crosses_a_slot_and_loses_nothing(
            sizes in proptest::collection::vec(1u16..=4096, 0..200)
        ) {
            let fills = best_fit_decreasing(&sizes);
            let mut seen = vec![false; sizes.len()];
            for fill in &fills {
                prop_assert!(!fill.is_empty());
                let mut end = 0u16;
                for &(i, offset) in fill {
                    prop_assert!(!seen[i as usize], "page {} twice", i);
                    seen[i as usize] = true;
                    prop_assert_eq!(offset % PACK_ALIGN_BYTES, 0);
                    prop_assert!(offset >= end, "overlap");
                    end = offset + footprint(sizes[i as usize]);
                    prop_assert!(u64::from(end) <= SLOT_BYTES, "crosses the slot's end");
                }
            }
            prop_assert!(seen.iter().all(|s| *s));
            // Lower bounds of any packing: the volume, and one slot per page over half a slot.
            let volume: u64 = sizes.iter().map(|s| u64::from(footprint(*s))).sum();
            let big = sizes.iter().filter(|s| u64::from(footprint(**s)) > SLOT_BYTES / 2).count();
            let lower = (volume.div_ceil(SLOT_BYTES) as usize).max(big);
            prop_assert!(fills.len() >= lower);
            // Any-fit (BFD is one): a slot is opened only when no open one fits the page, so at
            // most one slot is half full or less, and the slots hold more than half a slot each
            // on average but for one.
            let used = |f: &SlotFill| f.iter().map(|(i, _)| u64::from(footprint(sizes[*i as usize]))).sum::<u64>();
            let half_or_less = fills.iter().filter(|f| used(f) <= SLOT_BYTES / 2).count();
            prop_assert!(half_or_less <= 1, "{} slots half full or less", half_or_less);
            prop_assert!(fills.len() as u64 <= 2 * volume / SLOT_BYTES + 1, "{} slots for {} bytes", fills.len(), volume);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Concatenated pages: every page once, in order, back to back except at a run's end,
        /// crossing at most into the next slot and never into the next run, in no more slots
        /// than pages. Runs as routing cuts them: any sizes, summing to one slot per page.
        #[test]
        fn concatenation_crosses_slots_but_never_runs(
            sizes in proptest::collection::vec(1u16..=4096, 0..200),
            runs in proptest::collection::vec(1u32..8, 0..40),
        ) {
            let run_slots = runs_for(&runs, sizes.len() as u32);
            let fills = concatenate(&sizes, &run_slots);
            let ends: Vec<u64> = run_slots.iter().scan(0u64, |e, r| { *e += u64::from(*r); Some(*e) }).collect();
            let run_of = |slot: u64| ends.iter().position(|e| slot < *e);
            let mut next = 0u32;
            let mut end_bytes = 0u64;
            for (s, fill) in fills.iter().enumerate() {
                for &(i, offset) in fill {
                    prop_assert_eq!(i, next, "pages out of order");
                    next += 1;
                    let start = s as u64 * SLOT_BYTES + u64::from(offset);
                    prop_assert!(start >= end_bytes, "overlap");
                    let end = start + u64::from(sizes[i as usize]);
                    prop_assert!(run_of(start / SLOT_BYTES).is_some());
                    prop_assert_eq!(run_of(start / SLOT_BYTES), run_of((end - 1) / SLOT_BYTES));
                    prop_assert!((end - 1) / SLOT_BYTES <= start / SLOT_BYTES + 1);
                    end_bytes = start + u64::from(footprint(sizes[i as usize]));
                }
            }
            prop_assert_eq!(next as usize, sizes.len());
            prop_assert_eq!(fills.len() as u64, end_bytes.div_ceil(SLOT_BYTES));
            prop_assert!(fills.len() <= sizes.len());
        }
    }

    /// Runs of the given sizes, then as many more of the last size as it takes, the whole cut
    /// to `slots` slots: the shape `Space::stretch_rooms` hands out.
    fn runs_for(runs: &[u32], slots: u32) -> Vec<u32> {
        let mut out = Vec::new();
        let mut left = slots;
        let mut sizes = runs.iter().copied().chain(std::iter::repeat(*runs.last().unwrap_or(&4)));
        while left > 0 {
            let r = sizes.next().unwrap_or(4).min(left);
            out.push(r);
            left -= r;
        }
        out
    }

    #[test]
    fn concatenated_pages_cross_slots_and_pad_at_the_run_end() {
        // 3000 + 3000 bytes: the second page crosses into slot 1. A third of 3000 would cross
        // the first run's end (2 slots): it starts the next run.
        let fills = concatenate(&[3000, 3000, 3000], &[2, 1]);
        assert_eq!(fills, vec![vec![(0, 0), (1, 3008)], vec![], vec![(2, 0)]]);
        // One run of 3 slots takes all three.
        let fills = concatenate(&[3000, 3000, 3000], &[3]);
        assert_eq!(fills, vec![vec![(0, 0), (1, 3008)], vec![(2, 6016 - 4096)], vec![]]);
        // A run of one slot between two: the page that would cross it starts after it.
        let fills = concatenate(&[3000, 3000, 3000, 100], &[1, 1, 2]);
        assert_eq!(fills, vec![vec![(0, 0)], vec![(1, 0)], vec![(2, 0), (3, 3008)]]);
    }

    #[test]
    fn pages_over_half_a_slot_take_one_each() {
        // Found by the property test: seven pages of 2113 bytes need seven slots whatever the
        // volume (4 slots' worth) says; the 1-byte page joins one of them.
        let mut sizes = vec![2113u16; 7];
        sizes.push(1);
        assert_eq!(best_fit_decreasing(&sizes).len(), 7);
    }

    #[test]
    fn figure_3_pages_share_slots() {
        // Four pages compressed to about half and a quarter pack into two slots, not four.
        let fills = best_fit_decreasing(&[2000, 1000, 2000, 1000]);
        assert_eq!(fills.len(), 2);
        assert_eq!(fills[0], vec![(0, 0), (2, 2016)]);
        assert_eq!(fills[1], vec![(1, 0), (3, 1024)]);
        assert_eq!(one_per_slot(3), vec![vec![(0, 0)], vec![(1, 0)], vec![(2, 0)]]);
    }
}

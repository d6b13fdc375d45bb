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
        /// and the slot count is within best-fit decreasing's bound of the volume's lower bound.
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
            let volume: u64 = sizes.iter().map(|s| u64::from(footprint(*s))).sum();
            let lower = volume.div_ceil(SLOT_BYTES) as usize;
            prop_assert!(fills.len() >= lower);
            prop_assert!(fills.len() <= lower * 11 / 9 + 1, "{} slots, volume needs {}", fills.len(), lower);
        }
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

//! The flash pages one read command touches. A sense (tR) loads a whole flash page into its
//! chip's page register; the channel then moves out the 4 KiB slots asked for. So a read pays
//! one sense per distinct flash page, however many of its slots it wants, and one transfer per
//! slot (4 KiB is the model's transfer and ECC unit, as in the write path).

/// One flash page a read touches: which page, how many of its slots the read asked for, and
/// where the command first touched it (senses are issued in that order); the timing model
/// fills in when its sense ends and its channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PageRead {
    pub(super) page: u64,
    pub(super) slots: u64,
    pub(super) first: u64,
    pub(super) sensed_ns: u64,
    pub(super) channel: usize,
}

/// Groups the slots `slot_at(0..blocks)` yields (None: unwritten, no flash work) by flash page
/// (`slots_per_page` consecutive slots), into `pages` in first-touch order. `pages` is scratch
/// space the caller keeps, so a command allocates nothing once it has grown.
pub(super) fn group_by_page(
    pages: &mut Vec<PageRead>,
    blocks: u64,
    slots_per_page: u64,
    slot_at: impl Fn(u64) -> Option<u64>,
) {
    debug_assert!(slots_per_page > 0);
    pages.clear();
    for offset in 0..blocks {
        let Some(slot) = slot_at(offset) else { continue };
        let page = slot / slots_per_page;
        // Reads are mostly sequential in flash: the page is usually the last one seen.
        match pages.last_mut() {
            Some(last) if last.page == page => last.slots += 1,
            _ => pages.push(PageRead { page, slots: 1, first: offset, sensed_ns: 0, channel: 0 }),
        }
    }
    if pages.len() > 1 {
        merge_repeats(pages);
    }
    debug_assert!(pages.iter().map(|p| p.slots).sum::<u64>() <= blocks);
}

/// Merges entries of the same page that were not adjacent (an FTL may map neighbouring LBAs
/// to one page out of order), keeping first-touch order.
fn merge_repeats(pages: &mut Vec<PageRead>) {
    pages.sort_unstable_by_key(|p| (p.page, p.first));
    let mut kept = 0;
    for index in 0..pages.len() {
        let this = pages[index];
        if kept > 0 && pages[kept - 1].page == this.page {
            pages[kept - 1].slots += this.slots;
        } else {
            pages[kept] = this;
            kept += 1;
        }
    }
    pages.truncate(kept);
    pages.sort_unstable_by_key(|p| p.first);
    debug_assert!(pages.windows(2).all(|w| w[0].first < w[1].first));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grouped(slots: &[Option<u64>], slots_per_page: u64) -> Vec<(u64, u64, u64)> {
        let mut pages = Vec::new();
        group_by_page(&mut pages, slots.len() as u64, slots_per_page, |i| slots[i as usize]);
        pages.iter().map(|p| (p.page, p.slots, p.first)).collect()
    }

    #[test]
    fn slots_of_one_page_are_one_sense() {
        assert_eq!(grouped(&[Some(4), Some(5), Some(6), Some(7)], 4), vec![(1, 4, 0)]);
        assert_eq!(grouped(&[Some(3), Some(4)], 4), vec![(0, 1, 0), (1, 1, 1)]);
        assert_eq!(grouped(&[Some(9)], 1), vec![(9, 1, 0)]);
    }

    #[test]
    fn scattered_slots_of_one_page_merge_in_first_touch_order() {
        let slots = [Some(40), Some(2), None, Some(41), Some(3), Some(20)];
        assert_eq!(grouped(&slots, 4), vec![(10, 2, 0), (0, 2, 1), (5, 1, 5)]);
    }

    #[test]
    fn unwritten_slots_cost_nothing() {
        assert_eq!(grouped(&[None, None], 4), vec![]);
        assert_eq!(grouped(&[None, Some(1), None], 4), vec![(0, 1, 1)]);
    }
}

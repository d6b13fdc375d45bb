//! Grouping that respects packing (000 sec. 4.2: a batch's pages are "grouped and page-packed"):
//! each write group of a batch is packed into 4 KiB slots of its own zone, so its last slot is
//! usually part empty, and the more groups a batch is cut into, the more such slots it writes.
//! Where the pages of a group's emptiest slot fit into a group next to it in deathtime order
//! without costing that group a slot, they move there: the batch takes a slot less and those
//! pages still go to the closest range but one. Only groups the batch already writes to take
//! pages, so no zone opens for it.
use super::pack;

/// Moves a batch takes at most (each saves a slot, so a batch of n pages needs fewer than n).
const MOVES_MAX: usize = 1 << 12;

/// `groups[i]` is page i's group, `sizes[i]` its stored bytes, `order` the groups the batch
/// uses from hottest to coldest range. Moves pages between neighbours of `order` while that
/// lowers the slots the batch packs into; returns the moves made as (page, from, to).
pub(super) fn settle(groups: &mut [u32], sizes: &[u16], order: &[u32]) -> Vec<(usize, u32, u32)> {
    assert_eq!(groups.len(), sizes.len());
    assert!(groups.iter().all(|g| order.contains(g)));
    let mut moves = Vec::new();
    if sizes.iter().all(|&s| u64::from(s) >= super::map::SLOT_BYTES) || order.len() < 2 {
        return moves; // whole pages: one per slot whatever the grouping
    }
    'search: while moves.len() < MOVES_MAX {
        for (k, &g) in order.iter().enumerate() {
            let members: Vec<usize> = (0..groups.len()).filter(|&i| groups[i] == g).collect();
            let Some(emptiest) = emptiest_slot(&members, sizes) else { continue };
            let neighbours = [k.checked_sub(1), Some(k + 1)];
            for h in neighbours.into_iter().flatten().filter_map(|n| order.get(n).copied()) {
                if saves_a_slot(groups, sizes, g, h, &emptiest) {
                    for &i in &emptiest {
                        groups[i] = h;
                        moves.push((i, g, h));
                    }
                    continue 'search;
                }
            }
        }
        break;
    }
    moves
}

/// The pages (batch indices) of the least filled slot of a group's packing.
fn emptiest_slot(members: &[usize], sizes: &[u16]) -> Option<Vec<usize>> {
    let own: Vec<u16> = members.iter().map(|&i| sizes[i]).collect();
    let fills = pack::best_fit_decreasing(&own);
    let used = |f: &pack::SlotFill| -> u32 {
        f.iter().map(|&(k, _)| u32::from(pack::footprint(own[k as usize]))).sum()
    };
    let emptiest = fills.iter().min_by_key(|f| used(f))?;
    let pages: Vec<usize> = emptiest.iter().map(|&(k, _)| members[k as usize]).collect();
    // `settle` moves these to a neighbour: a slot of the packing holds at least one page.
    debug_assert!(!pages.is_empty(), "an empty slot in a packing of {} pages", members.len());
    Some(pages)
}

/// Whether moving `pages` from group `from` to `to` packs the two groups into fewer slots.
fn saves_a_slot(groups: &[u32], sizes: &[u16], from: u32, to: u32, pages: &[usize]) -> bool {
    // A move of some pages between two groups (`order` names each group once).
    debug_assert!(from != to && !pages.is_empty(), "{} pages from {from} to {to}", pages.len());
    let sizes_of = |g: u32, with: bool| -> Vec<u16> {
        (0..groups.len())
            .filter(|i| {
                let moved = pages.contains(i);
                (groups[*i] == g && !moved) || (with && moved)
            })
            .map(|i| sizes[i])
            .collect()
    };
    let slots = |s: &[u16]| pack::best_fit_decreasing(s).len();
    let before = slots(&sizes_of(from, true)) + slots(&sizes_of(to, false));
    let after = slots(&sizes_of(from, false)) + slots(&sizes_of(to, true));
    after < before
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(groups: &[u32], sizes: &[u16], order: &[u32]) -> usize {
        order
            .iter()
            .map(|g| {
                let s: Vec<u16> =
                    (0..sizes.len()).filter(|&i| groups[i] == *g).map(|i| sizes[i]).collect();
                pack::best_fit_decreasing(&s).len()
            })
            .sum()
    }

    #[test]
    fn a_lone_page_joins_its_neighbours_part_empty_slot() {
        // Group 0: three pages of 1600 (two slots, the second half empty); group 1: one page of
        // 1600 alone in a slot. Together they pack into two slots.
        let sizes = [1600u16, 1600, 1600, 1600];
        let mut groups = [0u32, 0, 0, 1];
        assert_eq!(slots(&groups, &sizes, &[0, 1]), 3);
        let moves = settle(&mut groups, &sizes, &[0, 1]);
        assert_eq!(moves.len(), 1);
        assert_eq!(slots(&groups, &sizes, &[0, 1]), 2);
    }

    #[test]
    fn far_groups_and_whole_pages_stay_put() {
        // Only neighbours in deathtime order trade: group 0's lone page may not jump to 2.
        let sizes = [1600u16, 1600, 4000, 1600];
        let mut groups = [0u32, 2, 1, 2];
        let before = groups;
        assert!(settle(&mut groups, &sizes, &[0, 1, 2]).is_empty());
        assert_eq!(groups, before);
        let mut whole = [0u32, 1];
        assert!(settle(&mut whole, &[4096, 4096], &[0, 1]).is_empty());
    }
}

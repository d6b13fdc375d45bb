//! Turns a batch of positional writes into as few device I/Os as possible: ops sorted by offset,
//! runs of ops that continue each other merged into one vectored write. An eviction batch's
//! doublewrite copy (header and slots, contiguous) becomes one sequential write; pages that are
//! neighbours on the device (a sorted load, an out-of-place append) go down together.
//!
//! Ops that overlap are never merged, and the plan says so: the file device then writes the
//! batch one run at a time in the caller's order for equal offsets, so the later write wins as
//! it would with one pwrite per op.

/// Most ops in one run: Linux's IOV_MAX for `pwritev`.
pub(crate) const RUN_OPS_MAX: usize = 1024;
/// Most bytes in one run: keeps one transfer (and an io_uring gather copy) bounded.
pub(crate) const RUN_BYTES_MAX: usize = 8 << 20;

/// One merged write: ops `order[first..first + count]` of the plan, contiguous on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    pub offset: u64,
    pub first: usize,
    pub count: usize,
    pub bytes: usize,
}

/// The batch's ops in offset order and the runs they form.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Plan {
    /// Op indices of the batch, by offset (stable: equal offsets keep the caller's order).
    pub order: Vec<usize>,
    pub runs: Vec<Run>,
    /// Some ops overlap: runs must be written one after another, in plan order.
    pub overlapping: bool,
}

/// Plans `ops` given as (offset, length); empty ops are left out.
pub(crate) fn plan(ops: impl ExactSizeIterator<Item = (u64, usize)>) -> Plan {
    let spans: Vec<(u64, usize)> = ops.collect();
    let mut order: Vec<usize> = (0..spans.len()).filter(|&i| spans[i].1 > 0).collect();
    order.sort_by_key(|&i| spans[i].0);
    let mut runs: Vec<Run> = Vec::new();
    let mut overlapping = false;
    let mut end_prev = 0u64;
    for (pos, &i) in order.iter().enumerate() {
        let (offset, len) = spans[i];
        if pos > 0 && offset < end_prev {
            overlapping = true;
        }
        end_prev = end_prev.max(offset + len as u64);
        match runs.last_mut() {
            Some(run)
                if run.offset + run.bytes as u64 == offset
                    && run.count < RUN_OPS_MAX
                    && run.bytes + len <= RUN_BYTES_MAX =>
            {
                run.count += 1;
                run.bytes += len;
            }
            _ => runs.push(Run { offset, first: pos, count: 1, bytes: len }),
        }
    }
    debug_assert_eq!(runs.iter().map(|r| r.count).sum::<usize>(), order.len());
    Plan { order, runs, overlapping }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_ops_merge_in_offset_order() {
        // Doublewrite-like: header at 0, slots 1..=3, then two scattered home pages, unsorted.
        let ops = [
            (8192u64, 4096),
            (0, 4096),
            (40960, 4096),
            (4096, 4096),
            (12288, 4096),
            (45056, 4096),
            (90112, 4096),
        ];
        let p = plan(ops.iter().copied());
        assert_eq!(p.order, vec![1, 3, 0, 4, 2, 5, 6]);
        assert_eq!(
            p.runs,
            vec![
                Run { offset: 0, first: 0, count: 4, bytes: 16384 },
                Run { offset: 40960, first: 4, count: 2, bytes: 8192 },
                Run { offset: 90112, first: 6, count: 1, bytes: 4096 },
            ]
        );
        assert!(!p.overlapping);
    }

    #[test]
    fn overlaps_are_flagged_and_never_merged() {
        let p = plan([(4096u64, 4096), (0, 8192), (4096, 4096)].into_iter());
        assert!(p.overlapping);
        // Equal offsets keep the caller's order: op 0 before op 2.
        assert_eq!(p.order, vec![1, 0, 2]);
        assert_eq!(p.runs.len(), 3);
        assert_eq!(p.runs.iter().map(|r| r.count).sum::<usize>(), 3);
    }

    #[test]
    fn runs_are_bounded_and_empty_ops_dropped() {
        let n = RUN_OPS_MAX + 10;
        let ops: Vec<(u64, usize)> =
            (0..n as u64).map(|i| (i * 512, 512)).chain([(0, 0)]).collect();
        let p = plan(ops.into_iter());
        assert_eq!(p.order.len(), n);
        assert_eq!(p.runs.len(), 2);
        assert_eq!(p.runs[0].count, RUN_OPS_MAX);
        let big = plan([(0u64, RUN_BYTES_MAX), (RUN_BYTES_MAX as u64, 4096)].into_iter());
        assert_eq!(big.runs.len(), 2, "a run never exceeds RUN_BYTES_MAX");
    }
}

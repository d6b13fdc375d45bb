//! 004 sec. 3.2: the in-SSD lifetime predictor. One 4-byte state per chunk of the logical space:
//!
//! | bits  | field                                                         |
//! |-------|---------------------------------------------------------------|
//! | 31    | chunk written before                                          |
//! | 30    | history lifetime known (two writes, or a write and a trim)    |
//! | 29    | previous operation was a trim                                 |
//! | 28-16 | weighted history lifetime, time units, saturating at 8191     |
//! | 15-0  | time of the last write, time units modulo 2^16                |
//!
//! On an overwrite or a trim the history becomes `w * old + (1 - w) * (now - last write)`
//! (004: w = 0.1, so it follows the workload quickly); a write's expected lifetime is the new
//! history, and its class is the exponential range it falls in: class 0 is < 1 unit, class
//! `c` is [2^c - 1, 2^(c+1) - 1), the last class takes everything above. A chunk without
//! history has no class: its data goes to the default superblocks.
//!
//! Intervals of 2^16 units or more alias (the time field wraps); at the default unit that is
//! tens of device capacities of writes between two writes of one chunk, and such a chunk is in
//! the last class either way unless the alias lands low.

const WRITTEN: u32 = 1 << 31;
const HAS_HISTORY: u32 = 1 << 30;
const TRIMMED: u32 = 1 << 29;
const HISTORY_SHIFT: u32 = 16;
const HISTORY_MAX: u32 = (1 << 13) - 1;
const TIME_MASK: u32 = 0xFFFF;
/// Fixed-point scale of the history weight: the arithmetic stays in integers.
const WEIGHT_ONE: u64 = 1 << 10;

#[derive(Debug)]
pub(crate) struct LifetimePredictor {
    state: Vec<u32>,
    /// Weight of the old history, in 1/WEIGHT_ONE.
    old_weight: u64,
    classes: u32,
}

impl LifetimePredictor {
    pub(crate) fn new(chunks: usize, history_weight: f64, classes: u32) -> LifetimePredictor {
        assert!((0.0..1.0).contains(&history_weight));
        assert!((1..=16).contains(&classes));
        LifetimePredictor {
            state: vec![0; chunks],
            old_weight: (history_weight * WEIGHT_ONE as f64).round() as u64,
            classes,
        }
    }

    /// A write to `chunk` at time `now` (units): its lifetime class, or None without history.
    pub(crate) fn on_write(&mut self, chunk: usize, now: u64) -> Option<u32> {
        let state = self.state[chunk];
        let now16 = (now as u32) & TIME_MASK;
        let mut next = WRITTEN | now16;
        let expected = if state & WRITTEN == 0 {
            None
        } else if state & TRIMMED != 0 {
            // The trim already folded the last lifetime into the history.
            Some(Self::history(state))
        } else {
            Some(self.fold(state, now16))
        };
        if let Some(history) = expected {
            debug_assert!(history <= HISTORY_MAX);
            next |= HAS_HISTORY | (history << HISTORY_SHIFT);
        }
        self.state[chunk] = next;
        expected.map(|history| self.class_of(history))
    }

    /// A trim of (part of) `chunk`: the data written last died now.
    pub(crate) fn on_trim(&mut self, chunk: usize, now: u64) {
        let state = self.state[chunk];
        if state & WRITTEN == 0 || state & TRIMMED != 0 {
            return;
        }
        let now16 = (now as u32) & TIME_MASK;
        let history = self.fold(state, now16);
        self.state[chunk] =
            WRITTEN | HAS_HISTORY | TRIMMED | (history << HISTORY_SHIFT) | (state & TIME_MASK);
    }

    fn history(state: u32) -> u32 {
        (state >> HISTORY_SHIFT) & HISTORY_MAX
    }

    /// The new weighted history of a written chunk, its lifetime ending at `now16`.
    fn fold(&self, state: u32, now16: u32) -> u32 {
        let lifetime = u64::from(now16.wrapping_sub(state & TIME_MASK) & TIME_MASK);
        if state & HAS_HISTORY == 0 {
            return lifetime.min(u64::from(HISTORY_MAX)) as u32;
        }
        let old = u64::from(Self::history(state));
        let mixed =
            (self.old_weight * old + (WEIGHT_ONE - self.old_weight) * lifetime + WEIGHT_ONE / 2)
                / WEIGHT_ONE;
        mixed.min(u64::from(HISTORY_MAX)) as u32
    }

    /// Exponential ranges: < 1, [1, 3), [3, 7), ... ; the last class is open-ended.
    pub(crate) fn class_of(&self, lifetime_units: u32) -> u32 {
        let class = 31 - (lifetime_units + 1).leading_zeros();
        class.min(self.classes - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_exponential_ranges() {
        let p = LifetimePredictor::new(1, 0.1, 8);
        let classes: Vec<u32> =
            [0, 1, 2, 3, 6, 7, 14, 15, 126, 127, 8000].iter().map(|&l| p.class_of(l)).collect();
        assert_eq!(classes, vec![0, 1, 1, 2, 2, 3, 3, 4, 6, 7, 7]);
        assert_eq!(LifetimePredictor::new(1, 0.1, 3).class_of(1000), 2);
    }

    #[test]
    fn first_write_has_no_class_then_history_is_weighted() {
        let mut p = LifetimePredictor::new(4, 0.1, 8);
        assert_eq!(p.on_write(2, 100), None);
        // Second write 10 units later: history = 10 (no old history to weigh).
        assert_eq!(p.on_write(2, 110), Some(p.class_of(10)));
        assert_eq!(LifetimePredictor::history(p.state[2]), 10);
        // Third write 100 later: 0.1 * 10 + 0.9 * 100 = 91.
        assert_eq!(p.on_write(2, 210), Some(p.class_of(91)));
        assert_eq!(LifetimePredictor::history(p.state[2]), 91);
        // Other chunks are untouched.
        assert_eq!(p.state[1], 0);
    }

    #[test]
    fn trim_ends_a_lifetime_and_the_next_write_uses_it() {
        let mut p = LifetimePredictor::new(1, 0.1, 8);
        assert_eq!(p.on_write(0, 0), None);
        p.on_trim(0, 5);
        assert_eq!(LifetimePredictor::history(p.state[0]), 5);
        // A second trim without a write in between changes nothing.
        p.on_trim(0, 500);
        assert_eq!(LifetimePredictor::history(p.state[0]), 5);
        // The write after the trim is predicted from the trimmed lifetime, not the gap.
        assert_eq!(p.on_write(0, 1000), Some(p.class_of(5)));
        // And the next write folds the gap since that write.
        assert_eq!(p.on_write(0, 1001), Some(p.class_of(1)));
    }

    #[test]
    fn history_saturates_and_time_wraps() {
        let mut p = LifetimePredictor::new(1, 0.0, 16);
        assert_eq!(p.on_write(0, 65_530), None);
        // 10 units later across the 2^16 wrap.
        assert_eq!(p.on_write(0, 65_540), Some(p.class_of(10)));
        assert_eq!(p.on_write(0, 65_540 + 60_000), Some(p.class_of(HISTORY_MAX)));
        assert_eq!(LifetimePredictor::history(p.state[0]), HISTORY_MAX);
    }
}

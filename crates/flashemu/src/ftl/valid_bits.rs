//! One bit per physical slot: set while the slot holds the current copy of its LBA.
//!
//! Why a bitmap beside `p2l`: an overwrite must mark the old slot stale, and the old slot is a
//! random one. Clearing a bit touches 1/32 of the memory that clearing a `p2l` entry would
//! (128 KiB for the 4 GiB cns preset: it stays in L2), so the host path's only random access
//! into a large array is the `l2p` lookup. GC finds a victim's valid slots from its bit words
//! and reads `p2l` only for those; `p2l` of a stale slot keeps its old, meaningless LBA.

const WORD_BITS: u64 = 64;

#[derive(Debug)]
pub(crate) struct ValidBits {
    words: Vec<u64>,
    slots: u64,
}

impl ValidBits {
    pub(crate) fn new(slots: u64) -> ValidBits {
        ValidBits { words: vec![0; slots.div_ceil(WORD_BITS) as usize], slots }
    }

    #[inline]
    pub(crate) fn get(&self, slot: u32) -> bool {
        debug_assert!(u64::from(slot) < self.slots);
        self.words[(slot / 64) as usize] & (1u64 << (slot % 64)) != 0
    }

    #[inline]
    pub(crate) fn set(&mut self, slot: u32) {
        debug_assert!(!self.get(slot), "slot {slot} already valid");
        self.words[(slot / 64) as usize] |= 1u64 << (slot % 64);
    }

    #[inline]
    pub(crate) fn clear(&mut self, slot: u32) {
        debug_assert!(self.get(slot), "slot {slot} already stale");
        self.words[(slot / 64) as usize] &= !(1u64 << (slot % 64));
    }

    /// The first and last word covering `start..end` (non-empty).
    pub(crate) fn word_span(start: u64, end: u64) -> (u64, u64) {
        assert!(start < end);
        (start / WORD_BITS, (end - 1) / WORD_BITS)
    }

    /// The bits of word `word_index` that fall in `start..end`, cleared in the map. GC drains
    /// a victim word by word: every valid slot it returns is moved, so none stays set.
    #[inline]
    pub(crate) fn take_word(&mut self, word_index: u64, start: u64, end: u64) -> u64 {
        let mask = Self::range_mask(word_index, start, end);
        let word = &mut self.words[word_index as usize];
        let bits = *word & mask;
        *word &= !mask;
        bits
    }

    /// Sets every bit of `start..end` (a GC run's destination slots, all clear before).
    pub(crate) fn set_range(&mut self, start: u64, end: u64) {
        debug_assert!(end <= self.slots);
        if start == end {
            return;
        }
        let (first, last) = Self::word_span(start, end);
        // Bound: one step per word of the range.
        for word_index in first..=last {
            let mask = Self::range_mask(word_index, start, end);
            let word = &mut self.words[word_index as usize];
            debug_assert_eq!(*word & mask, 0, "word {word_index}: slots already valid");
            *word |= mask;
        }
    }

    /// Bits of word `word_index` inside `start..end`.
    #[inline]
    fn range_mask(word_index: u64, start: u64, end: u64) -> u64 {
        let word_start = word_index * WORD_BITS;
        let low = start.saturating_sub(word_start).min(WORD_BITS);
        let high = end.saturating_sub(word_start).min(WORD_BITS);
        debug_assert!(low < high, "word {word_index} outside {start}..{end}");
        let below_high = if high == WORD_BITS { u64::MAX } else { (1u64 << high) - 1 };
        below_high & (u64::MAX << low)
    }

    /// Set bits in `start..end` (tests: O(range)).
    #[cfg(test)]
    pub(crate) fn count_range(&self, start: u64, end: u64) -> u64 {
        (start..end).filter(|&slot| self.get(slot as u32)).count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_word_returns_and_clears_only_the_range() {
        let mut bits = ValidBits::new(200);
        for slot in [0u32, 5, 63, 64, 65, 127, 130, 199] {
            bits.set(slot);
        }
        let (first, last) = ValidBits::word_span(5, 130);
        assert_eq!((first, last), (0, 2));
        let mut seen = Vec::new();
        for word_index in first..=last {
            let mut word = bits.take_word(word_index, 5, 130);
            while word != 0 {
                seen.push(word_index * 64 + u64::from(word.trailing_zeros()));
                word &= word - 1;
            }
        }
        assert_eq!(seen, vec![5, 63, 64, 65, 127]);
        assert!(bits.get(0) && bits.get(130) && bits.get(199));
        assert_eq!(bits.count_range(0, 200), 3);
    }

    #[test]
    fn set_range_sets_exactly_the_range() {
        let mut bits = ValidBits::new(300);
        bits.set_range(3, 3);
        assert_eq!(bits.count_range(0, 300), 0);
        bits.set_range(60, 260);
        assert_eq!(bits.count_range(0, 300), 200);
        assert!(!bits.get(59) && bits.get(60) && bits.get(259) && !bits.get(260));
        bits.set_range(0, 60);
        bits.set_range(260, 300);
        assert_eq!(bits.count_range(0, 300), 300);
    }
}

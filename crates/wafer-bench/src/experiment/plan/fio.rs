//! Where a FIO job's next random I/O goes, as FIO picks it. By default FIO keeps a map of the
//! blocks of the file it has done I/O to (`norandommap` turns it off) and covers every block
//! once before any block again: a block drawn uniformly that is already done gives way to the
//! next not-done block after it (wrapping at the end), and once every block is done the map
//! is cleared and the next pass starts (fio `io_u.c`: `__get_next_rand_offset`,
//! `axmap_next_free`; the job loops until its `io_size`). One map per file serves reads and
//! writes alike, so in a 50% read mix each pass writes a random half of the file.
//!
//! Without the map every draw is uniform and independent.
use flashemu::rng::SplitMix64;

/// One job's file: its first LBA, its length in 4 KiB blocks and, with the random map, the
/// blocks done in this pass.
#[derive(Debug, Clone)]
pub(super) struct FioFile {
    pub(super) start: u64,
    pub(super) blocks: u64,
    /// Bit b of word b / 64: block b done this pass. Empty without the random map.
    done: Vec<u64>,
    done_count: u64,
}

impl FioFile {
    pub(super) fn new(start: u64, blocks: u64, random_map: bool) -> FioFile {
        assert!(blocks > 0, "a FIO file has at least one block");
        let words = if random_map { blocks.div_ceil(64) as usize } else { 0 };
        FioFile { start, blocks, done: vec![0; words], done_count: 0 }
    }

    /// The LBA of the job's next I/O.
    pub(super) fn next_lba(&mut self, rng: &mut SplitMix64) -> u64 {
        let drawn = rng.below(self.blocks);
        if self.done.is_empty() {
            return self.start + drawn;
        }
        if self.done_count == self.blocks {
            self.done.fill(0);
            self.done_count = 0;
        }
        let block = self.next_free(drawn);
        self.done[(block / 64) as usize] |= 1 << (block % 64);
        self.done_count += 1;
        debug_assert!(self.done_count <= self.blocks);
        self.start + block
    }

    /// `from` if not done, else the first not-done block after it, wrapping at the end. The
    /// pass is not complete, so there is one.
    fn next_free(&self, from: u64) -> u64 {
        debug_assert!(self.done_count < self.blocks);
        let words = self.done.len() as u64;
        // Bound: every word once, then the first word again for its blocks before `from`.
        for step in 0..=words {
            let word = (from / 64 + step) % words;
            let mut free = !self.done[word as usize];
            if step == 0 {
                free &= u64::MAX << (from % 64);
            }
            if word == words - 1 && !self.blocks.is_multiple_of(64) {
                free &= (1u64 << (self.blocks % 64)) - 1;
            }
            if free != 0 {
                return word * 64 + u64::from(free.trailing_zeros());
            }
        }
        unreachable!("a pass in progress has a free block")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_covers_every_block_once_then_the_next_begins() {
        let mut rng = SplitMix64::new(3);
        // 130 blocks: three words, the last one partial.
        let mut file = FioFile::new(1000, 130, true);
        for _ in 0..2 {
            let mut seen = vec![0u32; 130];
            for _ in 0..130 {
                let lba = file.next_lba(&mut rng);
                assert!((1000..1130).contains(&lba));
                seen[(lba - 1000) as usize] += 1;
            }
            assert!(seen.iter().all(|&n| n == 1), "one pass: every block exactly once");
        }
    }

    #[test]
    fn a_done_block_gives_way_to_the_next_free_one_wrapping() {
        let mut file = FioFile::new(0, 70, true);
        for block in [5u64, 6, 69] {
            file.done[(block / 64) as usize] |= 1 << (block % 64);
            file.done_count += 1;
        }
        assert_eq!(file.next_free(5), 7);
        assert_eq!(file.next_free(69), 0, "wraps past the end");
        // Everything from 64 on and 0..3 done: from 66 the next free is 3.
        for block in (64..69).chain(0..3) {
            file.done[(block / 64) as usize] |= 1 << (block % 64);
            file.done_count += 1;
        }
        assert_eq!(file.next_free(66), 3);
    }

    #[test]
    fn without_the_map_draws_are_independent() {
        let mut rng = SplitMix64::new(5);
        let mut file = FioFile::new(0, 4, false);
        let draws: Vec<u64> = (0..64).map(|_| file.next_lba(&mut rng)).collect();
        // Some block comes twice within four draws somewhere in 64 draws.
        assert!(draws.chunks(4).any(|c| (1..4).any(|i| c[..i].contains(&c[i]))));
    }
}

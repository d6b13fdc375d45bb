//! AutoStream's SFR rule (Yang et al., SYSTOR '17), run inside the device as 004's AutoStream
//! baseline: per chunk a write count that halves once per decay period since the chunk's last
//! write (recency), the stream being log2 of the count (frequency); a write that continues
//! where the previous one ended keeps the previous stream (sequentiality).

/// Counts saturate here: log2 of it exceeds any stream count allowed.
const COUNT_MAX: u32 = u16::MAX as u32;
const SHIFT_MAX: u64 = 16;

#[derive(Debug)]
pub(crate) struct AutoStream {
    /// Per chunk: write count (low 16 bits) and time of the last write (high 16, units mod 2^16).
    state: Vec<u32>,
    streams: u32,
    decay_units: u64,
    last_end_lba: u64,
    last_stream: u32,
}

impl AutoStream {
    pub(crate) fn new(chunks: usize, streams: u32, decay_units: u64) -> AutoStream {
        assert!(streams >= 1 && decay_units >= 1);
        AutoStream {
            state: vec![0; chunks],
            streams,
            decay_units,
            last_end_lba: u64::MAX,
            last_stream: 0,
        }
    }

    /// The stream of a write of `blocks` LBAs at `lba`, in `chunk`, at time `now` (units).
    pub(crate) fn on_write(&mut self, chunk: usize, lba: u64, blocks: u64, now: u64) -> u32 {
        let state = self.state[chunk];
        let last = u64::from(state >> 16);
        let elapsed = (now.wrapping_sub(last)) & 0xFFFF;
        let decayed = if state == 0 {
            0
        } else {
            (state & 0xFFFF) >> (elapsed / self.decay_units).min(SHIFT_MAX)
        };
        let count = (decayed + 1).min(COUNT_MAX);
        self.state[chunk] = ((now as u32 & 0xFFFF) << 16) | count;
        let stream = if lba == self.last_end_lba {
            self.last_stream
        } else {
            (31 - count.leading_zeros()).min(self.streams - 1)
        };
        debug_assert!(stream < self.streams);
        self.last_end_lba = lba + blocks;
        self.last_stream = stream;
        stream
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frequent_chunks_climb_streams_and_decay_brings_them_down() {
        let mut a = AutoStream::new(4, 4, 10);
        let streams: Vec<u32> = (0..8).map(|i| a.on_write(0, i * 100, 1, i)).collect();
        // Counts 1..8: log2 = 0, 1, 1, 2, 2, 2, 2, 3.
        assert_eq!(streams, vec![0, 1, 1, 2, 2, 2, 2, 3]);
        // 30 units idle: three halvings, 8 -> 1, then + 1 = 2.
        assert_eq!(a.on_write(0, 5000, 1, 37), 1);
        // Another chunk starts at stream 0.
        assert_eq!(a.on_write(1, 7000, 1, 37), 0);
    }

    #[test]
    fn sequential_writes_keep_the_stream() {
        let mut a = AutoStream::new(4, 4, 1000);
        for i in 0..4 {
            a.on_write(0, i * 10, 1, i);
        }
        let hot = a.on_write(0, 100, 8, 5);
        assert_eq!(hot, 2);
        // Continues at 108 in a fresh chunk: same stream as the write before.
        assert_eq!(a.on_write(3, 108, 8, 5), hot);
    }
}

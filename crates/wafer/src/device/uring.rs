//! io_uring batch submission for the file device: a whole batch goes to the kernel in rounds of
//! at most [`QUEUE_DEPTH`] operations, and the call returns only once every operation of the
//! batch has completed (the buffers are borrowed from the caller, so nothing may stay in flight).
//!
//! Short transfers are resubmitted for the remainder; an error on one operation does not stop the
//! others (they are already in the kernel), and the batch reports the error of the lowest-numbered
//! failed operation with its offset.
use super::DeviceError;
use io_uring::{opcode, types, IoUring};
use std::os::fd::RawFd;
use std::sync::Mutex;

/// Operations per submission round; also the submission queue size. Bounds the kernel's view of
/// one batch, so a 10 000-page eviction batch cannot pin an unbounded number of requests.
pub const QUEUE_DEPTH: u32 = 128;

/// Largest transfer of one submission: the SQE length field is 32 bits.
const MAX_TRANSFER_BYTES: usize = 1 << 30;

/// Retries of `io_uring_enter` interrupted by a signal or refused for lack of resources.
const ENTER_RETRIES_MAX: u32 = 10_000;

/// One positional transfer, as raw parts. The caller keeps the buffer alive and unaliased until
/// [`Uring::run`] returns.
#[derive(Debug, Clone, Copy)]
pub(super) struct RawOp {
    pub ptr: *mut u8,
    pub len: usize,
    pub offset: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    Read,
    Write,
}

pub(super) struct Uring {
    ring: Mutex<IoUring>,
}

impl std::fmt::Debug for Uring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Uring").field("queue_depth", &QUEUE_DEPTH).finish()
    }
}

impl Uring {
    /// Sets up a ring and proves it works with a NOP: io_uring can be compiled out, disabled by
    /// sysctl (`kernel.io_uring_disabled`) or blocked by seccomp, and each shows up differently
    /// (setup fails with ENOSYS or EPERM, or enter fails). The error is a reason for a human.
    pub fn probe() -> Result<Uring, String> {
        let mut ring =
            IoUring::new(QUEUE_DEPTH).map_err(|e| format!("io_uring_setup failed: {e}"))?;
        let nop = opcode::Nop::new().build().user_data(u64::MAX);
        // SAFETY: a NOP references no memory.
        unsafe { ring.submission().push(&nop) }
            .map_err(|_| "io_uring submission queue full at setup".to_string())?;
        submit_and_wait(&ring, 1).map_err(|e| format!("io_uring_enter failed: {e}"))?;
        let cqe = ring.completion().next().ok_or("io_uring NOP did not complete")?;
        if cqe.result() < 0 {
            let e = std::io::Error::from_raw_os_error(-cqe.result());
            return Err(format!("io_uring NOP failed: {e}"));
        }
        Ok(Uring { ring: Mutex::new(ring) })
    }

    /// Runs every op to completion.
    ///
    /// # Safety
    /// Every `RawOp` must point to `len` bytes that stay valid (and, for reads, writable and not
    /// otherwise accessed) until this call returns.
    pub unsafe fn run(
        &self,
        fd: RawFd,
        direction: Direction,
        ops: &[RawOp],
    ) -> Result<(), DeviceError> {
        let mut ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        let mut batch = Batch {
            fd,
            direction,
            ops,
            done_bytes: vec![0usize; ops.len()],
            pending: (0..ops.len()).collect(),
            first_error: None,
        };
        // Each round completes or advances every op it submits by at least one byte.
        let total_bytes: usize = ops.iter().map(|op| op.len).sum();
        let rounds_max = ops.len() + total_bytes + 1;
        let mut rounds = 0usize;
        while !batch.pending.is_empty() {
            rounds += 1;
            assert!(rounds <= rounds_max, "io_uring batch made no progress");
            // SAFETY: the caller's contract on `ops`, and `reap` below waits for every entry
            // this round submits.
            let in_flight = unsafe { batch.submit_round(&mut ring) };
            batch.reap(&mut ring, in_flight);
        }
        match batch.first_error {
            Some((_, e)) => Err(e),
            None => Ok(()),
        }
    }
}

/// One batch in progress: how far each op got, which still need a round, the first failure.
struct Batch<'a> {
    fd: RawFd,
    direction: Direction,
    ops: &'a [RawOp],
    done_bytes: Vec<usize>,
    /// Ops not yet complete and not in flight, in submission order.
    pending: std::collections::VecDeque<usize>,
    /// The lowest-numbered failed op and its error.
    first_error: Option<(usize, DeviceError)>,
}

impl Batch<'_> {
    /// The op name reported in errors.
    fn name(&self) -> &'static str {
        match self.direction {
            Direction::Read => "io_uring read",
            Direction::Write => "io_uring write",
        }
    }

    /// Queues up to [`QUEUE_DEPTH`] pending ops (the remainder of each) and returns how many.
    ///
    /// # Safety
    /// As [`Uring::run`], and the caller must reap every entry queued before the buffers may be
    /// released.
    unsafe fn submit_round(&mut self, ring: &mut IoUring) -> usize {
        let mut in_flight = 0usize;
        let mut sq = ring.submission();
        while in_flight < QUEUE_DEPTH as usize {
            let Some(i) = self.pending.pop_front() else { break };
            let op = self.ops[i];
            let done = self.done_bytes[i];
            let len = (op.len - done).min(MAX_TRANSFER_BYTES) as u32;
            // SAFETY: done < op.len, so the pointer stays inside the caller's buffer.
            let ptr = unsafe { op.ptr.add(done) };
            let fd = types::Fd(self.fd);
            let offset = op.offset + done as u64;
            let entry = match self.direction {
                Direction::Read => opcode::Read::new(fd, ptr, len).offset(offset).build(),
                Direction::Write => opcode::Write::new(fd, ptr, len).offset(offset).build(),
            };
            // SAFETY: the buffer outlives the operation (caller contract) and `Uring::run`
            // waits for every completion before returning.
            let pushed = unsafe { sq.push(&entry.user_data(i as u64)) };
            // The queue holds QUEUE_DEPTH entries and is empty at the start of a round.
            assert!(pushed.is_ok(), "submission queue overflow");
            in_flight += 1;
        }
        in_flight
    }

    /// Waits for the `in_flight` entries of one round and records each completion. Never
    /// returns with an entry still in the kernel: the caller's buffers are only borrowed.
    fn reap(&mut self, ring: &mut IoUring, in_flight: usize) {
        let mut reaped = 0usize;
        let mut waits = 0u32;
        while reaped < in_flight {
            waits += 1;
            assert!(waits <= ENTER_RETRIES_MAX, "io_uring completions never arrived");
            if let Err(e) = submit_and_wait(ring, in_flight - reaped) {
                // Entries may still sit in the queue pointing at the caller's buffers:
                // returning would leave the kernel free to touch them later. The retryable
                // errors are handled inside; anything else is a bug in how the ring is driven.
                panic!("io_uring_enter failed with requests in flight: {e}");
            }
            for cqe in ring.completion() {
                reaped += 1;
                self.complete(cqe.user_data() as usize, cqe.result());
            }
        }
        assert_eq!(reaped, in_flight, "more completions than submissions");
    }

    /// One completion of op `i` with the kernel's result `res`: an error (kept if it is the
    /// lowest-numbered so far), or bytes transferred, queueing the op again if some remain.
    #[inline]
    fn complete(&mut self, i: usize, res: i32) {
        assert!(i < self.ops.len(), "completion for an unknown op");
        let offset = self.ops[i].offset + self.done_bytes[i] as u64;
        if res <= 0 {
            let source = if res == 0 {
                std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "transfer of zero bytes (past end of file?)",
                )
            } else {
                std::io::Error::from_raw_os_error(-res)
            };
            if self.first_error.as_ref().is_none_or(|(j, _)| i < *j) {
                let op = self.name();
                self.first_error = Some((i, DeviceError::Io { op, offset, source }));
            }
            return;
        }
        self.done_bytes[i] += res as usize;
        assert!(self.done_bytes[i] <= self.ops[i].len, "kernel transferred more than asked");
        if self.done_bytes[i] < self.ops[i].len {
            self.pending.push_back(i);
        }
    }
}

/// `io_uring_enter`, retried while the kernel says "again" (EINTR, EAGAIN, EBUSY).
fn submit_and_wait(ring: &IoUring, want: usize) -> std::io::Result<usize> {
    let mut tries = 0u32;
    loop {
        tries += 1;
        match ring.submit_and_wait(want) {
            Ok(n) => return Ok(n),
            Err(e)
                if tries < ENTER_RETRIES_MAX
                    && matches!(
                        e.raw_os_error(),
                        Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
                    ) =>
            {
                std::thread::yield_now();
            }
            Err(e) => return Err(e),
        }
    }
}

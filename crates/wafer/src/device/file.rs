//! A device over a real file (or block device): pread/pwrite, optional O_DIRECT with aligned
//! bounce buffers, optional io_uring for batches, fdatasync, and TRIM by punching holes.
use super::aligned::{is_aligned, AlignedBuf};
use super::capacity::Capacity;
use super::coalesce::{self, Plan, Run};
use super::uring::{Direction, RawOp, Uring};
use super::{check_range, Device, DeviceError, ReadOp, WriteOp};
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// How the file is driven. A value, so a benchmark can sweep it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileOptions {
    /// O_DIRECT: bypass the page cache (the paper's setup). Needs a filesystem that allows it.
    pub direct: bool,
    /// Submit batches through io_uring; falls back to pread/pwrite when the kernel refuses.
    pub io_uring: bool,
}

impl FileOptions {
    pub const BUFFERED: FileOptions = FileOptions { direct: false, io_uring: false };
    pub const DIRECT: FileOptions = FileOptions { direct: true, io_uring: false };
    pub const URING: FileOptions = FileOptions { direct: false, io_uring: true };
    pub const DIRECT_URING: FileOptions = FileOptions { direct: true, io_uring: true };
}

/// Largest zero-fill write when hole punching is unsupported.
const ZERO_CHUNK_BYTES: usize = 1 << 20;

#[derive(Debug)]
pub struct FileDevice {
    file: File,
    path: PathBuf,
    /// Grows (`grow_to`) while the device is shared; it never shrinks.
    capacity_bytes: Capacity,
    options: FileOptions,
    uring: Option<Uring>,
    /// Why io_uring was asked for but is not used.
    uring_unavailable: Option<String>,
}

impl FileDevice {
    /// Opens or creates `path` and extends it (sparsely) to `capacity_bytes`; an existing larger
    /// file keeps its size and the device uses its first `capacity_bytes`. A block device must be
    /// at least `capacity_bytes` large.
    pub fn open(
        path: impl AsRef<Path>,
        capacity_bytes: u64,
        options: FileOptions,
    ) -> Result<FileDevice, DeviceError> {
        assert!(capacity_bytes > 0, "a device needs capacity");
        check_range(0, capacity_bytes, capacity_bytes)?;
        let path = path.as_ref().to_path_buf();
        let mut open = OpenOptions::new();
        open.read(true).write(true).create(true).truncate(false);
        if options.direct {
            open.custom_flags(libc::O_DIRECT);
        }
        let file = open.open(&path).map_err(|source| {
            let op = if options.direct && source.raw_os_error() == Some(libc::EINVAL) {
                "open with O_DIRECT (the filesystem refuses direct I/O)"
            } else {
                "open"
            };
            DeviceError::Io { op, offset: 0, source }
        })?;
        let meta =
            file.metadata().map_err(|source| DeviceError::Io { op: "stat", offset: 0, source })?;
        if meta.file_type().is_block_device() {
            // A block device has the size it has: stat says 0, seeking to the end says the truth.
            let size_bytes = (&file).seek(SeekFrom::End(0)).map_err(|source| DeviceError::Io {
                op: "seek to end",
                offset: 0,
                source,
            })?;
            if size_bytes < capacity_bytes {
                return Err(DeviceError::OutOfRange {
                    offset: 0,
                    len: capacity_bytes,
                    capacity_bytes: size_bytes,
                });
            }
        } else if meta.len() < capacity_bytes {
            file.set_len(capacity_bytes).map_err(|source| DeviceError::Io {
                op: "set_len",
                offset: capacity_bytes,
                source,
            })?;
        }
        let (uring, uring_unavailable) = if options.io_uring {
            match Uring::probe() {
                Ok(ring) => (Some(ring), None),
                Err(reason) => (None, Some(reason)),
            }
        } else {
            (None, None)
        };
        // A file grows until its filesystem is full; a block device refuses in `grow_file`.
        let capacity_bytes = Capacity::growable(capacity_bytes, u64::MAX);
        Ok(FileDevice { file, path, capacity_bytes, options, uring, uring_unavailable })
    }

    fn capacity(&self) -> u64 {
        self.capacity_bytes.bytes()
    }

    /// Allocates the blocks up to `capacity_bytes` (`fallocate`, so a full filesystem is a
    /// clean `NoSpace` now rather than a failed write later), syncs the new size, and only then
    /// lets I/O reach past the old end.
    fn grow_file(&self, capacity_bytes: u64) -> Result<(), DeviceError> {
        let old_bytes = self.capacity();
        assert!(capacity_bytes > old_bytes && capacity_bytes.is_multiple_of(super::BLOCK_BYTES));
        let meta = self.file.metadata().map_err(|source| DeviceError::Io {
            op: "stat",
            offset: 0,
            source,
        })?;
        if meta.file_type().is_block_device() {
            return Err(DeviceError::Unsupported("growing a block device"));
        }
        let (Ok(off), Ok(n)) =
            (libc::off_t::try_from(old_bytes), libc::off_t::try_from(capacity_bytes - old_bytes))
        else {
            return Err(DeviceError::OutOfRange { offset: old_bytes, len: 0, capacity_bytes });
        };
        // SAFETY: fallocate takes a valid open fd and integers; it touches no user memory.
        let rc = unsafe { libc::fallocate(self.file.as_raw_fd(), 0, off, n) };
        if rc != 0 {
            let source = std::io::Error::last_os_error();
            if source.raw_os_error() == Some(libc::ENOSPC) {
                return Err(DeviceError::NoSpace);
            }
            // A filesystem without fallocate: extend sparsely (a full disk then fails a write).
            if source.raw_os_error() != Some(libc::EOPNOTSUPP) {
                return Err(DeviceError::Io { op: "fallocate", offset: old_bytes, source });
            }
            self.file.set_len(capacity_bytes).map_err(|source| DeviceError::Io {
                op: "set_len",
                offset: capacity_bytes,
                source,
            })?;
        }
        self.file.sync_data().map_err(|source| DeviceError::Io {
            op: "fdatasync",
            offset: old_bytes,
            source,
        })?;
        self.capacity_bytes.raise(capacity_bytes);
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn options(&self) -> FileOptions {
        self.options
    }
    /// True when batches go through io_uring.
    pub fn uses_io_uring(&self) -> bool {
        self.uring.is_some()
    }
    /// Why io_uring was requested but is not in use (batches fall back to pread/pwrite).
    pub fn io_uring_unavailable_reason(&self) -> Option<&str> {
        self.uring_unavailable.as_deref()
    }

    /// O_DIRECT needs the buffer address aligned too; other buffers go through a bounce copy.
    fn needs_bounce(&self, ptr: *const u8) -> bool {
        self.options.direct && !is_aligned(ptr)
    }

    fn read_one(&self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        let io = |source| DeviceError::Io { op: "pread", offset, source };
        if self.needs_bounce(buf.as_ptr()) {
            let mut bounce = AlignedBuf::zeroed(buf.len());
            self.file.read_exact_at(&mut bounce, offset).map_err(io)?;
            buf.copy_from_slice(&bounce);
            Ok(())
        } else {
            self.file.read_exact_at(buf, offset).map_err(io)
        }
    }

    fn write_one(&self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        let io = |source| DeviceError::Io { op: "pwrite", offset, source };
        if self.needs_bounce(data.as_ptr()) {
            self.file.write_all_at(&AlignedBuf::copy_of(data), offset).map_err(io)
        } else {
            self.file.write_all_at(data, offset).map_err(io)
        }
    }

    fn read_uring(&self, uring: &Uring, ops: &mut [ReadOp<'_>]) -> Result<(), DeviceError> {
        // Bounce buffers live in `bounces` until the batch is done, then are copied out.
        let mut bounces: Vec<Option<AlignedBuf>> = Vec::with_capacity(ops.len());
        let mut raw: Vec<RawOp> = Vec::with_capacity(ops.len());
        for op in ops.iter_mut() {
            if op.buf.is_empty() {
                bounces.push(None);
                continue;
            }
            if self.needs_bounce(op.buf.as_ptr()) {
                let mut bounce = AlignedBuf::zeroed(op.buf.len());
                raw.push(RawOp { ptr: bounce.as_mut_ptr(), len: bounce.len(), offset: op.offset });
                bounces.push(Some(bounce));
            } else {
                raw.push(RawOp { ptr: op.buf.as_mut_ptr(), len: op.buf.len(), offset: op.offset });
                bounces.push(None);
            }
        }
        // SAFETY: every pointer is into a caller buffer borrowed mutably by `ops`, or into a bounce
        // buffer owned by `bounces`; both outlive the call and nothing else touches them meanwhile.
        unsafe { uring.run(self.file.as_raw_fd(), Direction::Read, &raw) }?;
        for (op, bounce) in ops.iter_mut().zip(&bounces) {
            if let Some(bounce) = bounce {
                op.buf.copy_from_slice(bounce);
            }
        }
        Ok(())
    }

    /// Each op's bytes as the device may take them: O_DIRECT needs aligned buffers, so a
    /// misaligned op is copied into `bounces` (the returned slices borrow from both).
    fn direct_ready<'a>(
        &self,
        ops: &'a [WriteOp<'a>],
        bounces: &'a mut Vec<Option<AlignedBuf>>,
    ) -> Vec<&'a [u8]> {
        bounces.extend(ops.iter().map(|op| {
            (!op.data.is_empty() && self.needs_bounce(op.data.as_ptr()))
                .then(|| AlignedBuf::copy_of(op.data))
        }));
        ops.iter().zip(bounces.iter()).map(|(op, b)| b.as_deref().unwrap_or(op.data)).collect()
    }

    /// One run of the plan with one `pwritev` (retried for the rest after a short write).
    fn write_run(&self, run: &Run, plan: &Plan, data: &[&[u8]]) -> Result<(), DeviceError> {
        let parts: Vec<&[u8]> =
            plan.order[run.first..run.first + run.count].iter().map(|&i| data[i]).collect();
        if parts.len() == 1 {
            return self.write_all(run.offset, parts[0]);
        }
        let iov: Vec<libc::iovec> = parts
            .iter()
            .map(|p| libc::iovec { iov_base: p.as_ptr().cast_mut().cast(), iov_len: p.len() })
            .collect();
        let Ok(offset) = libc::off_t::try_from(run.offset) else {
            return Err(DeviceError::OutOfRange {
                offset: run.offset,
                len: run.bytes as u64,
                capacity_bytes: self.capacity(),
            });
        };
        let written = loop {
            // SAFETY: every iovec points into a slice borrowed for this call (`parts`); the
            // kernel only reads through them; the count is at most RUN_OPS_MAX (IOV_MAX).
            let n = unsafe {
                libc::pwritev(self.file.as_raw_fd(), iov.as_ptr(), iov.len() as libc::c_int, offset)
            };
            if n >= 0 {
                break n as usize;
            }
            let source = std::io::Error::last_os_error();
            if source.kind() != std::io::ErrorKind::Interrupted {
                return Err(DeviceError::Io { op: "pwritev", offset: run.offset, source });
            }
        };
        // A short write (rare: a signal, a full disk) is finished part by part.
        let mut at = 0usize;
        for part in parts {
            let end = at + part.len();
            if written < end {
                let from = written.saturating_sub(at);
                self.write_all(run.offset + (at + from) as u64, &part[from..])?;
            }
            at = end;
        }
        Ok(())
    }

    fn write_all(&self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        self.file.write_all_at(data, offset).map_err(|source| DeviceError::Io {
            op: "pwrite",
            offset,
            source,
        })
    }

    /// The runs through io_uring: a multi-op run is gathered into one aligned buffer (a
    /// memory copy, cheaper than a device round trip per page) and goes down as one write.
    fn write_uring(&self, uring: &Uring, plan: &Plan, data: &[&[u8]]) -> Result<(), DeviceError> {
        let mut gathered: Vec<AlignedBuf> = Vec::new();
        let mut raw: Vec<RawOp> = Vec::with_capacity(plan.runs.len());
        for run in &plan.runs {
            let ops = &plan.order[run.first..run.first + run.count];
            let ptr = if let [only] = ops {
                data[*only].as_ptr()
            } else {
                let mut buf = AlignedBuf::zeroed(run.bytes);
                let mut at = 0;
                for &i in ops {
                    buf[at..at + data[i].len()].copy_from_slice(data[i]);
                    at += data[i].len();
                }
                gathered.push(buf);
                // The heap block of an AlignedBuf does not move when the Vec holding it grows.
                gathered[gathered.len() - 1].as_ptr()
            };
            raw.push(RawOp { ptr: ptr.cast_mut(), len: run.bytes, offset: run.offset });
        }
        // SAFETY: pointers are into `data` (borrowed for the call) or into `gathered` (alive
        // until the end of this function); a write only reads through them.
        unsafe { uring.run(self.file.as_raw_fd(), Direction::Write, &raw) }
    }

    fn zero_fill(&self, offset: u64, len: u64) -> Result<(), DeviceError> {
        let chunk_bytes = (len as usize).min(ZERO_CHUNK_BYTES);
        let zeros = AlignedBuf::zeroed(chunk_bytes);
        let mut done = 0u64;
        // Bounded: each iteration writes at least one block (len is a block multiple).
        while done < len {
            let n = (len - done).min(chunk_bytes as u64);
            self.write_one(offset + done, &zeros[..n as usize])?;
            done += n;
        }
        Ok(())
    }
}

impl Device for FileDevice {
    fn capacity_bytes(&self) -> u64 {
        self.capacity()
    }

    fn grow_to(&self, capacity_bytes: u64) -> Result<(), DeviceError> {
        self.grow_file(capacity_bytes)
    }

    fn read_batch(&self, ops: &mut [ReadOp<'_>]) -> Result<(), DeviceError> {
        for op in ops.iter() {
            check_range(op.offset, op.buf.len() as u64, self.capacity())?;
        }
        if let Some(uring) = &self.uring {
            if ops.len() > 1 {
                return self.read_uring(uring, ops);
            }
        }
        for op in ops.iter_mut() {
            self.read_one(op.offset, op.buf)?;
        }
        Ok(())
    }

    fn write_batch(&self, ops: &[WriteOp<'_>]) -> Result<(), DeviceError> {
        // Check the whole batch first so a bad op changes nothing.
        for op in ops {
            check_range(op.offset, op.data.len() as u64, self.capacity())?;
        }
        let plan = coalesce::plan(ops.iter().map(|op| (op.offset, op.data.len())));
        let mut bounces = Vec::new();
        let data = self.direct_ready(ops, &mut bounces);
        if let Some(uring) = &self.uring {
            // Overlapping runs in flight together could land in any order.
            if plan.runs.len() > 1 && !plan.overlapping {
                return self.write_uring(uring, &plan, &data);
            }
        }
        for run in &plan.runs {
            self.write_run(run, &plan, &data)?;
        }
        Ok(())
    }

    fn sync(&self) -> Result<(), DeviceError> {
        self.file.sync_data().map_err(|source| DeviceError::Io {
            op: "fdatasync",
            offset: 0,
            source,
        })
    }

    fn trim(&self, offset: u64, len: u64) -> Result<(), DeviceError> {
        check_range(offset, len, self.capacity())?;
        if len == 0 {
            return Ok(());
        }
        let (Ok(off), Ok(n)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
            return Err(DeviceError::OutOfRange { offset, len, capacity_bytes: self.capacity() });
        };
        let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        // SAFETY: fallocate takes a valid open fd and integers; it touches no user memory.
        let rc = unsafe { libc::fallocate(self.file.as_raw_fd(), mode, off, n) };
        if rc == 0 {
            return Ok(());
        }
        let source = std::io::Error::last_os_error();
        match source.raw_os_error() {
            // The filesystem cannot punch holes: zeros read back the same.
            Some(libc::EOPNOTSUPP | libc::ENOSYS) => self.zero_fill(offset, len),
            _ => Err(DeviceError::Io { op: "fallocate(PUNCH_HOLE)", offset, source }),
        }
    }
}

//! The FUSE filesystem: a root directory with two files, `ssd` (the device, its size the
//! device's logical capacity) and `stats` (a JSON snapshot of the counters taken at open).
//! Both are opened in direct-I/O mode: every read and write reaches the emulator (no page
//! cache between the host and the counters), and `stats` needs no size.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    KernelConfig, LockOwner, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, WriteFlags,
};

use crate::blockfile::BlockFile;
use crate::stats::Stats;

pub(crate) const DEVICE_INO: INodeNo = INodeNo(2);
pub(crate) const STATS_INO: INodeNo = INodeNo(3);
/// Attributes never change behind the kernel's back except the stats (read fresh per open).
const TTL: Duration = Duration::from_secs(1);
/// Bound on stats handles open at once (each holds one snapshot of a few hundred bytes).
const STATS_HANDLES_MAX: usize = 1024;
/// The largest write the kernel may send in one request.
const MAX_WRITE_BYTES: u32 = 1 << 20;

const FALLOC_KEEP_SIZE: i32 = libc::FALLOC_FL_KEEP_SIZE;
const FALLOC_PUNCH_HOLE: i32 = libc::FALLOC_FL_PUNCH_HOLE;
const FALLOC_ZERO_RANGE: i32 = libc::FALLOC_FL_ZERO_RANGE;

pub(crate) struct EmuFs {
    pub(crate) device: Arc<BlockFile>,
    /// What the device is, for the stats file.
    pub(crate) label: String,
    pub(crate) started: SystemTime,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    stats_handles: Mutex<HashMap<u64, Arc<Vec<u8>>>>,
    next_handle: AtomicU64,
}

impl EmuFs {
    pub(crate) fn new(device: Arc<BlockFile>, label: String) -> EmuFs {
        // SAFETY: getuid/getgid cannot fail and touch no memory.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        EmuFs {
            device,
            label,
            started: SystemTime::now(),
            uid,
            gid,
            stats_handles: Mutex::new(HashMap::new()),
            next_handle: AtomicU64::new(1),
        }
    }

    fn attr(&self, ino: INodeNo) -> Option<FileAttr> {
        let (kind, perm, size) = match ino {
            INodeNo::ROOT => (FileType::Directory, 0o755, 0),
            DEVICE_INO => (FileType::RegularFile, 0o600, self.device.size_bytes()),
            STATS_INO => (FileType::RegularFile, 0o444, 0),
            _ => return None,
        };
        Some(FileAttr {
            ino,
            size,
            blocks: size / 512,
            atime: self.started,
            mtime: self.started,
            ctime: self.started,
            crtime: self.started,
            kind,
            perm,
            nlink: if kind == FileType::Directory { 2 } else { 1 },
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: flashemu::LBA_BYTES as u32,
            flags: 0,
        })
    }

    pub(crate) fn stats(&self) -> Option<Stats> {
        Stats::of_device(&self.label, &self.device).ok()
    }
}

fn errno(e: &crate::BlockFileError) -> Errno {
    Errno::from_i32(e.errno())
}

impl Filesystem for EmuFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Best effort: the kernel may cap it lower; smaller requests are still correct.
        let _ = config.set_max_write(MAX_WRITE_BYTES);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let ino = match name.to_str() {
            Some(crate::DEVICE_FILE) => DEVICE_INO,
            Some(crate::STATS_FILE) => STATS_INO,
            _ => return reply.error(Errno::ENOENT),
        };
        match (parent, self.attr(ino)) {
            (INodeNo::ROOT, Some(attr)) => reply.entry(&TTL, &attr, Generation(0)),
            _ => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.attr(ino) {
            Some(attr) => reply.attr(&TTL, &attr),
            None => reply.error(Errno::ENOENT),
        }
    }

    /// Only what a block device allows: the size stays (truncate to it is a no-op); modes,
    /// owners and times are accepted and not kept.
    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<fuser::TimeOrNow>,
        _mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let Some(attr) = self.attr(ino) else { return reply.error(Errno::ENOENT) };
        match size {
            Some(s) if s != attr.size => reply.error(Errno::EINVAL),
            _ => reply.attr(&TTL, &attr),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match ino {
            DEVICE_INO => reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO),
            STATS_INO => {
                let Some(stats) = self.stats() else { return reply.error(Errno::EIO) };
                let Ok(mut handles) = self.stats_handles.lock() else {
                    return reply.error(Errno::EIO);
                };
                if handles.len() >= STATS_HANDLES_MAX {
                    return reply.error(Errno::from_i32(libc::EMFILE));
                }
                let fh = self.next_handle.fetch_add(1, Ordering::Relaxed);
                handles.insert(fh, Arc::new(stats.to_json().into_bytes()));
                reply.opened(FileHandle(fh), FopenFlags::FOPEN_DIRECT_IO);
            }
            _ => reply.error(Errno::EISDIR),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match ino {
            DEVICE_INO => match self.device.read(offset, u64::from(size)) {
                Ok(bytes) => reply.data(&bytes),
                Err(e) => reply.error(errno(&e)),
            },
            STATS_INO => {
                let snapshot = self.stats_handles.lock().ok().and_then(|h| h.get(&fh.0).cloned());
                let Some(text) = snapshot else { return reply.error(Errno::EBADF) };
                let start = (offset as usize).min(text.len());
                let end = start.saturating_add(size as usize).min(text.len());
                reply.data(&text[start..end]);
            }
            _ => reply.error(Errno::EISDIR),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        if ino != DEVICE_INO {
            return reply.error(Errno::EACCES);
        }
        match self.device.write(offset, data) {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // Every write already reached the device (direct I/O): nothing is buffered here.
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        if ino == STATS_INO {
            if let Ok(mut handles) = self.stats_handles.lock() {
                handles.remove(&fh.0);
            }
        }
        reply.ok();
    }

    fn fsync(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, _data: bool, reply: ReplyEmpty) {
        if ino != DEVICE_INO {
            return reply.ok();
        }
        match self.device.flush() {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        if ino != INodeNo::ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let entries = [
            (INodeNo::ROOT, FileType::Directory, "."),
            (INodeNo::ROOT, FileType::Directory, ".."),
            (DEVICE_INO, FileType::RegularFile, crate::DEVICE_FILE),
            (STATS_INO, FileType::RegularFile, crate::STATS_FILE),
        ];
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(*ino, (i + 1) as u64, *kind, name) {
                break;
            }
        }
        reply.ok();
    }

    /// Block size 4 KiB: a loop device takes its discard granularity from it.
    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let blocks = self.device.size_bytes() / flashemu::LBA_BYTES;
        let block = flashemu::LBA_BYTES as u32;
        reply.statfs(blocks, 0, 0, 3, 0, block, 255, block);
    }

    /// Hole punch and zero range (what a loop device sends for discard and write-zeroes) trim
    /// the range; plain allocation inside the device is a no-op (every block is addressable).
    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        if ino != DEVICE_INO {
            return reply.error(Errno::EACCES);
        }
        let deallocate = mode & (FALLOC_PUNCH_HOLE | FALLOC_ZERO_RANGE) != 0;
        let known = FALLOC_KEEP_SIZE | FALLOC_PUNCH_HOLE | FALLOC_ZERO_RANGE;
        if mode & !known != 0 {
            return reply.error(Errno::EOPNOTSUPP);
        }
        let result = if deallocate {
            self.device.discard(offset, length)
        } else {
            match offset.checked_add(length) {
                Some(end) if end <= self.device.size_bytes() => Ok(()),
                _ => return reply.error(Errno::EFBIG),
            }
        };
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(&e)),
        }
    }
}

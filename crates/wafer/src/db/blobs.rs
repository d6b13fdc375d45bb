//! The database's side of out-of-line values (`crate::blob`, whose module doc gives the formats
//! and the write order): writing a blob before its batch, claiming and freeing runs inside the
//! batch, reading a value back whole or as a stream, and dropping what a crash left behind.
use super::batch::{log_estimate_bytes, BatchOp, WriteBatch};
use super::blob_state::{fold_free_tree, BlobState};
use super::inner::DbInner;
use crate::blob::{self, decode_stored, encode_inline, BlobRef, Gate, Stored, CHUNK_BYTES};
use crate::btree::{Env, Exclusive, TreeCore};
use crate::device::AlignedBuf;
use crate::durable::ExtentOp;
use crate::page::{self, PageBuf, PageId, PAGE_SIZE};
use crate::wal::Durability;
use crate::{Corruption, Error, Result};
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A batch operation as stored: the tagged value, and the run its blob took (to be claimed).
pub(super) enum StoredOp<'a> {
    Put { tree: &'a str, key: &'a [u8], stored: Vec<u8>, run: Option<Range<PageId>> },
    Delete { tree: &'a str, key: &'a [u8] },
}

impl StoredOp<'_> {
    pub(super) fn tree(&self) -> &str {
        match self {
            StoredOp::Put { tree, .. } | StoredOp::Delete { tree, .. } => {
                // Names were checked before the batch was stored: the lookup by name holds.
                debug_assert!(!tree.is_empty(), "a stored op without a tree");
                tree
            }
        }
    }
    pub(super) fn key(&self) -> &[u8] {
        match self {
            StoredOp::Put { key, .. } | StoredOp::Delete { key, .. } => {
                // Keys were checked before the batch was stored: the B+tree takes them as is.
                debug_assert!(key.len() <= page::node::MAX_KEY_BYTES, "key of {}", key.len());
                key
            }
        }
    }
}

impl DbInner {
    pub(super) fn blob_state(&self) -> Result<&BlobState> {
        let state = self.blobs.get().map(|b| &**b);
        // The free-extent tree is an engine tree of its own, never the catalog (tree 0).
        debug_assert!(state.is_none_or(|b| b.tree.id != 0), "blob free tree is the catalog");
        state.ok_or(Error::Corruption(Corruption::NoBlobSpace))
    }

    /// Opens the gates of freed runs whose commits are durable; out of place their pages leave
    /// the map (GC stops copying them).
    pub(super) fn open_blob_gates(&self, b: &BlobState) -> Result<()> {
        let durable = match self.wal_logger() {
            Some(l) => Some(l.wal()?.durable_lsn().0),
            None => return Ok(()),
        };
        let runs = b.lock_space().open_gates(durable);
        if runs.is_empty() {
            return Ok(());
        }
        // The store drops these pages for good: a run reaching the superblock or the
        // catalog root, or an empty one, is a broken hand-over from the blob space.
        assert!(runs.iter().all(|r| r.start > super::catalog::CATALOG_ROOT && r.start < r.end));
        self.pool.store().discard(&runs)?;
        b.lock_space().make_available(&runs);
        if self.closed.load(Ordering::Acquire) {
            // Close's own checkpoint: no batch may follow it.
            return Ok(());
        }
        self.shrink_blob_space(b)
    }

    /// Free blob extents at the top of the allocated ids go back to the allocator (a batch of
    /// its own), so ids a burst of blobs took serve tree pages again.
    fn shrink_blob_space(&self, b: &BlobState) -> Result<()> {
        let estimate = log_estimate_bytes(64, 2);
        // Bounded: each round removes an extent, and extents are at least a page.
        for _ in 0..blob::SHRINK_ROUNDS_MAX {
            let shrunk = self.write_txn(Durability::None, estimate, |env| {
                let top = b.lock_space().shrink_top(env.alloc.state().high_water);
                let Some(start) = top else { return Ok(false) };
                env.alloc.lower_high_water(start);
                assert_eq!(env.alloc.state().high_water, start, "the space gave its top back");
                Ok(true)
            })?;
            if !shrunk {
                break;
            }
        }
        Ok(())
    }

    /// A run of `pages` ids for a new blob, growing the blob space when no extent holds it.
    fn take_blob_run(&self, b: &BlobState, pages: u64) -> Result<Range<PageId>> {
        // An empty value is stored with no run (`write_blob`); the space refuses empty takes.
        assert!(pages > 0, "a run taken for a blob of no pages");
        self.open_blob_gates(b)?;
        // Bounded: a round after a grow finds the extent it added unless concurrent writers
        // took it first (each grow adds at least this blob's run).
        for _ in 0..blob::TAKE_ROUNDS_MAX {
            if let Some(r) = b.lock_space().take(pages) {
                return Ok(r);
            }
            // Freed runs wait for their commits to be durable: with lazy commits, make the log
            // durable rather than grow the space by every run a recent batch freed.
            let gated = b.lock_space().gated_pages();
            if let (Some(logger), true) = (self.wal_logger(), gated >= pages) {
                logger.wal()?.flush()?;
                self.open_blob_gates(b)?;
                if let Some(r) = b.lock_space().take(pages) {
                    return Ok(r);
                }
            }
            self.grow_blob_space(b, pages)?;
        }
        let rounds = blob::TAKE_ROUNDS_MAX;
        Err(crate::OutOfSpaceError::BlobRun { pages, rounds }.into())
    }

    /// A batch of its own: at least `pages` ids from the high-water mark become a free extent.
    fn grow_blob_space(&self, b: &BlobState, pages: u64) -> Result<()> {
        let estimate = log_estimate_bytes(64, 3);
        self.write_txn(Durability::None, estimate, |env| {
            let run = env.alloc.take_high_water_run(pages, blob::GROW_PAGES_MIN)?;
            assert!(run.end - run.start >= pages, "a grow of {run:?} for {pages} pages");
            b.lock_space().grow(run);
            Ok(())
        })
    }

    /// Under the writer mutex, at the end of a batch with a log: when the batch would leave
    /// more extent changes since the last fold than a checkpoint record carries, the batch
    /// itself brings the free-extent tree up to date (its commit says it folds). The room
    /// for that is in every batch's estimate ([`super::blob_state::fold_reserve_bytes`]).
    pub(super) fn fold_blobs_if_full(&self, env: Env<'_>) -> Result<()> {
        let Some(b) = self.blobs.get() else { return Ok(()) };
        debug_assert!(self.writer_held(), "a fold outside the batch it ends");
        let (pending, fold_ops) = {
            let space = b.lock_space();
            (space.since_fold().len() + space.batch_changes(), space.fold_ops_bound())
        };
        if b.fold.needs_fold(pending, fold_ops) {
            let changed = fold_free_tree(b, env)?;
            b.counters.folds.fetch_add(1, Ordering::Relaxed);
            assert!(changed <= fold_ops, "{changed} tree changes, at most {fold_ops} expected");
        }
        Ok(())
    }

    /// Writes `value` as a blob (durable when this returns) and returns its stored reference
    /// and the run it took. `prev_clock`: the clock of the version it replaces (0: none).
    pub(super) fn write_blob(
        &self,
        value: &[u8],
        prev_clock: u64,
    ) -> Result<(Vec<u8>, Option<Range<PageId>>)> {
        let b = self.blob_state()?;
        // References and pages check the low 32 bits: two versions of one page id share them only
        // 2^32 blob writes apart, and a read checks the value's crc32c besides.
        let seq = b.seq.fetch_add(1, Ordering::Relaxed) as u32;
        let now = self.pool.write_clock().max(1);
        let pages = (value.len() as u64).div_ceil(CHUNK_BYTES as u64);
        let mut r = BlobRef {
            first: 0,
            len_bytes: value.len() as u64,
            seq,
            crc: crc32c::crc32c(value),
            clock: prev_clock,
        };
        if pages == 0 {
            r.clock = now;
            return Ok((r.encode(), None));
        }
        let run = self.take_blob_run(b, pages)?;
        r.first = run.start;
        // What readers and `release_blob` derive from the reference is the run taken: pages
        // per run match the value's length, and the run lies clear of the superblock.
        assert_eq!(r.page_range(), run, "a run for {} bytes", value.len());
        assert!(run.start > crate::page::meta::META_PAGE_ID);
        let written = self.write_blob_pages(&r, value, now);
        if let Err(e) = written {
            // Never named by a commit: its pages may go and the run be taken again.
            if let Some(s) = &b.stager {
                s.unstage(&run);
            }
            // Dropped before it may be taken again: a later blob's pages must not be dropped.
            let _ = self.pool.store().discard(std::slice::from_ref(&run));
            b.lock_space().untake(run.clone());
            return Err(e);
        }
        r.clock = now;
        b.counters.blobs_written.fetch_add(1, Ordering::Relaxed);
        b.counters.value_bytes_written.fetch_add(value.len() as u64, Ordering::Relaxed);
        b.counters.pages_written.fetch_add(pages, Ordering::Relaxed);
        Ok((r.encode(), Some(run)))
    }

    /// The pages of blob `r` (holding `value`): staged when small and a log orders them,
    /// else in groups, each durable before the next.
    fn write_blob_pages(&self, r: &BlobRef, value: &[u8], now: u64) -> Result<()> {
        // `write_blob`'s hand-over: a taken run, as long as the value's chunks.
        assert!(r.pages() > 0 && r.first > crate::page::meta::META_PAGE_ID);
        assert_eq!(r.len_bytes, value.len() as u64, "the reference names this value");
        let b = self.blob_state()?;
        if let (Some(stager), true) = (&b.stager, r.pages() <= blob::WRITE_GROUP_PAGES as u64) {
            let mut pages = Vec::with_capacity(r.pages() as usize);
            for (i, chunk) in value.chunks(CHUNK_BYTES).enumerate() {
                // Built in its shared allocation: one 4 KiB allocation per page, not two and
                // a copy (this runs once per put of a value of a few KB).
                let mut staged: Arc<PageBuf> = Arc::new([0u8; PAGE_SIZE]);
                let pid = r.first + i as u64;
                let Some(p) = Arc::get_mut(&mut staged) else {
                    unreachable!("a new Arc has no other owner")
                };
                blob::format::build_page(p, pid, r, i as u32, chunk, now);
                pages.push((pid, staged));
            }
            return stager.stage(pages);
        }
        let store = self.pool.store();
        let group_bytes = blob::WRITE_GROUP_PAGES * CHUNK_BYTES;
        let mut buf = AlignedBuf::zeroed(blob::WRITE_GROUP_PAGES * PAGE_SIZE);
        for (g, group) in value.chunks(group_bytes).enumerate() {
            let first_index = (g * blob::WRITE_GROUP_PAGES) as u64;
            let n = group.len().div_ceil(CHUNK_BYTES);
            let mut pids = Vec::with_capacity(n);
            for (i, (chunk, p)) in
                group.chunks(CHUNK_BYTES).zip(buf.chunks_mut(PAGE_SIZE)).enumerate()
            {
                let p: &mut PageBuf = p
                    .try_into()
                    .map_err(|_| Corruption::BufferNotPageSized { buffer: "blob page" })?;
                let index = first_index + i as u64;
                let pid = r.first + index;
                blob::format::build_page(p, pid, r, index as u32, chunk, now);
                pids.push(pid);
            }
            let pages: Vec<(PageId, &PageBuf)> = pids
                .iter()
                .zip(buf.chunks(PAGE_SIZE))
                .filter_map(|(pid, p)| p.try_into().ok().map(|p: &PageBuf| (*pid, p)))
                .collect();
            assert_eq!(pages.len(), n, "every blob page of the group is handed over");
            store.write_blobs(&pages)?;
        }
        Ok(())
    }

    /// The batch as stored values, blobs written (before the writer mutex). On error every
    /// run taken so far is given back.
    pub(super) fn store_batch<'a>(&self, batch: &'a WriteBatch) -> Result<Vec<StoredOp<'a>>> {
        let b = self.blob_state()?;
        let mut out: Vec<StoredOp<'a>> = Vec::with_capacity(batch.ops.len());
        let result = (|| {
            for op in &batch.ops {
                out.push(match op {
                    BatchOp::Put { tree, key, value } => {
                        if b.goes_out_of_line(value.len())? {
                            let prev = self.previous_clock(tree, key);
                            let (stored, run) = self.write_blob(value, prev)?;
                            StoredOp::Put { tree, key, stored, run }
                        } else {
                            StoredOp::Put { tree, key, stored: encode_inline(value), run: None }
                        }
                    }
                    BatchOp::Delete { tree, key } => StoredOp::Delete { tree, key },
                });
            }
            Ok(())
        })();
        if let Err(e) = result {
            self.abandon_runs(&out);
            return Err(e);
        }
        // The batch applies `out` op for op in place of `batch` (failures name its index).
        assert_eq!(out.len(), batch.ops.len(), "one stored op per batch op");
        Ok(out)
    }

    /// The runs of a batch that will not commit: taken again later, their pages dropped.
    pub(super) fn abandon_runs(&self, ops: &[StoredOp<'_>]) {
        let Some(b) = self.blobs.get() else { return };
        let runs: Vec<Range<PageId>> = ops
            .iter()
            .filter_map(|op| match op {
                StoredOp::Put { run: Some(r), .. } => Some(r.clone()),
                _ => None,
            })
            .collect();
        // Each was taken whole for a blob of at least a page (`write_blob`).
        assert!(runs.iter().all(|r| r.start < r.end), "an empty run abandoned");
        for r in &runs {
            if let Some(s) = &b.stager {
                s.unstage(r);
            }
        }
        // Dropped before they may be taken again: a later blob's pages must not be dropped.
        let _ = self.pool.store().discard(&runs);
        for r in &runs {
            b.lock_space().untake(r.clone());
        }
    }

    /// The write clock of the blob `key` holds now (0: none), for the next version's history.
    fn previous_clock(&self, tree: &str, key: &[u8]) -> u64 {
        let core = self.trees.read().unwrap_or_else(|e| e.into_inner()).get(tree).cloned();
        let Some(core) = core else { return 0 };
        // The map holds the catalog's entries, never the catalog itself (tree 0).
        debug_assert_ne!(core.id, 0, "tree {tree} resolved to the catalog");
        let found = core.get_with(self.env(), key, |v| match decode_stored(v) {
            Ok(Stored::Blob(r)) => r.clock,
            _ => 0,
        });
        found.ok().flatten().unwrap_or(0)
    }

    /// Under the writer mutex, with the batch's trees held: puts or deletes `key` as stored and
    /// frees the blob it named before. Returns whether the key was present.
    pub(super) fn apply_stored(
        &self,
        env: Env<'_>,
        g: &Exclusive<'_>,
        op: &StoredOp<'_>,
    ) -> Result<bool> {
        debug_assert!(self.writer_held(), "a batch applies under the writer mutex");
        let old = g.get(env, op.key())?;
        match op {
            StoredOp::Put { stored, .. } => g.put(env, op.key(), stored)?,
            StoredOp::Delete { .. } => {
                if old.is_some() {
                    g.delete(env, op.key())?;
                }
            }
        }
        self.settle_stored(op, old.as_deref())?;
        Ok(old.is_some())
    }

    /// Under the writer mutex, once `op` changed its key, which held `old`: the run a put
    /// claims leaves the free extents, and the blob `old` named (if any) joins them.
    pub(super) fn settle_stored(&self, op: &StoredOp<'_>, old: Option<&[u8]>) -> Result<()> {
        let b = self.blob_state()?;
        // The extent changes ride in this batch's commit record, which the mutex keeps ours.
        debug_assert!(self.writer_held(), "a stored value settled outside its batch");
        if let StoredOp::Put { stored, run: Some(run), .. } = op {
            // `store_batch`'s pairing: the key names the very run the batch claims.
            debug_assert!(
                matches!(decode_stored(stored), Ok(Stored::Blob(r)) if r.page_range() == *run),
                "a claimed run {run:?} its stored value does not name"
            );
            b.lock_space().claim(run.clone());
        }
        if let Some(Ok(Stored::Blob(r))) = old.map(decode_stored) {
            self.release_blob(&r)?;
        }
        Ok(())
    }

    /// Under the writer mutex: the batch frees the blob `r` (its key no longer names it).
    pub(super) fn release_blob(&self, r: &BlobRef) -> Result<()> {
        let b = self.blob_state()?;
        // Freed runs are sealed with the batch's commit, which the mutex keeps its own.
        debug_assert!(self.writer_held(), "a blob freed outside a batch");
        if r.pages() > 0 {
            b.lock_space()
                .release(r.page_range())
                .map_err(|reason| Corruption::BlobRelease { reason })?;
        }
        b.counters.blobs_freed.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Under the writer mutex as a batch ends with a commit record: the extent changes it
    /// made, and whether it folds (none without blobs).
    pub(super) fn commit_extents(&self) -> (Vec<ExtentOp>, bool) {
        // Another batch's changes would ride in this commit otherwise.
        debug_assert!(self.writer_held(), "extent changes taken outside a batch");
        match self.blobs.get() {
            Some(b) => b.lock_space().commit_batch(),
            None => (Vec::new(), false),
        }
    }

    /// The batch's commit record is at `gate`: what it freed waits for it.
    pub(super) fn seal_blobs(&self, gate: Option<Gate>) {
        if let Some(b) = self.blobs.get() {
            // The batch sealed is the one in progress: only the mutex holder has one.
            debug_assert!(self.writer_held(), "a batch sealed outside the writer mutex");
            let mut space = b.lock_space();
            match gate {
                Some(g) => {
                    if g == Gate::Flush {
                        // No log records the changes: the next flush folds them.
                        space.discard_batch();
                    }
                    space.seal(g);
                }
                None => space.forget_unsealed(),
            }
        }
    }

    /// A flush of a database without a log completed: every freed run may be reused.
    pub(super) fn blobs_flushed(&self) -> Result<()> {
        // With a log, freed runs wait for their commit's LSN instead (`open_blob_gates`).
        assert!(self.wal.is_none(), "every gate opened by a flush with a log");
        let Some(b) = self.blobs.get() else { return Ok(()) };
        let runs = b.lock_space().open_gates(None);
        self.pool.store().discard(&runs)?;
        b.lock_space().make_available(&runs);
        Ok(())
    }

    /// After recovery: pages the store holds for ids no committed state names (a blob whose
    /// batch never committed, a grow whose batch was lost) are dropped.
    pub(super) fn drop_uncommitted_blobs(&self) -> Result<()> {
        let Some(b) = self.blobs.get() else { return Ok(()) };
        let mut runs: Vec<Range<PageId>> = b.lock_space().free_extents().collect();
        // Free extents are ids taken from the high-water mark: one above it would be dropped
        // twice, and one the allocator may hand out again.
        let high_water = self.alloc.state().high_water;
        assert!(runs.iter().all(|r| r.start < r.end && r.end <= high_water), "{runs:?}");
        runs.push(self.alloc.state().high_water..self.pool.page_capacity());
        self.pool.store().discard(&runs)
    }

    /// Reads blob `r` whole. Ok(None): a page is not the blob's (replaced meanwhile, or
    /// corrupt: the caller tells the two apart by looking again).
    pub(super) fn read_blob(&self, r: &BlobRef) -> Result<Option<Vec<u8>>> {
        let b = self.blob_state()?;
        let mut out = Vec::with_capacity(r.len_bytes as usize);
        let mut buf = Box::new([0u8; PAGE_SIZE]);
        // A value of a few pages is worth caching; a large one read once would flush the
        // cache of the small values a workload rereads.
        let cache = r.page_range().end - r.page_range().start <= BLOB_CACHE_PAGES_MAX;
        for (i, pid) in r.page_range().enumerate() {
            self.read_blob_page(b, pid, &mut buf, cache)?;
            b.counters.pages_read.fetch_add(1, Ordering::Relaxed);
            if page::verify(&buf, pid).is_err() {
                return Ok(None);
            }
            match blob::format::chunk(&buf, r, i as u64) {
                Ok(c) => out.extend_from_slice(c),
                Err(_) => return Ok(None),
            }
        }
        if crc32c::crc32c(&out) != r.crc {
            return Ok(None);
        }
        // `format::chunk` sized each chunk by the reference: together, the value's length.
        debug_assert_eq!(out.len() as u64, r.len_bytes, "blob {:#x} read whole", r.seq);
        Ok(Some(out))
    }

    /// A stored value read by an iterator as the user's value. A blob replaced since the
    /// iterator read its leaf is looked up again (the key's current value, as any read of the
    /// latest state would see it); a key deleted meanwhile is None, and the iterator passes
    /// over it as a scan begun a moment later would (it never held an empty value).
    pub(super) fn resolve_stored(
        &self,
        core: &TreeCore,
        key: &[u8],
        stored: Vec<u8>,
    ) -> Result<Option<Vec<u8>>> {
        // Iterators resolve values only of a database whose values are tagged.
        debug_assert!(self.blobs.get().is_some(), "a stored value resolved without blobs");
        let mut stored = stored;
        let mut last = None;
        for _ in 0..blob::READ_ATTEMPTS {
            let r = match decode_stored(&stored) {
                Ok(Stored::Inline(v)) => return Ok(Some(v.to_vec())),
                Ok(Stored::Blob(r)) => r,
                Err(e) => return Err(Corruption::StoredValue(e).into()),
            };
            if let Some(v) = self.read_blob(&r)? {
                return Ok(Some(v));
            }
            if last == Some(r) {
                break;
            }
            last = Some(r);
            self.count_read_retry();
            match core.get(self.env(), key)? {
                Some(v) => stored = v,
                None => return Ok(None),
            }
        }
        Err(Corruption::KeyBlob.into())
    }

    /// A blob page as staged, else as the store holds it (unchecked).
    /// Blob page `pid`: from the stager while it waits there, else from the store, through
    /// its cache of stored bytes when `cache` (within the pool's unused budget: the memory the
    /// tree's pages leave goes to values).
    fn read_blob_page(
        &self,
        b: &BlobState,
        pid: PageId,
        buf: &mut PageBuf,
        cache: bool,
    ) -> Result<()> {
        if let Some(p) = b.stager.as_ref().and_then(|s| s.get(pid)) {
            buf.copy_from_slice(&p[..]);
            return Ok(());
        }
        let budget_bytes = if cache { self.pool.untouched_bytes() } else { 0 };
        if self.pool.store().read_page_cached(pid, buf, budget_bytes)? {
            debug_assert!(budget_bytes > 0, "a cache hit without a budget");
            b.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    pub(super) fn count_read_retry(&self) {
        // Only reads of a blob retry: a database without blobs has none to count.
        debug_assert!(self.blobs.get().is_some(), "a blob read retried without blobs");
        if let Some(b) = self.blobs.get() {
            b.counters.read_retries.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Values of at most this many pages go through the store's cache of stored bytes.
const BLOB_CACHE_PAGES_MAX: u64 = 16;

/// A value read as a stream ([`crate::Tree::get_reader`]): inline values from memory, blobs
/// one page at a time, each page checked, the whole value's checksum at the end.
#[derive(Debug)]
pub struct ValueReader {
    len_bytes: u64,
    source: Source,
}

#[derive(Debug)]
enum Source {
    Inline { bytes: Vec<u8>, pos: usize },
    Blob(Box<BlobStream>),
}

#[derive(Debug)]
struct BlobStream {
    db: Arc<DbInner>,
    r: BlobRef,
    next_index: u64,
    page: Box<PageBuf>,
    /// Bytes of the current page's chunk not yet handed out: `page[HEADER..][chunk_pos..chunk_len]`.
    chunk_pos: usize,
    chunk_len: usize,
    crc: u32,
}

impl ValueReader {
    pub(super) fn inline(bytes: Vec<u8>) -> ValueReader {
        // Inline values are the bytes of one leaf cell: larger ones go out of line.
        debug_assert!(bytes.len() <= crate::page::node::MAX_VALUE_BYTES, "{}", bytes.len());
        ValueReader { len_bytes: bytes.len() as u64, source: Source::Inline { bytes, pos: 0 } }
    }
    pub(super) fn blob(db: Arc<DbInner>, r: BlobRef) -> ValueReader {
        // The stream reads its pages through the blob space (staged ones first).
        debug_assert!(db.blobs.get().is_some(), "a blob stream of a database without blobs");
        let stream = BlobStream {
            db,
            r,
            next_index: 0,
            page: Box::new([0u8; PAGE_SIZE]),
            chunk_pos: 0,
            chunk_len: 0,
            crc: 0,
        };
        ValueReader { len_bytes: r.len_bytes, source: Source::Blob(Box::new(stream)) }
    }
    /// The value's length in bytes.
    pub fn len_bytes(&self) -> u64 {
        // The length callers size buffers by is the source's own.
        debug_assert!(match &self.source {
            Source::Inline { bytes, .. } => bytes.len() as u64 == self.len_bytes,
            Source::Blob(s) => s.r.len_bytes == self.len_bytes,
        });
        self.len_bytes
    }
}

fn io_error(msg: String) -> std::io::Error {
    // A reader's caller sees only this message: it must say what failed.
    debug_assert!(!msg.is_empty(), "an I/O error without a message");
    std::io::Error::other(msg)
}

impl BlobStream {
    /// Loads the next page's chunk; false at the end (after checking the value's checksum).
    fn next_chunk(&mut self) -> std::io::Result<bool> {
        // The end is checked before each load: a stream never reads past its last page.
        assert!(self.next_index <= self.r.pages(), "chunk {} of a blob", self.next_index);
        if self.next_index == self.r.pages() {
            if self.crc != self.r.crc {
                return Err(io_error(
                    "blob checksum mismatch: the value was replaced or is corrupt".into(),
                ));
            }
            return Ok(false);
        }
        let pid = self.r.first + self.next_index;
        let b = self.db.blob_state().map_err(|e| io_error(e.to_string()))?;
        // Streamed values are the large ones: read past the cache.
        self.db
            .read_blob_page(b, pid, &mut self.page, false)
            .map_err(|e| io_error(e.to_string()))?;
        b.counters.pages_read.fetch_add(1, Ordering::Relaxed);
        page::verify(&self.page, pid).map_err(|e| {
            io_error(format!(
                "blob page {pid}: {e} (the value may have been replaced while it was read)"
            ))
        })?;
        let chunk = blob::format::chunk(&self.page, &self.r, self.next_index)
            .map_err(|e| io_error(format!("{e} (the value was replaced while it was read)")))?;
        self.crc = crc32c::crc32c_append(self.crc, chunk);
        self.chunk_len = chunk.len();
        self.chunk_pos = 0;
        self.next_index += 1;
        Ok(true)
    }
}

impl std::io::Read for ValueReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        match &mut self.source {
            Source::Inline { bytes, pos } => {
                let n = out.len().min(bytes.len() - *pos);
                out[..n].copy_from_slice(&bytes[*pos..*pos + n]);
                *pos += n;
                // The cursor stays within the value (0 read, from then on, is its end).
                debug_assert!(*pos <= bytes.len() && bytes.len() as u64 == self.len_bytes);
                Ok(n)
            }
            Source::Blob(s) => {
                // Bounded: each round either hands out bytes or loads the next page.
                while s.chunk_pos == s.chunk_len {
                    if out.is_empty() || !s.next_chunk()? {
                        return Ok(0);
                    }
                }
                let from = page::HEADER_BYTES + s.chunk_pos;
                let n = out.len().min(s.chunk_len - s.chunk_pos);
                out[..n].copy_from_slice(&s.page[from..from + n]);
                s.chunk_pos += n;
                // `next_chunk`'s hand-over: a chunk within the page, handed out once.
                debug_assert!(s.chunk_pos <= s.chunk_len && from + n <= PAGE_SIZE);
                Ok(n)
            }
        }
    }
}

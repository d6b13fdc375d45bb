//! RocksDB through its C API (`rocksdb/c.h`, Debian's librocksdb), opened at run time.

use std::ffi::{c_char, c_int, c_uchar, c_void, CString};
use std::ptr::null_mut;

use super::dl::{c_api, cstring, text_of};
use super::durability::Durability;
use super::error::PeerError;
use super::peer::Peer;
use super::setup::PeerSetup;
use wafer_harness::metrics::CounterSnapshot;
use wafer_harness::runner::{KvTarget, TargetError};

type Opaque = *mut c_void;
type Err = *mut *mut c_char;

c_api!(RocksApi {
    fn rocksdb_options_create() -> Opaque;
    fn rocksdb_options_destroy(Opaque) -> ();
    fn rocksdb_options_set_create_if_missing(Opaque, c_uchar) -> ();
    fn rocksdb_options_increase_parallelism(Opaque, c_int) -> ();
    fn rocksdb_options_set_max_background_jobs(Opaque, c_int) -> ();
    fn rocksdb_options_set_compression(Opaque, c_int) -> ();
    fn rocksdb_options_set_write_buffer_size(Opaque, usize) -> ();
    fn rocksdb_options_set_max_write_buffer_number(Opaque, c_int) -> ();
    fn rocksdb_options_set_target_file_size_base(Opaque, u64) -> ();
    fn rocksdb_options_set_max_bytes_for_level_base(Opaque, u64) -> ();
    fn rocksdb_options_set_level_compaction_dynamic_level_bytes(Opaque, c_uchar) -> ();
    fn rocksdb_options_set_block_based_table_factory(Opaque, Opaque) -> ();
    fn rocksdb_options_set_use_direct_reads(Opaque, c_uchar) -> ();
    fn rocksdb_options_set_use_direct_io_for_flush_and_compaction(Opaque, c_uchar) -> ();
    fn rocksdb_block_based_options_create() -> Opaque;
    fn rocksdb_block_based_options_destroy(Opaque) -> ();
    fn rocksdb_block_based_options_set_block_cache(Opaque, Opaque) -> ();
    fn rocksdb_block_based_options_set_filter_policy(Opaque, Opaque) -> ();
    fn rocksdb_block_based_options_set_cache_index_and_filter_blocks(Opaque, c_uchar) -> ();
    fn rocksdb_filterpolicy_create_bloom(f64) -> Opaque;
    fn rocksdb_cache_create_lru(usize) -> Opaque;
    fn rocksdb_cache_destroy(Opaque) -> ();
    fn rocksdb_open(Opaque, *const c_char, Err) -> Opaque;
    fn rocksdb_close(Opaque) -> ();
    fn rocksdb_writeoptions_create() -> Opaque;
    fn rocksdb_writeoptions_destroy(Opaque) -> ();
    fn rocksdb_writeoptions_set_sync(Opaque, c_uchar) -> ();
    fn rocksdb_readoptions_create() -> Opaque;
    fn rocksdb_readoptions_destroy(Opaque) -> ();
    fn rocksdb_put(Opaque, Opaque, *const c_char, usize, *const c_char, usize, Err) -> ();
    fn rocksdb_get(Opaque, Opaque, *const c_char, usize, *mut usize, Err) -> *mut c_char;
    fn rocksdb_free(*mut c_void) -> ();
    fn rocksdb_create_iterator(Opaque, Opaque) -> Opaque;
    fn rocksdb_iter_seek(Opaque, *const c_char, usize) -> ();
    fn rocksdb_iter_valid(Opaque) -> c_uchar;
    fn rocksdb_iter_next(Opaque) -> ();
    fn rocksdb_iter_get_error(Opaque, Err) -> ();
    fn rocksdb_iter_destroy(Opaque) -> ();
    fn rocksdb_property_value(Opaque, *const c_char) -> *mut c_char;
    fn rocksdb_writebatch_create() -> Opaque;
    fn rocksdb_writebatch_destroy(Opaque) -> ();
    fn rocksdb_writebatch_put(Opaque, *const c_char, usize, *const c_char, usize) -> ();
    fn rocksdb_write(Opaque, Opaque, Opaque, Err) -> ();
    fn rocksdb_options_set_enable_blob_files(Opaque, c_uchar) -> ();
    fn rocksdb_options_set_min_blob_size(Opaque, u64) -> ();
    fn rocksdb_options_set_blob_file_size(Opaque, u64) -> ();
    fn rocksdb_options_set_blob_compression_type(Opaque, c_int) -> ();
    fn rocksdb_options_set_enable_blob_gc(Opaque, c_uchar) -> ();
    fn rocksdb_options_set_blob_gc_age_cutoff(Opaque, f64) -> ();
    fn rocksdb_flush_wal(Opaque, c_uchar, Err) -> ();
    fn rocksdb_options_enable_statistics(Opaque) -> ();
    fn rocksdb_options_statistics_get_string(Opaque) -> *mut c_char;
});

/// RocksDB's tickers of bytes written, by the files they went to (`statistics.h`).
const WAL_BYTES: &str = "rocksdb.wal.bytes";
const FLUSH_BYTES: &str = "rocksdb.flush.write.bytes";
const COMPACT_BYTES: &str = "rocksdb.compact.write.bytes";
const BLOB_BYTES: &str = "rocksdb.blobdb.blob.file.bytes.written";

/// A ticker's count in `rocksdb_options_statistics_get_string`'s text (`NAME COUNT : N`).
fn ticker(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| {
            let rest = l.trim().strip_prefix(name)?;
            rest.trim().strip_prefix("COUNT :")?.trim().parse().ok()
        })
        .unwrap_or(0)
}

/// Bytes written by file kind from the statistics text: the WAL; blob files; SSTs as flush
/// and compaction writes less the blob bytes (a flush or compaction job's write ticker counts
/// every file the job writes, blob files included).
pub(crate) fn written_by_kind(text: &str) -> Vec<(&'static str, u64)> {
    let blob = ticker(text, BLOB_BYTES);
    let jobs = ticker(text, FLUSH_BYTES) + ticker(text, COMPACT_BYTES);
    vec![("wal", ticker(text, WAL_BYTES)), ("sst", jobs.saturating_sub(blob)), ("blob files", blob)]
}

/// Integrated BlobDB's garbage collection: blobs in the oldest quarter of the blob files are
/// rewritten when compaction meets them (RocksDB's default cutoff, its wiki's starting point).
const BLOB_GC_AGE_CUTOFF: f64 = 0.25;

/// `rocksdb_lz4_compression` in c.h.
const LZ4_COMPRESSION: c_int = 4;

/// A RocksDB database with the handles every operation shares (all thread-safe in RocksDB).
pub(crate) struct RocksPeer {
    api: RocksApi,
    db: Opaque,
    options: Opaque,
    table: Opaque,
    cache: Opaque,
    write: Opaque,
    read: Opaque,
    settings: serde_json::Value,
    capacity_bytes: u64,
}

// SAFETY: RocksDB's DB, options and read/write option objects may be used from any thread
// concurrently (RocksDB's documented thread-safety for DB and const options).
unsafe impl Send for RocksPeer {}
// SAFETY: as above.
unsafe impl Sync for RocksPeer {}

impl std::fmt::Debug for RocksPeer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksPeer").field("settings", &self.settings).finish()
    }
}

/// Takes the error string RocksDB allocated, if any.
fn take_error(api: &RocksApi, err: *mut c_char) -> Option<String> {
    if err.is_null() {
        return None;
    }
    // SAFETY: RocksDB set `err` to a malloc'ed NUL-terminated string, freed after the copy.
    let text = unsafe { text_of(err, "") };
    // SAFETY: allocated by RocksDB; rocksdb_free is its deallocator.
    unsafe { (api.rocksdb_free)(err.cast()) };
    Some(text)
}

impl RocksPeer {
    /// `blobs`: integrated BlobDB, values of `setup.blob_threshold_bytes` or more in blob files
    /// (as large as a memtable, as RocksDB's BlobDB guide sets them), LZ4, blob GC on.
    pub(crate) fn open(setup: &PeerSetup, blobs: bool) -> Result<RocksPeer, PeerError> {
        let api = RocksApi::load(&["librocksdb.so.7.8", "librocksdb.so"], "librocksdb7.8")?;
        let dir = cstring(&setup.dir.join("rocksdb").to_string_lossy())?;
        // Memtables: 1/4 of the cache budget in two buffers (at least 4 MiB each), so the
        // block cache keeps the rest; L1 sized to ten memtables as RocksDB's tuning guide has.
        let write_buffer = (setup.cache_bytes / 4).clamp(4 << 20, 64 << 20);
        let block_cache = setup.cache_bytes.saturating_sub(2 * write_buffer).max(1 << 20);
        let threads = (setup.threads as c_int).max(2);
        // SAFETY: each call is the C API's documented use on objects it created here.
        let (options, table, cache) = unsafe {
            let o = (api.rocksdb_options_create)();
            (api.rocksdb_options_set_create_if_missing)(o, 1);
            (api.rocksdb_options_increase_parallelism)(o, threads);
            (api.rocksdb_options_set_max_background_jobs)(o, threads);
            (api.rocksdb_options_set_compression)(o, LZ4_COMPRESSION);
            (api.rocksdb_options_set_write_buffer_size)(o, write_buffer as usize);
            (api.rocksdb_options_set_max_write_buffer_number)(o, 2);
            (api.rocksdb_options_set_target_file_size_base)(o, write_buffer);
            (api.rocksdb_options_set_max_bytes_for_level_base)(o, write_buffer * 10);
            (api.rocksdb_options_set_level_compaction_dynamic_level_bytes)(o, 1);
            let direct = u8::from(setup.direct_io);
            (api.rocksdb_options_set_use_direct_reads)(o, direct);
            (api.rocksdb_options_set_use_direct_io_for_flush_and_compaction)(o, direct);
            let t = (api.rocksdb_block_based_options_create)();
            let c = (api.rocksdb_cache_create_lru)(block_cache as usize);
            (api.rocksdb_block_based_options_set_block_cache)(t, c);
            (api.rocksdb_block_based_options_set_filter_policy)(
                t,
                (api.rocksdb_filterpolicy_create_bloom)(10.0),
            );
            (api.rocksdb_block_based_options_set_cache_index_and_filter_blocks)(t, 1);
            (api.rocksdb_options_set_block_based_table_factory)(o, t);
            // Tickers of bytes by file kind, for the rows' drilldown.
            (api.rocksdb_options_enable_statistics)(o);
            if blobs {
                (api.rocksdb_options_set_enable_blob_files)(o, 1);
                (api.rocksdb_options_set_min_blob_size)(o, u64::from(setup.blob_threshold_bytes));
                (api.rocksdb_options_set_blob_file_size)(o, write_buffer);
                (api.rocksdb_options_set_blob_compression_type)(o, LZ4_COMPRESSION);
                (api.rocksdb_options_set_enable_blob_gc)(o, 1);
                (api.rocksdb_options_set_blob_gc_age_cutoff)(o, BLOB_GC_AGE_CUTOFF);
            }
            (o, t, c)
        };
        let mut err: *mut c_char = null_mut();
        // SAFETY: options and path are valid; err receives an allocated message on failure.
        let db = unsafe { (api.rocksdb_open)(options, dir.as_ptr(), &mut err) };
        if let Some(e) = take_error(&api, err) {
            return Err(PeerError::Engine { engine: "rocksdb", op: "open", message: e });
        }
        assert!(!db.is_null(), "rocksdb_open returned neither a handle nor an error");
        // SAFETY: plain constructors and a setter on the object just made.
        let (write, read) = unsafe {
            let w = (api.rocksdb_writeoptions_create)();
            (api.rocksdb_writeoptions_set_sync)(w, u8::from(setup.durability == Durability::Sync));
            (w, (api.rocksdb_readoptions_create)())
        };
        let settings = serde_json::json!({
            "library": "librocksdb 7.8 (Debian)",
            "compaction": "leveled, dynamic level bytes",
            "block_cache_bytes": block_cache,
            "write_buffer_bytes": write_buffer,
            "max_write_buffer_number": 2,
            "max_background_jobs": threads,
            "compression": "lz4",
            "bloom_bits_per_key": 10,
            "cache_index_and_filter_blocks": true,
            "wal": "on, in the database directory",
            "direct_reads_and_flush": setup.direct_io,
            "sync_each_write": setup.durability == Durability::Sync,
            "statistics": "on (bytes written by file kind for the drilldown)",
            "blob_files": blobs.then(|| serde_json::json!({
                "enable_blob_files": true,
                "min_blob_size": setup.blob_threshold_bytes,
                "blob_file_size": write_buffer,
                "blob_compression_type": "lz4",
                "enable_blob_garbage_collection": true,
                "blob_garbage_collection_age_cutoff": BLOB_GC_AGE_CUTOFF,
            })),
        });
        Ok(RocksPeer {
            api,
            db,
            options,
            table,
            cache,
            write,
            read,
            settings,
            capacity_bytes: setup.dataset_bytes(),
        })
    }

    fn put(&self, op: &'static str, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        let mut err: *mut c_char = null_mut();
        // SAFETY: db and write options live as long as self; slices are valid for the call.
        unsafe {
            (self.api.rocksdb_put)(
                self.db,
                self.write,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
                &mut err,
            )
        };
        take_error(&self.api, err).map_or(Ok(()), |e| Err(TargetError::new(op, e)))
    }

    fn property(&self, name: &str) -> Option<String> {
        let name = CString::new(name).ok()?;
        // SAFETY: db is open; the result is malloc'ed by RocksDB (or null).
        let p = unsafe { (self.api.rocksdb_property_value)(self.db, name.as_ptr()) };
        if p.is_null() {
            return None;
        }
        // SAFETY: a NUL-terminated string from RocksDB, freed after the copy.
        let text = unsafe { text_of(p, "") };
        // SAFETY: allocated by RocksDB.
        unsafe { (self.api.rocksdb_free)(p.cast()) };
        Some(text)
    }
}

impl KvTarget for RocksPeer {
    fn read(&self, key: &[u8]) -> Result<bool, TargetError> {
        let mut len = 0usize;
        let mut err: *mut c_char = null_mut();
        // SAFETY: db and read options live as long as self; the returned value is
        // malloc'ed by RocksDB and freed below.
        let value = unsafe {
            (self.api.rocksdb_get)(
                self.db,
                self.read,
                key.as_ptr().cast(),
                key.len(),
                &mut len,
                &mut err,
            )
        };
        if let Some(e) = take_error(&self.api, err) {
            return Err(TargetError::new("read", e));
        }
        let found = !value.is_null();
        if found {
            // SAFETY: allocated by RocksDB.
            unsafe { (self.api.rocksdb_free)(value.cast()) };
        }
        Ok(found)
    }

    fn update(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.put("update", key, value)
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.put("insert", key, value)
    }

    /// One `WriteBatch` for the whole batch.
    fn insert_batch(&self, records: &[(&[u8], &[u8])]) -> Result<(), TargetError> {
        // SAFETY: a fresh batch, destroyed below on every path.
        let batch = unsafe { (self.api.rocksdb_writebatch_create)() };
        for (key, value) in records {
            // SAFETY: a live batch; RocksDB copies the slices.
            unsafe {
                (self.api.rocksdb_writebatch_put)(
                    batch,
                    key.as_ptr().cast(),
                    key.len(),
                    value.as_ptr().cast(),
                    value.len(),
                )
            };
        }
        let mut err: *mut c_char = null_mut();
        // SAFETY: db and write options live as long as self; the batch is live.
        unsafe { (self.api.rocksdb_write)(self.db, self.write, batch, &mut err) };
        // SAFETY: created above, destroyed once.
        unsafe { (self.api.rocksdb_writebatch_destroy)(batch) };
        take_error(&self.api, err).map_or(Ok(()), |e| Err(TargetError::new("insert batch", e)))
    }

    fn scan(&self, start: &[u8], count: usize) -> Result<usize, TargetError> {
        let mut seen = 0;
        let mut err: *mut c_char = null_mut();
        // SAFETY: the iterator is created, used and destroyed here on an open db.
        unsafe {
            let it = (self.api.rocksdb_create_iterator)(self.db, self.read);
            (self.api.rocksdb_iter_seek)(it, start.as_ptr().cast(), start.len());
            while seen < count && (self.api.rocksdb_iter_valid)(it) != 0 {
                seen += 1;
                (self.api.rocksdb_iter_next)(it);
            }
            (self.api.rocksdb_iter_get_error)(it, &mut err);
            (self.api.rocksdb_iter_destroy)(it);
        }
        take_error(&self.api, err).map_or(Ok(seen), |e| Err(TargetError::new("scan", e)))
    }

    fn counters(&self) -> CounterSnapshot {
        CounterSnapshot::default()
    }

    fn data_device_capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    fn describe(&self) -> serde_json::Value {
        let mut d = serde_json::json!({ "kind": "rocksdb", "settings": self.settings });
        if let Some(size) = self.property("rocksdb.total-sst-files-size") {
            d["sst_bytes"] = size.trim().parse::<u64>().map_or(size.into(), Into::into);
        }
        d
    }
}

impl Peer for RocksPeer {
    fn target(&self) -> &dyn KvTarget {
        self
    }

    fn written_by_kind(&self) -> Vec<(&'static str, u64)> {
        // SAFETY: options live until drop; the text is malloc'ed by RocksDB (or null).
        let p = unsafe { (self.api.rocksdb_options_statistics_get_string)(self.options) };
        if p.is_null() {
            return Vec::new();
        }
        // SAFETY: a NUL-terminated string from RocksDB, freed after the copy.
        let text = unsafe { text_of(p, "") };
        // SAFETY: allocated by RocksDB.
        unsafe { (self.api.rocksdb_free)(p.cast()) };
        written_by_kind(&text)
    }

    /// The WAL written and synced (memtables' data is in it; flushes and compactions sync
    /// their own files).
    fn sync(&self) -> Result<(), TargetError> {
        let mut err: *mut c_char = null_mut();
        // SAFETY: db is open until drop; FlushWAL is thread-safe.
        unsafe { (self.api.rocksdb_flush_wal)(self.db, 1, &mut err) };
        take_error(&self.api, err).map_or(Ok(()), |e| Err(TargetError::new("sync", e)))
    }
}

impl Drop for RocksPeer {
    fn drop(&mut self) {
        // SAFETY: every handle was created in open and is destroyed once, the db first (it
        // waits for its background work and flushes nothing unsynced beyond the WAL).
        unsafe {
            (self.api.rocksdb_close)(self.db);
            (self.api.rocksdb_writeoptions_destroy)(self.write);
            (self.api.rocksdb_readoptions_destroy)(self.read);
            (self.api.rocksdb_options_destroy)(self.options);
            (self.api.rocksdb_block_based_options_destroy)(self.table);
            (self.api.rocksdb_cache_destroy)(self.cache);
        }
    }
}

//! LMDB through its C API (`lmdb.h`, Debian's liblmdb0), opened at run time. LMDB has no cache
//! of its own and no log: it maps the file and commits by copy-on-write, so its "cache" is the
//! OS page cache and a commit writes the changed pages and the meta page.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::ptr::null_mut;

use super::dl::{c_api, cstring, text_of};
use super::durability::Durability;
use super::error::PeerError;
use super::peer::Peer;
use super::setup::PeerSetup;
use wafer_harness::metrics::CounterSnapshot;
use wafer_harness::runner::{KvTarget, TargetError};

type Opaque = *mut c_void;

#[repr(C)]
pub(crate) struct MdbVal {
    size: usize,
    data: *mut c_void,
}

impl MdbVal {
    fn of(bytes: &[u8]) -> MdbVal {
        // LMDB never writes through a key or data pointer the caller passes in.
        MdbVal { size: bytes.len(), data: bytes.as_ptr().cast_mut().cast() }
    }

    fn empty() -> MdbVal {
        MdbVal { size: 0, data: null_mut() }
    }
}

c_api!(LmdbApi {
    fn mdb_env_create(*mut Opaque) -> c_int;
    fn mdb_env_set_mapsize(Opaque, usize) -> c_int;
    fn mdb_env_set_maxreaders(Opaque, c_uint) -> c_int;
    fn mdb_env_open(Opaque, *const c_char, c_uint, c_uint) -> c_int;
    fn mdb_env_close(Opaque) -> ();
    fn mdb_env_sync(Opaque, c_int) -> c_int;
    fn mdb_txn_begin(Opaque, Opaque, c_uint, *mut Opaque) -> c_int;
    fn mdb_txn_commit(Opaque) -> c_int;
    fn mdb_txn_abort(Opaque) -> ();
    fn mdb_dbi_open(Opaque, *const c_char, c_uint, *mut c_uint) -> c_int;
    fn mdb_get(Opaque, c_uint, *mut MdbVal, *mut MdbVal) -> c_int;
    fn mdb_put(Opaque, c_uint, *mut MdbVal, *mut MdbVal, c_uint) -> c_int;
    fn mdb_cursor_open(Opaque, c_uint, *mut Opaque) -> c_int;
    fn mdb_cursor_get(Opaque, *mut MdbVal, *mut MdbVal, c_int) -> c_int;
    fn mdb_cursor_close(Opaque) -> ();
    fn mdb_strerror(c_int) -> *const c_char;
});

const MDB_NOSYNC: c_uint = 0x10000;
const MDB_RDONLY: c_uint = 0x20000;
/// Read transactions not tied to a thread's slot: the runner's threads each open their own.
const MDB_NOTLS: c_uint = 0x200000;
/// The OS page cache is the only cache: no read-ahead of pages a point lookup never uses.
const MDB_NORDAHEAD: c_uint = 0x800000;
const MDB_NOTFOUND: c_int = -30798;
const MDB_NEXT: c_int = 8;
const MDB_SET_RANGE: c_int = 17;

pub(crate) struct LmdbPeer {
    api: LmdbApi,
    env: Opaque,
    dbi: c_uint,
    settings: serde_json::Value,
    capacity_bytes: u64,
}

// SAFETY: an MDB_env is shared by threads by design; every transaction here is begun and ended
// on one thread within one call (MDB_NOTLS lets read transactions do so on any thread).
unsafe impl Send for LmdbPeer {}
// SAFETY: as above.
unsafe impl Sync for LmdbPeer {}

impl std::fmt::Debug for LmdbPeer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LmdbPeer").field("settings", &self.settings).finish()
    }
}

impl LmdbPeer {
    pub(crate) fn open(setup: &PeerSetup) -> Result<LmdbPeer, PeerError> {
        let api = LmdbApi::load(&["liblmdb.so.0", "liblmdb.so"], "liblmdb0")?;
        let dir = setup.dir.join("lmdb");
        std::fs::create_dir_all(&dir).map_err(|e| PeerError::io(&dir, e))?;
        let path = cstring(&dir.to_string_lossy())?;
        // Room for the B+tree's page fill and copy-on-write's free pages: 4x the data.
        let map_bytes = (setup.dataset_bytes() * 4).max(64 << 20);
        let mut flags = MDB_NOTLS | MDB_NORDAHEAD;
        if setup.durability == Durability::Lazy {
            flags |= MDB_NOSYNC;
        }
        let mut env: Opaque = null_mut();
        let check = |op: &'static str, rc: c_int| lmdb_result(&api, op, rc);
        // SAFETY: the documented sequence create, set sizes, open on a fresh handle.
        unsafe { check("env create", (api.mdb_env_create)(&mut env))? };
        // SAFETY: as above, on the handle just created.
        let opened = unsafe {
            check("set mapsize", (api.mdb_env_set_mapsize)(env, map_bytes as usize))
                .and_then(|_| check("set maxreaders", (api.mdb_env_set_maxreaders)(env, 256)))
                .and_then(|_| {
                    check("env open", (api.mdb_env_open)(env, path.as_ptr(), flags, 0o644))
                })
        };
        if let Err(e) = opened {
            // SAFETY: created above, closed once (LMDB allows closing a failed open).
            unsafe { (api.mdb_env_close)(env) };
            return Err(e.into());
        }
        let mut peer = LmdbPeer {
            api,
            env,
            dbi: 0,
            settings: serde_json::json!({
                "library": "liblmdb 0.9.24 (Debian)",
                "map_bytes": map_bytes,
                "cache": "none of its own: the OS page cache (mmap)",
                "read_ahead": false,
                "log": "none (copy-on-write B+tree, one write transaction at a time)",
                "sync_each_commit": setup.durability == Durability::Sync,
            }),
            capacity_bytes: setup.dataset_bytes(),
        };
        peer.dbi = peer.in_txn(0, "open dbi", |api, txn| {
            let mut dbi: c_uint = 0;
            // SAFETY: a write transaction of this env; the unnamed database always exists.
            let rc = unsafe { (api.mdb_dbi_open)(txn, std::ptr::null(), 0, &mut dbi) };
            lmdb_result(api, "open dbi", rc).map(|_| dbi)
        })?;
        Ok(peer)
    }

    /// Runs `body` in a transaction (read-only with MDB_RDONLY), committing a write one.
    fn in_txn<T>(
        &self,
        flags: c_uint,
        op: &'static str,
        body: impl FnOnce(&LmdbApi, Opaque) -> Result<T, TargetError>,
    ) -> Result<T, TargetError> {
        let mut txn: Opaque = null_mut();
        // SAFETY: env is open; the transaction ends below on every path.
        let rc = unsafe { (self.api.mdb_txn_begin)(self.env, null_mut(), flags, &mut txn) };
        lmdb_result(&self.api, op, rc)?;
        let out = body(&self.api, txn);
        if out.is_err() || flags & MDB_RDONLY != 0 {
            // SAFETY: a live transaction, ended once.
            unsafe { (self.api.mdb_txn_abort)(txn) };
            return out;
        }
        // SAFETY: a live write transaction, ended once (commit frees it, even on failure).
        let rc = unsafe { (self.api.mdb_txn_commit)(txn) };
        lmdb_result(&self.api, op, rc)?;
        out
    }

    fn put(&self, op: &'static str, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.in_txn(0, op, |api, txn| {
            let (mut k, mut v) = (MdbVal::of(key), MdbVal::of(value));
            // SAFETY: a write transaction; key and value outlive the call.
            let rc = unsafe { (api.mdb_put)(txn, self.dbi, &mut k, &mut v, 0) };
            lmdb_result(api, op, rc).map(|_| ())
        })
    }
}

/// Ok(true) for success, Ok(false) for MDB_NOTFOUND, an error naming `op` otherwise.
fn lmdb_result(api: &LmdbApi, op: &'static str, rc: c_int) -> Result<bool, TargetError> {
    match rc {
        0 => Ok(true),
        MDB_NOTFOUND => Ok(false),
        _ => {
            // SAFETY: mdb_strerror returns a static string for any code.
            let text = unsafe { text_of((api.mdb_strerror)(rc), "unknown error") };
            Err(TargetError::new(op, format!("lmdb: {text} ({rc})")))
        }
    }
}

impl KvTarget for LmdbPeer {
    fn read(&self, key: &[u8]) -> Result<bool, TargetError> {
        self.in_txn(MDB_RDONLY, "read", |api, txn| {
            let (mut k, mut v) = (MdbVal::of(key), MdbVal::empty());
            // SAFETY: a read transaction; the value points into the map until it ends.
            let rc = unsafe { (api.mdb_get)(txn, self.dbi, &mut k, &mut v) };
            lmdb_result(api, "read", rc)
        })
    }

    fn update(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.put("update", key, value)
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.put("insert", key, value)
    }

    /// One write transaction for the whole batch.
    fn insert_batch(&self, records: &[(&[u8], &[u8])]) -> Result<(), TargetError> {
        self.in_txn(0, "insert batch", |api, txn| {
            for (key, value) in records {
                let (mut k, mut v) = (MdbVal::of(key), MdbVal::of(value));
                // SAFETY: a write transaction; key and value outlive the call.
                let rc = unsafe { (api.mdb_put)(txn, self.dbi, &mut k, &mut v, 0) };
                lmdb_result(api, "insert batch", rc)?;
            }
            Ok(())
        })
    }

    fn scan(&self, start: &[u8], count: usize) -> Result<usize, TargetError> {
        self.in_txn(MDB_RDONLY, "scan", |api, txn| {
            let mut cursor: Opaque = null_mut();
            // SAFETY: a read transaction; the cursor is closed before it ends.
            let rc = unsafe { (api.mdb_cursor_open)(txn, self.dbi, &mut cursor) };
            lmdb_result(api, "scan", rc)?;
            let (mut k, mut v) = (MdbVal::of(start), MdbVal::empty());
            let mut seen = 0;
            let mut op = MDB_SET_RANGE;
            let outcome = loop {
                if seen >= count {
                    break Ok(seen);
                }
                // SAFETY: an open cursor; k and v are LMDB's to fill.
                let rc = unsafe { (api.mdb_cursor_get)(cursor, &mut k, &mut v, op) };
                match lmdb_result(api, "scan", rc) {
                    Ok(true) => seen += 1,
                    Ok(false) => break Ok(seen),
                    Err(e) => break Err(e),
                }
                op = MDB_NEXT;
            };
            // SAFETY: opened above, closed once.
            unsafe { (api.mdb_cursor_close)(cursor) };
            outcome
        })
    }

    fn counters(&self) -> CounterSnapshot {
        CounterSnapshot::default()
    }

    fn data_device_capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    fn describe(&self) -> serde_json::Value {
        serde_json::json!({ "kind": "lmdb", "settings": self.settings })
    }

    fn close(&self) -> Result<(), TargetError> {
        // SAFETY: env is open; a forced sync writes what MDB_NOSYNC left in the page cache.
        let rc = unsafe { (self.api.mdb_env_sync)(self.env, 1) };
        lmdb_result(&self.api, "close", rc).map(|_| ())
    }
}

impl Peer for LmdbPeer {
    fn target(&self) -> &dyn KvTarget {
        self
    }

    /// MDB_NOSYNC leaves committed pages in the page cache: a forced environment sync.
    fn sync(&self) -> Result<(), TargetError> {
        // SAFETY: env is open until drop; mdb_env_sync may run beside transactions.
        let rc = unsafe { (self.api.mdb_env_sync)(self.env, 1) };
        lmdb_result(&self.api, "sync", rc).map(|_| ())
    }
}

impl Drop for LmdbPeer {
    fn drop(&mut self) {
        // SAFETY: no transaction outlives a call, so none is open; closed once.
        unsafe { (self.api.mdb_env_close)(self.env) };
    }
}

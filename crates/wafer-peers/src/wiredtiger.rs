//! WiredTiger through its C API (`wiredtiger.h`, Debian's libwiredtiger0 3.2.1), opened at run
//! time. Connections, sessions and cursors are structs of function pointers in C; the prefixes
//! used here are transcribed from the 3.2.1 header in its order (fields after the last one
//! used are left out: these structs are only ever reached through WiredTiger's pointers).

use std::ffi::{c_char, c_int, c_void};
use std::path::Path;
use std::ptr::null_mut;
use std::sync::Mutex;

use super::dl::{c_api, cstring, text_of};
use super::durability::Durability;
use super::error::PeerError;
use super::peer::Peer;
use super::setup::PeerSetup;
use wafer_harness::metrics::CounterSnapshot;
use wafer_harness::runner::{KvTarget, TargetError};

type Fp = *const c_void;
type Cfg = *const c_char;

#[repr(C)]
struct WtItem {
    data: *const c_void,
    size: usize,
    mem: *mut c_void,
    memsize: usize,
    flags: u32,
}

impl WtItem {
    fn of(bytes: &[u8]) -> WtItem {
        WtItem {
            data: bytes.as_ptr().cast(),
            size: bytes.len(),
            mem: null_mut(),
            memsize: 0,
            flags: 0,
        }
    }
}

/// `struct __wt_connection` up to `open_session`.
#[repr(C)]
pub(crate) struct WtConnection {
    async_flush: Fp,
    async_new_op: Fp,
    close: unsafe extern "C" fn(*mut WtConnection, Cfg) -> c_int,
    debug_info: Fp,
    reconfigure: Fp,
    get_home: Fp,
    configure_method: Fp,
    is_new: Fp,
    open_session:
        unsafe extern "C" fn(*mut WtConnection, *mut c_void, Cfg, *mut *mut WtSession) -> c_int,
}

/// `struct __wt_session` up to `log_flush` (C, not SWIG: `app_private` is there).
#[repr(C)]
pub(crate) struct WtSession {
    connection: *mut WtConnection,
    app_private: *mut c_void,
    close: unsafe extern "C" fn(*mut WtSession, Cfg) -> c_int,
    reconfigure: Fp,
    strerror: Fp,
    open_cursor: unsafe extern "C" fn(
        *mut WtSession,
        *const c_char,
        *mut WtCursor,
        Cfg,
        *mut *mut WtCursor,
    ) -> c_int,
    alter: Fp,
    create: unsafe extern "C" fn(*mut WtSession, *const c_char, Cfg) -> c_int,
    import: Fp,
    compact: Fp,
    drop: Fp,
    join: Fp,
    log_flush: unsafe extern "C" fn(*mut WtSession, Cfg) -> c_int,
}

type CursorOp = unsafe extern "C" fn(*mut WtCursor) -> c_int;

/// `struct __wt_cursor` up to `close`.
#[repr(C)]
pub(crate) struct WtCursor {
    session: *mut WtSession,
    uri: *const c_char,
    key_format: *const c_char,
    value_format: *const c_char,
    get_key: unsafe extern "C" fn(*mut WtCursor, ...) -> c_int,
    get_value: unsafe extern "C" fn(*mut WtCursor, ...) -> c_int,
    set_key: unsafe extern "C" fn(*mut WtCursor, ...),
    set_value: unsafe extern "C" fn(*mut WtCursor, ...),
    compare: Fp,
    equals: Fp,
    next: CursorOp,
    prev: CursorOp,
    reset: CursorOp,
    search: CursorOp,
    search_near: unsafe extern "C" fn(*mut WtCursor, *mut c_int) -> c_int,
    insert: CursorOp,
    modify: Fp,
    update: CursorOp,
    remove: CursorOp,
    reserve: CursorOp,
    close: CursorOp,
}

c_api!(WtApi {
    fn wiredtiger_open(*const c_char, *mut c_void, Cfg, *mut *mut WtConnection) -> c_int;
    fn wiredtiger_strerror(c_int) -> *const c_char;
});

const WT_NOTFOUND: c_int = -31803;
/// A write conflict between two threads' auto-commit operations: retried.
const WT_ROLLBACK: c_int = -31800;
const ROLLBACK_RETRIES_MAX: u32 = 1000;
const TABLE_URI: &str = "table:usertable";
const SNAPPY_EXTENSION: &str = "/usr/lib/x86_64-linux-gnu/libwiredtiger_snappy.so";

/// One session and its cursor on the table: used by one thread at a time.
/// (The session is closed with the connection, which closes all of them.)
struct Handle {
    cursor: *mut WtCursor,
}

pub(crate) struct WtPeer {
    api: WtApi,
    conn: *mut WtConnection,
    /// Idle handles; an operation takes one (or opens one) and puts it back.
    idle: Mutex<Vec<Handle>>,
    settings: serde_json::Value,
    capacity_bytes: u64,
}

// SAFETY: a WT_CONNECTION is thread-safe; sessions and cursors are used by one thread at a
// time (each operation takes its handle out of `idle` under the mutex).
unsafe impl Send for WtPeer {}
// SAFETY: as above.
unsafe impl Sync for WtPeer {}

impl std::fmt::Debug for WtPeer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WtPeer").field("settings", &self.settings).finish()
    }
}

fn wt_result(api: &WtApi, op: &'static str, rc: c_int) -> Result<bool, TargetError> {
    match rc {
        0 => Ok(true),
        WT_NOTFOUND => Ok(false),
        _ => {
            // SAFETY: wiredtiger_strerror returns a static string for any code.
            let text = unsafe { text_of((api.wiredtiger_strerror)(rc), "unknown error") };
            Err(TargetError::new(op, format!("wiredtiger: {text} ({rc})")))
        }
    }
}

impl WtPeer {
    pub(crate) fn open(setup: &PeerSetup) -> Result<WtPeer, PeerError> {
        let api = WtApi::load(&["libwiredtiger.so.0", "libwiredtiger.so"], "libwiredtiger0")?;
        let dir = setup.dir.join("wiredtiger");
        std::fs::create_dir_all(&dir).map_err(|e| PeerError::io(&dir, e))?;
        let snappy = Path::new(SNAPPY_EXTENSION).exists();
        let sync = setup.durability == Durability::Sync;
        // Checkpoints every 60 s or once this much log is written, as MongoDB's (60 s, 2 GB)
        // and PostgreSQL's max_wal_size here (the dataset's size, 256 MiB..4 GiB): the log
        // between checkpoints is bounded by the data, not by the write rate (on a device sized
        // to the engine, a minute of log at 10k updates/s did not fit).
        let log_mib = (setup.dataset_bytes() >> 20).clamp(256, 4096);
        let config = format!(
            "create,cache_size={},session_max={},log=(enabled=true,file_max=64MB),statistics=(fast),\
             transaction_sync=(enabled={sync},method=fsync),\
             checkpoint=(wait=60,log_size={log_mib}MB),\
             eviction=(threads_min=1,threads_max=2){}",
            setup.cache_bytes,
            setup.threads * 2 + 16,
            if snappy { format!(",extensions=[{SNAPPY_EXTENSION}]") } else { String::new() },
        );
        let (home, cfg) = (cstring(&dir.to_string_lossy())?, cstring(&config)?);
        let mut conn: *mut WtConnection = null_mut();
        // SAFETY: home and config are valid C strings; conn receives the handle.
        let rc =
            unsafe { (api.wiredtiger_open)(home.as_ptr(), null_mut(), cfg.as_ptr(), &mut conn) };
        wt_result(&api, "open", rc)?;
        let table = format!(
            "key_format=u,value_format=u,block_compressor={}",
            if snappy { "snappy" } else { "none" }
        );
        let peer = WtPeer {
            api,
            conn,
            idle: Mutex::new(Vec::new()),
            settings: serde_json::json!({
                "library": "libwiredtiger 3.2.1 (Debian)",
                "connection": config,
                "table": table,
                "cache_bytes": setup.cache_bytes,
                "log": "on (WiredTigerLog in the database directory)",
                "sync_each_commit": sync,
                "checkpoint": format!("every 60 s or {log_mib} MiB of log, and at close"),
            }),
            capacity_bytes: setup.dataset_bytes(),
        };
        let handle = peer.open_handle(Some(&table))?;
        peer.put_back(handle);
        Ok(peer)
    }

    /// A new session with a cursor on the table (creating the table first when asked).
    fn open_handle(&self, create: Option<&str>) -> Result<Handle, TargetError> {
        let uri = cstring(TABLE_URI).map_err(|e| TargetError::new("session", e))?;
        let mut session: *mut WtSession = null_mut();
        // SAFETY: the connection is open until drop.
        let rc = unsafe {
            ((*self.conn).open_session)(self.conn, null_mut(), std::ptr::null(), &mut session)
        };
        wt_result(&self.api, "open session", rc)?;
        let mut cursor: *mut WtCursor = null_mut();
        // SAFETY: a fresh session, used by this thread only; closed on failure.
        let rc = unsafe {
            let mut rc = 0;
            if let Some(config) = create {
                let config = cstring(config).map_err(|e| TargetError::new("create", e))?;
                rc = ((*session).create)(session, uri.as_ptr(), config.as_ptr());
            }
            if rc == 0 {
                rc = ((*session).open_cursor)(
                    session,
                    uri.as_ptr(),
                    null_mut(),
                    std::ptr::null(),
                    &mut cursor,
                );
            }
            if rc != 0 {
                ((*session).close)(session, std::ptr::null());
            }
            rc
        };
        wt_result(&self.api, "open cursor", rc)?;
        Ok(Handle { cursor })
    }

    fn take(&self) -> Result<Handle, TargetError> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match idle {
            Some(h) => Ok(h),
            None => self.open_handle(None),
        }
    }

    fn put_back(&self, handle: Handle) {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).push(handle);
    }

    /// Runs `body` on a handle's cursor, retrying write conflicts; resets the cursor after, so
    /// it pins no page between operations.
    fn with_cursor<T>(
        &self,
        op: &'static str,
        body: impl Fn(*mut WtCursor) -> c_int,
        map: impl Fn(bool) -> T,
    ) -> Result<T, TargetError> {
        let h = self.take()?;
        let mut rc = WT_ROLLBACK;
        for _ in 0..ROLLBACK_RETRIES_MAX {
            rc = body(h.cursor);
            if rc != WT_ROLLBACK {
                break;
            }
        }
        // SAFETY: the cursor belongs to the handle this thread holds.
        unsafe { ((*h.cursor).reset)(h.cursor) };
        self.put_back(h);
        wt_result(&self.api, op, rc).map(map)
    }

    fn put(&self, op: &'static str, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        let (k, v) = (WtItem::of(key), WtItem::of(value));
        // SAFETY: the cursor's formats are "u": set_key/set_value take a WT_ITEM pointer,
        // valid for the call; insert overwrites an existing key (cursor default).
        self.with_cursor(
            op,
            |c| unsafe {
                ((*c).set_key)(c, &k as *const WtItem);
                ((*c).set_value)(c, &v as *const WtItem);
                ((*c).insert)(c)
            },
            |_| (),
        )
    }
}

impl KvTarget for WtPeer {
    fn read(&self, key: &[u8]) -> Result<bool, TargetError> {
        let k = WtItem::of(key);
        // SAFETY: as in put; search positions the cursor (the value stays WiredTiger's).
        self.with_cursor(
            "read",
            |c| unsafe {
                ((*c).set_key)(c, &k as *const WtItem);
                ((*c).search)(c)
            },
            |found| found,
        )
    }

    fn update(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.put("update", key, value)
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.put("insert", key, value)
    }

    fn scan(&self, start: &[u8], count: usize) -> Result<usize, TargetError> {
        let k = WtItem::of(start);
        let seen = std::cell::Cell::new(0usize);
        // SAFETY: as in read; search_near then next walk the table from the start key.
        self.with_cursor(
            "scan",
            |c| unsafe {
                seen.set(0);
                ((*c).set_key)(c, &k as *const WtItem);
                let mut exact: c_int = 0;
                let mut rc = ((*c).search_near)(c, &mut exact);
                // Landed before the start key: the next record is the first one at or after it.
                if rc == 0 && exact < 0 {
                    rc = ((*c).next)(c);
                }
                while rc == 0 && seen.get() < count {
                    seen.set(seen.get() + 1);
                    rc = ((*c).next)(c);
                }
                if rc == WT_NOTFOUND {
                    0
                } else {
                    rc
                }
            },
            |_| seen.get(),
        )
    }

    fn counters(&self) -> CounterSnapshot {
        CounterSnapshot::default()
    }

    fn data_device_capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    fn describe(&self) -> serde_json::Value {
        serde_json::json!({ "kind": "wiredtiger", "settings": self.settings })
    }
}

/// Statistics rows a statistics cursor yields at most (WiredTiger 3.2 has about 400).
const STAT_ROWS_MAX: usize = 10_000;
/// The statistics that tell log bytes from table bytes (`statistics=(fast)`).
const STAT_LOG_BYTES: &str = "log: log bytes written";
const STAT_BLOCK_BYTES: &str = "block-manager: bytes written";

impl WtPeer {
    /// The connection's statistics named in `wanted`, through a statistics cursor on a session
    /// of its own (closed after, with its cursor).
    fn statistics(&self, wanted: &[&str]) -> Result<Vec<u64>, TargetError> {
        let mut session: *mut WtSession = null_mut();
        // SAFETY: the connection is open until drop.
        let rc = unsafe {
            ((*self.conn).open_session)(self.conn, null_mut(), std::ptr::null(), &mut session)
        };
        wt_result(&self.api, "statistics session", rc)?;
        let uri = cstring("statistics:").map_err(|e| TargetError::new("statistics", e))?;
        let mut out = vec![0u64; wanted.len()];
        // SAFETY: a fresh session used by this thread only and closed below; a statistics
        // cursor's value format is "SSq": (description, printable value, int64 value).
        let rc = unsafe {
            let mut cursor: *mut WtCursor = null_mut();
            let mut rc = ((*session).open_cursor)(
                session,
                uri.as_ptr(),
                null_mut(),
                std::ptr::null(),
                &mut cursor,
            );
            for _ in 0..STAT_ROWS_MAX {
                if rc != 0 || ((*cursor).next)(cursor) != 0 {
                    break;
                }
                let (mut desc, mut printable, mut value) =
                    (std::ptr::null(), std::ptr::null(), 0i64);
                rc = ((*cursor).get_value)(
                    cursor,
                    &mut desc as *mut *const c_char,
                    &mut printable as *mut *const c_char,
                    &mut value as *mut i64,
                );
                let desc = text_of(desc, "");
                if let Some(i) = wanted.iter().position(|w| *w == desc) {
                    out[i] = value.max(0) as u64;
                }
            }
            ((*session).close)(session, std::ptr::null());
            rc
        };
        wt_result(&self.api, "statistics", rc)?;
        Ok(out)
    }
}

impl Peer for WtPeer {
    fn target(&self) -> &dyn KvTarget {
        self
    }

    /// Log bytes, and the block manager's bytes less them (the tables: data, history and
    /// metadata files), by WiredTiger's own statistics.
    fn written_by_kind(&self) -> Vec<(&'static str, u64)> {
        match self.statistics(&[STAT_LOG_BYTES, STAT_BLOCK_BYTES]).as_deref() {
            Ok([log, blocks]) => vec![("wal", *log), ("tables", *blocks)],
            _ => Vec::new(),
        }
    }

    /// The log written and synced (`WT_SESSION::log_flush`, `sync=on`), on an idle session.
    fn sync(&self) -> Result<(), TargetError> {
        let h = self.take()?;
        let cfg = cstring("sync=on").map_err(|e| TargetError::new("sync", e))?;
        // SAFETY: the handle's session is this thread's until put back; cfg outlives the call.
        let rc = unsafe {
            let session = (*h.cursor).session;
            ((*session).log_flush)(session, cfg.as_ptr())
        };
        self.put_back(h);
        wt_result(&self.api, "sync", rc).map(|_| ())
    }
}

impl Drop for WtPeer {
    fn drop(&mut self) {
        // SAFETY: closing the connection closes every session and cursor (WiredTiger's
        // documented behaviour) and takes a final checkpoint; no thread holds a handle now.
        unsafe { ((*self.conn).close)(self.conn, std::ptr::null()) };
    }
}

//! PostgreSQL: a server of its own started by the harness (initdb in the run's directory, a
//! Unix socket only, stopped at the end), driven through libpq (Debian's libpq5) opened at run
//! time, with one connection per worker thread and prepared statements.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::dl::{c_api, cstring, text_of};
use super::durability::Durability;
use super::error::PeerError;
use super::peer::Peer;
use super::procio::{self, HostIo, ProcIoError};
use super::setup::PeerSetup;
use wafer_harness::metrics::CounterSnapshot;
use wafer_harness::runner::{KvTarget, TargetError};

type Opaque = *mut c_void;

c_api!(PqApi {
    fn PQconnectdb(*const c_char) -> Opaque;
    fn PQstatus(Opaque) -> c_int;
    fn PQerrorMessage(Opaque) -> *const c_char;
    fn PQfinish(Opaque) -> ();
    fn PQexec(Opaque, *const c_char) -> Opaque;
    fn PQprepare(Opaque, *const c_char, *const c_char, c_int, *const c_uint) -> Opaque;
    fn PQexecPrepared(
        Opaque, *const c_char, c_int, *const *const c_char, *const c_int, *const c_int, c_int
    ) -> Opaque;
    fn PQresultStatus(Opaque) -> c_int;
    fn PQresultErrorMessage(Opaque) -> *const c_char;
    fn PQntuples(Opaque) -> c_int;
    fn PQgetvalue(Opaque, c_int, c_int) -> *const c_char;
    fn PQclear(Opaque) -> ();
});

const CONNECTION_OK: c_int = 0;
const PGRES_COMMAND_OK: c_int = 1;
const PGRES_TUPLES_OK: c_int = 2;
/// Port number of the Unix socket's name (no TCP listener is opened).
const PORT: u16 = 54329;
const SOCKET_PATH_MAX_BYTES: usize = 107;
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Statements every connection prepares: (name, SQL, parameters).
const STATEMENTS: [(&str, &str, c_int); 4] = [
    ("r", "SELECT v FROM usertable WHERE k = $1", 1),
    ("u", "UPDATE usertable SET v = $2 WHERE k = $1", 2),
    ("i", "INSERT INTO usertable (k, v) VALUES ($1, $2)", 2),
    ("s", "SELECT k FROM usertable WHERE k >= $1 ORDER BY k LIMIT $2", 2),
];

/// The postmaster this harness started; stopped (fast shutdown) on drop.
struct Server {
    child: Child,
    data: PathBuf,
    socket_dir: PathBuf,
    /// The server's stderr: why a start failed.
    log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        // SIGINT is PostgreSQL's fast shutdown: it checkpoints and exits.
        // SAFETY: a signal to the child this process started and has not reaped.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGINT) };
        let _ = self.child.wait();
    }
}

struct Conn(Opaque);

pub(crate) struct PgPeer {
    api: PqApi,
    conninfo: String,
    idle: Mutex<Vec<Conn>>,
    settings: serde_json::Value,
    capacity_bytes: u64,
    // Last: dropped after the connections are closed.
    server: Server,
}

// SAFETY: a PGconn is used by one thread at a time (taken out of `idle` under the mutex).
unsafe impl Send for PgPeer {}
// SAFETY: as above.
unsafe impl Sync for PgPeer {}

impl std::fmt::Debug for PgPeer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgPeer").field("settings", &self.settings).finish()
    }
}

/// The newest PostgreSQL server binaries Debian installed.
fn bin_dir() -> Result<PathBuf, PeerError> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, p): &(u32, PathBuf)| p.join("postgres").exists())
        .collect();
    versions.sort();
    versions.pop().map(|(_, p)| p).ok_or_else(|| PeerError::Missing {
        library: "/usr/lib/postgresql/*/bin/postgres".into(),
        package: "postgresql".into(),
        reason: "no server binaries found".into(),
    })
}

/// PostgreSQL refuses to run as root: then it runs as the `postgres` user Debian creates.
fn server_user() -> Result<Option<(u32, u32)>, PeerError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let name = cstring("postgres")?;
    // SAFETY: getpwnam reads the passwd database; the entry is copied out at once.
    let entry = unsafe { libc::getpwnam(name.as_ptr()) };
    if entry.is_null() {
        return Err(PeerError::Config(
            "PostgreSQL will not run as root and there is no `postgres` user; run as another \
             user or install the postgresql package (it creates one)"
                .into(),
        ));
    }
    // SAFETY: non-null entry from getpwnam, read before any other passwd call.
    Ok(Some(unsafe { ((*entry).pw_uid, (*entry).pw_gid) }))
}

fn as_server_user(command: &mut Command, user: Option<(u32, u32)>) -> &mut Command {
    if let Some((uid, gid)) = user {
        command.uid(uid).gid(gid);
    }
    command
}

fn make_dir(path: &Path, user: Option<(u32, u32)>) -> Result<(), PeerError> {
    std::fs::create_dir_all(path).map_err(|e| PeerError::io(path, e))?;
    if let Some((uid, gid)) = user {
        std::os::unix::fs::chown(path, Some(uid), Some(gid)).map_err(|e| PeerError::io(path, e))?;
    }
    Ok(())
}

/// The heap's fill: room in each page for an updated version of one of its ~1 KiB tuples, so
/// an update is HOT (no index entry) and page pruning reclaims the old version without a
/// vacuum; at 100 every update moves its tuple to another page and the table bloats until
/// autovacuum catches up (on a device sized to the engine, it ran out of space).
const FILLFACTOR: u32 = 85;

/// The server's tuned settings, appended to postgresql.conf. Autovacuum wakes every 10 s (not
/// 60) and vacuums once 5% of the rows are dead (not 20%), with a cost limit 10x the default,
/// so dead tuples are reclaimed while updates run at 10k/s; WAL's full-page images compressed.
fn server_conf(setup: &PeerSetup, socket_dir: &Path) -> String {
    let sync = if setup.durability == Durability::Sync { "on" } else { "off" };
    let wal_max_mb = (setup.dataset_bytes() >> 20).clamp(256, 4096);
    format!(
        "listen_addresses = ''\nunix_socket_directories = '{}'\nport = {PORT}\n\
         max_connections = {}\nshared_buffers = '{}kB'\nfsync = on\nsynchronous_commit = {sync}\n\
         full_page_writes = on\nwal_level = minimal\nmax_wal_senders = 0\n\
         max_wal_size = '{wal_max_mb}MB'\ncheckpoint_timeout = '5min'\n\
         checkpoint_completion_target = 0.9\nwal_compression = on\nautovacuum = on\n\
         autovacuum_naptime = '10s'\nautovacuum_vacuum_scale_factor = 0.05\n\
         autovacuum_vacuum_cost_limit = 2000\nhuge_pages = off\n",
        socket_dir.display(),
        setup.threads + 8,
        (setup.cache_bytes / 1024).max(128),
    )
}

impl Server {
    fn start(setup: &PeerSetup) -> Result<Server, PeerError> {
        let bin = bin_dir()?;
        let user = server_user()?;
        let (data, socket_dir) = (setup.dir.join("postgres"), setup.dir.join("pg-socket"));
        // A Unix socket's path holds at most 107 bytes (sun_path).
        let socket_len = socket_dir.as_os_str().len() + format!("/.s.PGSQL.{PORT}").len();
        if socket_len > SOCKET_PATH_MAX_BYTES {
            return Err(PeerError::Config(format!(
                "{}: too long for PostgreSQL's Unix socket ({socket_len} of at most \
                 {SOCKET_PATH_MAX_BYTES} bytes); give a shorter --dir",
                socket_dir.display()
            )));
        }
        make_dir(&data, user)?;
        make_dir(&socket_dir, user)?;
        let log = setup.dir.join("postgres.log");
        let out = as_server_user(&mut Command::new(bin.join("initdb")), user)
            .args(["-D"])
            .arg(&data)
            .args(["-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"])
            .output()
            .map_err(|e| PeerError::io(&bin.join("initdb"), e))?;
        if !out.status.success() {
            return Err(PeerError::Engine {
                engine: "postgres",
                op: "initdb",
                message: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        let conf = data.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf).map_err(|e| PeerError::io(&conf, e))?;
        text.push_str(&server_conf(setup, &socket_dir));
        std::fs::write(&conf, text).map_err(|e| PeerError::io(&conf, e))?;
        let log_file = std::fs::File::create(&log).map_err(|e| PeerError::io(&log, e))?;
        let child = as_server_user(&mut Command::new(bin.join("postgres")), user)
            .arg("-D")
            .arg(&data)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .map_err(|e| PeerError::io(&bin.join("postgres"), e))?;
        Ok(Server { child, data, socket_dir, log })
    }
}

impl PgPeer {
    pub(crate) fn open(setup: &PeerSetup) -> Result<PgPeer, PeerError> {
        let api = PqApi::load(&["libpq.so.5", "libpq.so"], "libpq5")?;
        let server = Server::start(setup)?;
        let conninfo = format!(
            "host={} port={PORT} user=postgres dbname=postgres",
            server.socket_dir.display()
        );
        let peer = PgPeer {
            api,
            conninfo,
            idle: Mutex::new(Vec::new()),
            settings: serde_json::json!({
                "server": bin_dir()?.display().to_string(),
                "conf": server_conf(setup, Path::new("DIR")),
                "table": format!("usertable (k bytea PRIMARY KEY, v bytea), heap fillfactor {FILLFACTOR}"),
                "client": "libpq, one connection per thread, prepared statements, binary",
                "data_dir": server.data.display().to_string(),
            }),
            capacity_bytes: setup.dataset_bytes(),
            server,
        };
        let first = peer.connect_waiting()?;
        let create =
            format!("CREATE TABLE usertable (k bytea PRIMARY KEY, v bytea) WITH (fillfactor = {FILLFACTOR})");
        peer.exec(&first, &create)?;
        peer.prepare(&first)?;
        peer.idle.lock().unwrap_or_else(|e| e.into_inner()).push(first);
        Ok(peer)
    }

    /// The first connection, retried while the server starts.
    fn connect_waiting(&self) -> Result<Conn, PeerError> {
        let started = Instant::now();
        loop {
            match self.connect() {
                Ok(c) => return Ok(c),
                Err(e) if started.elapsed() > START_TIMEOUT => {
                    return Err(PeerError::Engine {
                        engine: "postgres",
                        op: "start",
                        message: format!("{e} (server log: {})", self.server.log.display()),
                    })
                }
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }

    fn connect(&self) -> Result<Conn, TargetError> {
        let info = cstring(&self.conninfo).map_err(|e| TargetError::new("connect", e))?;
        // SAFETY: a valid conninfo string; the connection is finished on failure.
        let conn = unsafe { (self.api.PQconnectdb)(info.as_ptr()) };
        // SAFETY: PQstatus and PQerrorMessage accept any result of PQconnectdb.
        if conn.is_null() || unsafe { (self.api.PQstatus)(conn) } != CONNECTION_OK {
            // SAFETY: as above; the message is copied before PQfinish frees it.
            let message = unsafe { text_of((self.api.PQerrorMessage)(conn), "out of memory") };
            // SAFETY: PQfinish accepts a failed connection (and null).
            unsafe { (self.api.PQfinish)(conn) };
            return Err(TargetError::new("connect", message.trim().to_string()));
        }
        Ok(Conn(conn))
    }

    fn prepare(&self, conn: &Conn) -> Result<(), TargetError> {
        for (name, sql, params) in STATEMENTS {
            let (n, q) = (
                cstring(name).map_err(|e| TargetError::new("prepare", e))?,
                cstring(sql).map_err(|e| TargetError::new("prepare", e))?,
            );
            // SAFETY: an open connection; strings valid for the call.
            let res = unsafe {
                (self.api.PQprepare)(conn.0, n.as_ptr(), q.as_ptr(), params, std::ptr::null())
            };
            self.result("prepare", res)?;
        }
        Ok(())
    }

    fn exec(&self, conn: &Conn, sql: &str) -> Result<c_int, TargetError> {
        let q = cstring(sql).map_err(|e| TargetError::new("exec", e))?;
        // SAFETY: an open connection; the result is cleared in `result`.
        let res = unsafe { (self.api.PQexec)(conn.0, q.as_ptr()) };
        self.result("exec", res)
    }

    /// Rows of a successful result (0 for a command), or its error; clears the result.
    fn result(&self, op: &'static str, res: Opaque) -> Result<c_int, TargetError> {
        if res.is_null() {
            return Err(TargetError::new(op, "libpq: out of memory"));
        }
        // SAFETY: a non-null PGresult, cleared once below.
        let status = unsafe { (self.api.PQresultStatus)(res) };
        let out = match status {
            // SAFETY: as above.
            PGRES_COMMAND_OK | PGRES_TUPLES_OK => Ok(unsafe { (self.api.PQntuples)(res) }),
            _ => {
                // SAFETY: as above; the message is copied before the clear.
                let m = unsafe { text_of((self.api.PQresultErrorMessage)(res), "") };
                Err(TargetError::new(op, format!("postgres: {}", m.trim())))
            }
        };
        // SAFETY: cleared once.
        unsafe { (self.api.PQclear)(res) };
        out
    }

    /// Runs prepared statement `name` with binary parameters (text where `text` says) on a
    /// pooled connection; returns the rows.
    fn run(
        &self,
        op: &'static str,
        name: &str,
        params: &[&[u8]],
        text: &[bool],
    ) -> Result<c_int, TargetError> {
        let conn = match self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            Some(c) => c,
            None => {
                let c = self.connect()?;
                self.prepare(&c)?;
                c
            }
        };
        let n = cstring(name).map_err(|e| TargetError::new(op, e))?;
        let values: Vec<*const c_char> = params.iter().map(|p| p.as_ptr().cast()).collect();
        let lengths: Vec<c_int> = params.iter().map(|p| p.len() as c_int).collect();
        let formats: Vec<c_int> = text.iter().map(|t| c_int::from(!t)).collect();
        // SAFETY: the connection is this thread's until put back; arrays hold params.len()
        // entries valid for the call.
        let res = unsafe {
            (self.api.PQexecPrepared)(
                conn.0,
                n.as_ptr(),
                params.len() as c_int,
                values.as_ptr(),
                lengths.as_ptr(),
                formats.as_ptr(),
                1,
            )
        };
        let out = self.result(op, res);
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).push(conn);
        out
    }
}

/// What the server wrote, by its own statistics: WAL bytes (`pg_stat_wal`, PostgreSQL 14 and
/// later) and table and index pages the checkpointer, the background writer and backends wrote
/// (`pg_stat_bgwriter`, up to PostgreSQL 16, in pages of `block_size`).
const WRITTEN_SQL: &str = "SELECT (SELECT wal_bytes::bigint FROM pg_stat_wal), \
     (SELECT (buffers_checkpoint + buffers_clean + buffers_backend) \
     * current_setting('block_size')::bigint FROM pg_stat_bgwriter)";

impl PgPeer {
    /// The first row of `sql` as integers, on a connection of its own (finished after).
    fn integers(&self, sql: &str) -> Result<Vec<u64>, TargetError> {
        let conn = self.connect()?;
        let q = cstring(sql).map_err(|e| TargetError::new("stats", e))?;
        // SAFETY: an open connection; the result is cleared below, after its values are copied.
        let res = unsafe { (self.api.PQexec)(conn.0, q.as_ptr()) };
        let mut out = Vec::new();
        // SAFETY: PQresultStatus accepts any result (null included).
        if !res.is_null() && unsafe { (self.api.PQresultStatus)(res) } == PGRES_TUPLES_OK {
            // Bounded: the queries here select two columns.
            for column in 0..2 {
                // SAFETY: row 0 exists (each column is a scalar subquery); a column past the
                // result's end returns null, which text_of turns into the fallback.
                let text = unsafe { text_of((self.api.PQgetvalue)(res, 0, column), "") };
                out.extend(text.trim().parse::<u64>().ok());
            }
        }
        // SAFETY: cleared once (PQclear accepts null).
        unsafe { (self.api.PQclear)(res) };
        // SAFETY: finished once; the connection is not pooled.
        unsafe { (self.api.PQfinish)(conn.0) };
        Ok(out)
    }
}

impl KvTarget for PgPeer {
    fn read(&self, key: &[u8]) -> Result<bool, TargetError> {
        Ok(self.run("read", "r", &[key], &[false])? > 0)
    }

    fn update(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.run("update", "u", &[key, value], &[false, false]).map(|_| ())
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.run("insert", "i", &[key, value], &[false, false]).map(|_| ())
    }

    fn scan(&self, start: &[u8], count: usize) -> Result<usize, TargetError> {
        let limit = count.to_string();
        let rows = self.run("scan", "s", &[start, limit.as_bytes()], &[false, true])?;
        Ok(rows.max(0) as usize)
    }

    fn counters(&self) -> CounterSnapshot {
        CounterSnapshot::default()
    }

    fn data_device_capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    fn describe(&self) -> serde_json::Value {
        serde_json::json!({ "kind": "postgres", "settings": self.settings })
    }
}

impl Peer for PgPeer {
    /// The server's processes (postmaster, checkpointer, WAL writer, backends) and this one.
    fn host_io(&self) -> Result<HostIo, ProcIoError> {
        let mut io = procio::of_tree(self.server.child.id())?;
        io.add(&procio::of_pid(std::process::id())?);
        Ok(io)
    }

    fn target(&self) -> &dyn KvTarget {
        self
    }

    fn written_by_kind(&self) -> Vec<(&'static str, u64)> {
        match self.integers(WRITTEN_SQL).as_deref() {
            Ok([wal, heap]) => vec![("wal", *wal), ("heap", *heap)],
            _ => Vec::new(),
        }
    }
}

impl Drop for PgPeer {
    fn drop(&mut self) {
        for conn in self.idle.get_mut().unwrap_or_else(|e| e.into_inner()).drain(..) {
            // SAFETY: each pooled connection is finished once.
            unsafe { (self.api.PQfinish)(conn.0) };
        }
    }
}

//! What a sweep measures, at what size, and what each of its runs measured: a leaf below the
//! experiment, the `db_bench` driver and the model, which all read it.
use serde::{Deserialize, Serialize};

use super::error::LsmError;

/// An LSM layout: leveled with fanout F (max_bytes_for_level_multiplier), or 001's single level
/// (every L0 file merged into one L1 at once).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    Leveled { fanout: u32 },
    SingleLevel,
}

impl Layout {
    /// The column heading of 001's tables: `F=8`, `S.L.`.
    pub fn label(&self) -> String {
        match self {
            Layout::Leveled { fanout } => format!("F={fanout}"),
            Layout::SingleLevel => "S.L.".into(),
        }
    }

    /// A file name for the layout's database.
    pub fn slug(&self) -> String {
        match self {
            Layout::Leveled { fanout } => format!("f{fanout}"),
            Layout::SingleLevel => "single-level".into(),
        }
    }
}

/// The read benchmarks: readrandom (point queries) and seekrandom (scans).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadBench {
    Query,
    Scan,
}

/// What one sweep measures, and at what size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    pub name: String,
    pub keys: u64,
    pub key_bytes: u64,
    pub value_bytes: u64,
    /// T: the target SST size, also the write buffer (RocksDB's defaults make them equal).
    pub file_bytes: u64,
    /// C: L0 files that trigger a compaction; L1 holds C files.
    pub l0_files: u32,
    /// B': RocksDB's block, its smallest read.
    pub block_bytes: u64,
    /// Point queries and scans in total, shared out between the k user threads.
    pub queries: u64,
    pub scans: u64,
    /// Keys each scan reads after its seek.
    pub scan_keys: u32,
    pub layouts: Vec<Layout>,
    pub ks: Vec<u32>,
}

const MIB: u64 = 1 << 20;
const KIB: u64 = 1 << 10;

impl Sweep {
    /// 001's grid (F 2-32 and the single level, k 1-16) on about 800 MB: about half an hour
    /// here.
    pub fn full() -> Sweep {
        Sweep {
            name: "full".into(),
            keys: 393_216,
            key_bytes: 16,
            value_bytes: 2048,
            file_bytes: 3 * MIB,
            l0_files: 4,
            block_bytes: 4 * KIB,
            queries: 16_000,
            scans: 3_000,
            scan_keys: 128,
            layouts: [2, 4, 8, 16, 32]
                .map(|fanout| Layout::Leveled { fanout })
                .into_iter()
                .chain([Layout::SingleLevel])
                .collect(),
            ks: vec![1, 2, 4, 8, 16],
        }
    }

    /// Two layouts at two k on 8 MB: checks the pipeline end to end in about half a minute
    /// (each fill pays db_bench's fixed 5 s wait before it polls for compaction).
    pub fn tiny() -> Sweep {
        Sweep {
            name: "tiny".into(),
            keys: 4_000,
            file_bytes: 256 * KIB,
            queries: 800,
            scans: 200,
            layouts: vec![Layout::Leveled { fanout: 4 }, Layout::SingleLevel],
            ks: vec![1, 2],
            ..Sweep::full()
        }
    }

    pub fn parse(name: &str) -> Result<Sweep, LsmError> {
        match name {
            "full" => Ok(Sweep::full()),
            "tiny" | "quick" => Ok(Sweep::tiny()),
            other => Err(LsmError::Scale(other.into())),
        }
    }

    /// N: the bytes loaded.
    pub fn data_bytes(&self) -> u64 {
        self.keys * (self.key_bytes + self.value_bytes)
    }

    /// L1's size: C files of T bytes.
    pub fn l0_files_bytes(&self) -> u64 {
        u64::from(self.l0_files) * self.file_bytes
    }

    /// What the scale-down keeps and what it changes against 001's setup.
    pub fn scale_note(&self) -> String {
        const PAPER_DATA_BYTES: f64 = 6.4e7 * 2064.0;
        const PAPER_FILE_BYTES: f64 = 64.0 * MIB as f64;
        let n = self.data_bytes() as f64;
        let t = self.file_bytes as f64;
        let c = f64::from(self.l0_files);
        format!(
            "Scale `{}`: {} keys of {} + {} bytes ({:.0} MB; 001: 6.4e7 keys, 132 GB), files and \
             write buffer of {} KiB (001: 64 MiB), C = {}, {} queries and {} scans of {} keys in \
             total. N/T = {:.0} (001: {:.0}) and N/(CT) = {:.0} (001: {:.0}): the leveled trees \
             have fewer levels than 001's (log2 {:.1} against {:.1}), and the single level \
             merges each flush into an L1 of at most {:.0} files rather than {:.0}. Key and \
             value sizes, C, the 4 KiB block, direct I/O, no compression and the 128-key scans \
             are 001's; db_bench's other defaults (8 MiB block cache, no Bloom filter) too.",
            self.name,
            self.keys,
            self.key_bytes,
            self.value_bytes,
            n / 1e6,
            self.file_bytes / KIB,
            self.l0_files,
            self.queries,
            self.scans,
            self.scan_keys,
            n / t,
            PAPER_DATA_BYTES / PAPER_FILE_BYTES,
            n / (c * t),
            PAPER_DATA_BYTES / (c * PAPER_FILE_BYTES),
            (n / (c * t)).log2(),
            (PAPER_DATA_BYTES / (c * PAPER_FILE_BYTES)).log2(),
            n / t,
            PAPER_DATA_BYTES / PAPER_FILE_BYTES,
        )
    }
}

/// One filluniquerandom run (one user thread, k compaction threads).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FillRun {
    pub layout: Layout,
    pub k: u32,
    /// The load alone, as db_bench reports it.
    pub load_s: f64,
    /// From the start of the process to the end of the last flush or compaction.
    pub insert_s: f64,
    pub flush_bytes: u64,
    pub compaction_write_bytes: u64,
    /// Sorted runs the database holds afterwards (L0 files plus non-empty levels).
    pub sorted_runs: u32,
}

/// One readrandom or seekrandom run with k user threads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadRun {
    pub layout: Layout,
    pub k: u32,
    pub bench: ReadBench,
    pub elapsed_s: f64,
    pub ops: u64,
}

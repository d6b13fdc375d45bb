//! `wafer experiment mqssd-lsm --scale tiny` end to end through Debian's db_bench: every cell
//! runs, the report's structure holds, and `--from` renders the JSON again. Timings are only
//! checked to be positive.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Without db_bench the test skips, unless this is set (CI sets it and installs rocksdb-tools).
const REQUIRE_ENV: &str = "WAFER_REQUIRE_PEERS";

fn wafer(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_wafer")).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn db_bench_installed() -> bool {
    Command::new("db_bench").arg("--version").output().is_ok()
}

fn profile() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results/data/mqssd-profile.toml")
}

#[test]
fn tiny_sweep_measures_every_cell_and_renders_again_from_json() {
    if !db_bench_installed() && std::env::var_os(REQUIRE_ENV).is_none() {
        eprintln!("skipped: db_bench (rocksdb-tools) is not installed ({REQUIRE_ENV} unset)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("wafer-mqssd-lsm-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let markdown = wafer(&[
        "experiment",
        "mqssd-lsm",
        "--scale",
        "tiny",
        "--mqssd-profile",
        profile().to_str().unwrap(),
        "--dir",
        &path("db"),
        "--json",
        &path("r.json"),
        "--plots",
        &path("fig.png"),
        "--quiet",
    ]);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap();
    // Two layouts at two k: a fill per cell, a query and a scan run per cell.
    let (fills, reads) = (report["fills"].as_array().unwrap(), report["reads"].as_array().unwrap());
    assert_eq!(
        (fills.len(), reads.len(), report["predictions"].as_array().unwrap().len()),
        (4, 8, 4)
    );
    for fill in fills {
        let (load, insert) = (fill["load_s"].as_f64().unwrap(), fill["insert_s"].as_f64().unwrap());
        assert!(load > 0.0 && insert >= load, "{fill}");
        assert!(fill["flush_bytes"].as_u64().unwrap() > 0, "{fill}");
        // Compaction has finished: the single level is one sorted run.
        if fill["layout"] == "single-level" {
            assert_eq!(fill["sorted_runs"], 1, "{fill}");
        }
    }
    assert!(reads.iter().all(|r| r["elapsed_s"].as_f64().unwrap() > 0.0), "{reads:?}");
    assert!(!dir.join("db").join("single-level").exists(), "the database was not removed");
    for table in ["Total query times", "Total scan times", "Total insert times", "| k = 2 |"] {
        assert!(markdown.contains(table), "{table} missing:\n{markdown}");
    }
    for chart in ["queries", "scans", "inserts"] {
        let png = std::fs::read(dir.join(format!("fig-{chart}.png"))).unwrap();
        assert_eq!(&png[1..4], b"PNG");
    }
    let again = wafer(&["experiment", "mqssd-lsm", "--from", &path("r.json"), "--quiet"]);
    assert_eq!(again, markdown);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `wafer tune` prices both batch options from the committed profile: the out-of-place
/// eviction batch is a power of two within the pool's bound, and no choice costs more per
/// page than today's value by more than the tolerance it picks within.
#[test]
fn tune_chooses_both_batch_options_from_the_profile() {
    let profile = profile();
    let json = wafer(&[
        "tune",
        "--mqssd-profile",
        profile.to_str().unwrap(),
        "--write-mode",
        "out-of-place",
        "--buffer-pool",
        "16MiB",
        "--json",
    ]);
    let choices: serde_json::Value = serde_json::from_str(&json).unwrap();
    let choices = choices.as_array().unwrap();
    assert_eq!(choices.len(), 2, "{json}");
    for c in choices {
        let chosen = c["chosen"].as_u64().unwrap();
        assert!(chosen.is_power_of_two(), "{c}");
        let (now, model) =
            (c["current_us_per_page"].as_f64().unwrap(), c["chosen_us_per_page"].as_f64().unwrap());
        assert!(model <= now * 1.1 && model > 0.0, "{c}");
    }
    // 16 MiB is 4096 frames: eviction writes back at most an eighth of them at once.
    assert!(choices[0]["chosen"].as_u64().unwrap() <= 512, "{json}");
    let table = wafer(&["tune", "--mqssd-profile", profile.to_str().unwrap()]);
    assert!(table.contains("Options::eviction_batch_pages") && table.contains("QUEUE_DEPTH"));
    let out = Command::new(env!("CARGO_BIN_EXE_wafer"))
        .args(["tune", "--mqssd-profile", profile.to_str().unwrap(), "--write-mode", "sideways"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

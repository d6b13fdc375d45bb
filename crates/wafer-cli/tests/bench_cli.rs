//! Smoke tests of `wafer bench`, `wafer report` and `wafer experiment` with tiny sizes.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

fn wafer(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_wafer")).args(args).output().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wafer-bench-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn stdout(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn bench_ycsb_on_tiny_emulator_writes_consistent_json_and_plots() {
    let dir = scratch("ycsb");
    let json = dir.join("r.json");
    let toml = dir.join("bench.toml");
    // The file sets some knobs, flags others: both paths are exercised.
    std::fs::write(
        &toml,
        // An 8 MiB device: a doublewrite area of one 16-page batch and a 16 MiB WAL
        // checkpointed every 2 MiB.
        "workload = \"a\"\nzipf_theta = 0.8\n[engine]\neviction_batch_pages = 16\n\
         data_offset_bytes = 69632\nwal_capacity_bytes = 16777216\ncheckpoint_log_bytes = 2097152\n",
    )
    .unwrap();
    let out = wafer(&[
        "bench",
        "ycsb",
        "--config",
        toml.to_str().unwrap(),
        "--device",
        "emu:tiny",
        "--fill",
        "0.9",
        "--threads",
        "2",
        "--until",
        "2x",
        "--warmup",
        "1x",
        "--interval",
        "20ms",
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    let text = stdout(&out);
    assert!(text.contains("DB WAF") && text.contains("ycsb-a zipf:0.8 emu:tiny"), "{text}");

    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["schema"], "wafer-bench/run");
    assert_eq!(report["config"]["setup"]["bench_config"]["engine"]["eviction_batch_pages"], 16);
    assert_eq!(report["config_hash"].as_str().unwrap().len(), 16);
    let s = &report["summary"];
    let f = |k: &str| s[k].as_f64().unwrap();
    let bytes = |k: &str| s["bytes"][k].as_f64().unwrap();
    let ops = f("ops");
    assert!((f("total_waf") - f("db_waf") * f("ssd_waf")).abs() < 1e-9 * f("total_waf"));
    assert!(
        (f("logical_bytes_per_op") * ops - bytes("db_issued")).abs() < 1e-6 * bytes("db_issued")
    );
    assert!((f("physical_bytes_per_op") * ops - bytes("flash")).abs() < 1e-6 * bytes("flash"));
    assert!(f("ssd_waf") > 1.0);
    assert!(!report["intervals"].as_array().unwrap().is_empty());
    // No device time without the emulator's timing.
    assert!(s["device_s"].is_null() && s["device_ops_per_sec"].is_null());

    let plots = dir.join("plots");
    let out = wafer(&[
        "report",
        "plot",
        json.to_str().unwrap(),
        json.to_str().unwrap(),
        "--out",
        plots.to_str().unwrap(),
    ]);
    stdout(&out);
    for name in ["waf.png", "throughput.png", "drilldown.png"] {
        let png = std::fs::read(plots.join(name)).unwrap();
        assert_eq!(&png[1..4], b"PNG", "{name}");
    }
    let svg = dir.join("c.svg");
    stdout(&wafer(&["report", "plot", json.to_str().unwrap(), "--out", svg.to_str().unwrap()]));
    assert!(std::fs::read_to_string(dir.join("c-waf.svg")).unwrap().contains("<svg"));
    let table = stdout(&wafer(&["report", "table", json.to_str().unwrap()]));
    assert!(table.contains("SSD WAF"), "{table}");
}

/// With the emulator's timing on, each phase reports its device time beside wall-clock:
/// operations per device second, and the engine's syncs as FLUSH commands that waited.
#[test]
fn bench_ycsb_on_a_timed_emulator_reports_device_time_per_phase() {
    let dir = scratch("ycsb-timed");
    let json = dir.join("r.json");
    let args = [
        "bench",
        "ycsb",
        "--device",
        "emu:tiny",
        "--emu",
        "timing=chips",
        "--emu",
        "queue-depth=8",
        "--records",
        "2000",
        "--load-batch",
        "16",
        "--threads",
        "2",
        "--ops",
        "2000",
        "--json",
    ];
    let mut all: Vec<&str> = args.to_vec();
    all.extend([json.to_str().unwrap(), "--quiet"]);
    let text = stdout(&wafer(&all));
    assert!(text.contains("run in device time:"), "{text}");
    assert!(text.contains("load in device time:"), "{text}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for phase in [&report["summary"], &report["load"]] {
        let f = |k: &str| phase[k].as_f64().unwrap();
        assert!(f("device_s") > 0.0, "{phase}");
        let rate = f("ops") / f("device_s");
        assert!((f("device_ops_per_sec") - rate).abs() <= 1e-9 * rate, "{phase}");
        assert!(phase["device_flushes"].as_u64().unwrap() > 0, "{phase}");
        assert!(f("device_flush_wait_s") >= 0.0, "{phase}");
    }
}

#[test]
fn unknown_write_mode_and_bad_flags_fail_with_one_line() {
    let out = wafer(&["bench", "ycsb", "--device", "emu:tiny", "--write-mode", "sideways"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown write mode"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let out = wafer(&["bench", "ycsb", "--device", "emu:tiny", "--duration", "1s", "--ops", "5"]);
    assert_eq!(out.status.code(), Some(1));
    let out = wafer(&["bench", "ycsb", "--device", "tape:1"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown kind"));
}

#[test]
fn experiment_table1_tiny_lists_every_row() {
    let out = wafer(&["experiment", "table1", "--scale", "tiny", "--quiet"]);
    let text = stdout(&out);
    assert!(text.contains("in-place"), "{text}");
    assert!(text.contains("+ NoWA") && text.contains("- comp."), "{text}");
    assert!(!text.contains("not yet implemented"), "every row runs: {text}");
}

/// The whole CCZNS experiment at its smallest scale through the CLI (tens of seconds in a
/// debug build; `experiment::cczns::tests` covers the same logic at smaller sizes).
#[test]
#[ignore = "tens of seconds: run with --ignored, or `wafer experiment cczns --scale tiny`"]
fn experiment_cczns_tiny_writes_json_with_every_scheme() {
    let dir = scratch("cczns");
    let json = dir.join("c.json");
    let out = wafer(
        &["experiment", "cczns", "--scale", "tiny", "--quiet", "--json"]
            .into_iter()
            .chain([json.to_str().unwrap()])
            .collect::<Vec<_>>(),
    );
    assert!(stdout(&out).contains("| device |"));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let names: Vec<&str> = (0..4).filter_map(|i| report["schemes"][i]["name"].as_str()).collect();
    assert_eq!(names, ["none", "lz4", "zstd", "device"]);
}

/// GC-unit inference through the CLI on the tiny emulator (a fraction of a second): the JSON
/// holds the preset's superblock (128 KiB) as `gc_unit_bytes`, the markdown the table; a file
/// target without a capacity is refused before anything is written.
#[test]
fn experiment_infer_gc_unit_finds_the_tiny_superblock() {
    let dir = scratch("infer");
    let (json, md) = (dir.join("i.json"), dir.join("i.md"));
    let out = wafer(&[
        "experiment",
        "infer-gc-unit",
        "--device",
        "emu:tiny",
        "--scale",
        "tiny",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
        "--md",
        md.to_str().unwrap(),
    ]);
    assert!(stdout(&out).contains("Inferred GC unit: **128 KiB**"));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["gc_unit_bytes"], 128 * 1024);
    assert!(report["points"].as_array().is_some_and(|p| p.len() >= 2));
    assert!(std::fs::read_to_string(&md).unwrap().contains("| zone size |"));
    let file = dir.join("dev");
    let err = failure(&wafer(&[
        "experiment",
        "infer-gc-unit",
        "--device",
        &format!("file:{}", file.display()),
    ]));
    assert!(err.contains("--capacity"), "{err}");
    assert!(!file.exists());
}

#[test]
fn experiment_cczns_refuses_an_unknown_scale() {
    let err = failure(&wafer(&["experiment", "cczns", "--scale", "huge"]));
    assert!(err.contains("unknown scale"), "{err}");
}

#[test]
fn experiment_fig14_refuses_an_unknown_row_before_running() {
    let err = failure(&wafer(&["experiment", "fig14", "--scale", "tiny", "--row", "nonesuch"]));
    assert!(err.contains("no Table 1 row `nonesuch`") && err.contains("+ GDT"), "{err}");
}

fn failure(out: &std::process::Output) -> String {
    assert!(!out.status.success(), "expected a failure, got {:?}", out.status);
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The bench keeps its WAL beside a file device, so `--no-load` reopens what a load left and
/// `wafer check` finds it clean; a file that is not a database is refused untouched.
#[test]
fn bench_on_a_file_reopens_with_no_load_and_checks_clean() {
    let dir = scratch("noload");
    let db = dir.join("f.db");
    let db_arg = format!("file:{}", db.display());
    let common = [
        "bench",
        "ycsb",
        "--device",
        &db_arg,
        "--records",
        "2000",
        "--value-size",
        "100",
        "--ops",
        "2000",
        "--threads",
        "1",
        "--engine",
        "file_capacity_bytes=8MiB",
        "--engine",
        "wal_capacity_bytes=4MiB",
        "--engine",
        "checkpoint_log_bytes=1MiB",
        "--engine",
        "durability=none",
        "--engine",
        "data_offset_bytes=69632",
        "--engine",
        "eviction_batch_pages=16",
    ];
    stdout(&wafer(&common));
    assert!(wafer::db::wal_path(&db).exists(), "the WAL is a file beside the device");
    let mut again = common.to_vec();
    again.push("--no-load");
    stdout(&wafer(&again));
    let out = stdout(&wafer(&["check", db.to_str().unwrap()]));
    assert!(out.contains("clean"), "{out}");
    // The same database's figures, as an application would export them.
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&wafer(&["stats", db.to_str().unwrap()]))).unwrap();
    assert!(json["pool"]["frames"].as_u64().unwrap() > 0, "{json}");
    assert!(json["allocated_pages"].as_u64().unwrap() > 2, "{json}");
    let text = stdout(&wafer(&["stats", "--format", "prometheus", db.to_str().unwrap()]));
    assert!(text.contains("# TYPE wafer_allocated_pages gauge\nwafer_allocated_pages "), "{text}");
    // Dumped, loaded into a new database out of place, dumped again: the same stream.
    let stream = dir.join("f.dump");
    let copy = dir.join("copy.db");
    let (db_s, stream_s, copy_s) =
        (db.to_str().unwrap(), stream.to_str().unwrap(), copy.to_str().unwrap());
    stdout(&wafer(&["dump", db_s, "-o", stream_s]));
    let engine = ["--engine", "write_mode=out-of-place", "--engine", "file_capacity_bytes=256MiB"];
    stdout(&wafer(&[&["load", stream_s, copy_s][..], &engine[..]].concat()));
    let again = dir.join("again.dump");
    stdout(&wafer(&["dump", copy_s, "-o", again.to_str().unwrap()]));
    assert!(std::fs::read(&stream).unwrap() == std::fs::read(&again).unwrap());
    assert!(stdout(&wafer(&["check", copy_s])).contains("clean"));
    let err = failure(&wafer(&[&["load", stream_s, copy_s][..], &engine[..]].concat()));
    assert!(err.contains("already exists"), "load never writes into an existing database: {err}");
    // A backup of the out-of-place copy is a database of its own, with the same entries.
    let backup = dir.join("backup.db");
    let backup_s = backup.to_str().unwrap();
    stdout(&wafer(&["backup", copy_s, backup_s]));
    assert!(stdout(&wafer(&["check", backup_s])).contains("clean"));
    let backed = dir.join("backup.dump");
    stdout(&wafer(&["dump", backup_s, "-o", backed.to_str().unwrap()]));
    assert!(std::fs::read(&stream).unwrap() == std::fs::read(&backed).unwrap());
    let err = failure(&wafer(&["backup", copy_s, backup_s]));
    assert!(err.contains("already exists"), "a backup never overwrites: {err}");

    let foreign = dir.join("notes.txt");
    let text = b"these are my notes, not a database\n".repeat(4000);
    std::fs::write(&foreign, &text).unwrap();
    std::fs::write(wafer::db::wal_path(&foreign), &text).unwrap();
    let arg = format!("file:{}", foreign.display());
    let mut args = common.to_vec();
    args[3] = &arg;
    args.push("--no-load");
    let err = failure(&wafer(&args));
    assert!(err.contains("not a Wafer database"), "{err}");
    assert!(std::fs::read(&foreign).unwrap() == text, "the file is left as it was");
    let err = failure(&wafer(&["check", foreign.to_str().unwrap()]));
    assert!(err.contains("not a Wafer database"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

//! Smoke tests of the `wafer` binary on the tiny emulator preset.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

fn wafer(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_wafer")).args(args).output().unwrap()
}

/// A scratch directory per test (removed at the start so reruns start clean).
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wafer-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn emu_run_prints_a_table_and_writes_json_and_png() {
    let dir = scratch("run");
    let json = dir.join("r.json");
    let png = dir.join("waf.png");
    let out = wafer(&[
        "emu",
        "run",
        "--preset",
        "tiny",
        "--fill",
        "0.9",
        "--workload",
        "randwrite",
        "--until",
        "2x",
        "--json",
        json.to_str().unwrap(),
        "--plot",
        png.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("WAF (steady state)"), "{table}");
    assert!(table.contains("sim rate"), "{table}");

    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    for key in ["host_bytes", "flash_bytes", "waf", "erases", "steady_state_waf", "samples"] {
        assert!(doc.get(key).is_some(), "missing {key}");
    }
    assert!(doc["waf"].as_f64().unwrap() > 1.0);
    assert_eq!(&std::fs::read(&png).unwrap()[..4], b"\x89PNG");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn emu_replay_and_job_file_run() {
    let dir = scratch("replay");
    let trace = dir.join("t.log");
    let mut text = String::from("fio version 3 iolog\n0 /dev/x add\n");
    for i in 0..200u64 {
        text.push_str(&format!("{i} /dev/x write {} 4096\n", (i * 7919 % 1000) * 4096));
    }
    std::fs::write(&trace, text).unwrap();
    let out = wafer(&["emu", "replay", trace.to_str().unwrap(), "--preset", "tiny", "-q"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8(out.stdout).unwrap().contains("host writes"));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("200 requests") && stderr.contains(" 0 requests beyond"), "{stderr}");

    // A trace from a larger disk: its footprint is reported, and --strict refuses it.
    let big = dir.join("big.log");
    let text = "fio version 3 iolog\n0 /dev/x add\n1 /dev/x write 0 4096\n\
                2 /dev/x write 1099511627776 4096\n";
    std::fs::write(&big, text).unwrap();
    let out = wafer(&["emu", "replay", big.to_str().unwrap(), "--preset", "tiny", "-q"]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("1 requests beyond the device folded"), "{stderr}");
    let out =
        wafer(&["emu", "replay", big.to_str().unwrap(), "--preset", "tiny", "-q", "--strict"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("beyond the device") && stderr.contains("--strict"), "{stderr}");

    let jobs = dir.join("jobs.toml");
    let spec = "until = \"1x\"\nfill = 0.5\n[[job]]\nworkload = \"randwrite\"\nsize = \"25%\"\n\
                [[job]]\nworkload = \"write\"\noffset = \"50%\"\nsize = \"25%\"\n";
    std::fs::write(&jobs, spec).unwrap();
    let out =
        wafer(&["emu", "run", "--preset", "tiny", "--job-file", jobs.to_str().unwrap(), "-q"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    assert_eq!(table.matches("\njob ").count(), 2, "{table}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_is_a_one_line_error_with_nonzero_exit() {
    for args in [
        &["emu", "run", "--preset", "nope"][..],
        &["emu", "run", "--preset", "tiny", "--until", "4q"],
        &["emu", "run", "--preset", "tiny", "--set", "op"],
        &["emu", "run", "--preset", "tiny", "--set", "geometry.channels=0"],
        &["emu", "replay", "/nonexistent/trace.log", "--preset", "tiny"],
    ] {
        let out = wafer(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.starts_with("wafer: error: "), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"));
    }
}

#[test]
fn show_prints_toml_with_overrides() {
    let out = wafer(&["emu", "show", "--preset", "tiny", "--op", "0.5"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("op = 0.5"), "{text}");
    assert!(text.contains("[geometry]"));
}

/// `wafer emu serve` mounts, `wafer emu stats` reads the counters while it serves, SIGTERM
/// unmounts cleanly. Skips where /dev/fuse cannot be opened, unless WAFER_REQUIRE_FUSE is set.
#[test]
fn emu_serve_mounts_reports_stats_and_unmounts_on_sigterm() {
    if let Err(e) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/fuse") {
        assert!(std::env::var_os("WAFER_REQUIRE_FUSE").is_none(), "/dev/fuse: {e}");
        eprintln!("skipped: /dev/fuse: {e}");
        return;
    }
    let dir = scratch("serve");
    let mut child = Command::new(env!("CARGO_BIN_EXE_wafer"))
        .args(["emu", "serve", "--preset", "tiny", "--mount", dir.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The mount appears once the server is up (bounded wait, not a timing assertion).
    let stats = dir.join("stats");
    for _ in 0..300 {
        if stats.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = wafer(&["emu", "stats", dir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("SSD WAF"), "{text}");
    let json = wafer(&["emu", "stats", "--json", dir.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&json.stdout).contains("\"flashemu-fuse/stats\""));
    let kill = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "serve exited with {status}");
    assert!(std::fs::read_dir(&dir).unwrap().next().is_none(), "still mounted");
    // Not being served: a clear error.
    let out = wafer(&["emu", "stats", dir.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("wafer emu serve --mount"));
    let _ = std::fs::remove_dir_all(&dir);
}

//! The HTML report of a tiny Table 1 run, opened in headless Chromium: the page loads, a
//! screenshot is taken, and the console stays free of errors. `.ci/run` installs Debian's
//! chromium and sets WAFER_REQUIRE_CHROMIUM=1, so there the test runs for real; on a developer
//! machine without chromium it says so and skips.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html-report");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The browser: $WAFER_CHROMIUM, else `chromium` (Debian) or `chromium-browser` on the PATH.
fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("WAFER_CHROMIUM") {
        return Some(path.into());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// Runs headless Chromium on a local file with a fresh profile and no network side channels;
/// returns its stderr, where `--enable-logging=stderr` puts the page's console messages.
fn run_chromium(browser: &Path, page: &Path, profile: &Path, extra: &[&str]) -> (String, String) {
    let out = Command::new("timeout")
        .arg("120")
        .arg(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "chromium failed: {:?}\n{stderr}", out.status);
    (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
}

/// Console messages in Chromium's log: `[pid:tid:time:INFO:CONSOLE(1)] "text", source: ...`.
fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

#[test]
fn tiny_experiment_html_report_opens_in_headless_chromium_without_console_errors() {
    let dir = scratch();
    let page = dir.join("table1.html");
    let out = Command::new(env!("CARGO_BIN_EXE_wafer"))
        .args(["experiment", "table1", "--scale", "tiny", "--quiet", "--html"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Measured beside published") && html.contains("<svg"));

    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("WAFER_REQUIRE_CHROMIUM").is_none(),
            "WAFER_REQUIRE_CHROMIUM is set but no chromium was found"
        );
        eprintln!("SKIPPED: chromium not found (apt-get install chromium, or set WAFER_CHROMIUM)");
        return;
    };

    // The console check can fail: a page that logs an error is caught.
    let control = dir.join("control.html");
    std::fs::write(&control, "<script>console.error('wafer-control-error')</script>").unwrap();
    let (_, log) = run_chromium(&browser, &control, &dir.join("profile-control"), &["--dump-dom"]);
    assert!(console_lines(&log).iter().any(|l| l.contains("wafer-control-error")), "{log}");

    let shot = dir.join("screenshot.png");
    let (_, log) = run_chromium(
        &browser,
        &page,
        &dir.join("profile-shot"),
        &["--window-size=1280,2400", &format!("--screenshot={}", shot.display())],
    );
    assert!(console_lines(&log).is_empty(), "console messages:\n{log}");
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    let size = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    assert_eq!((size(16), size(20)), (1280, 2400));
    // A blank page of that size compresses to a few kilobytes; tables and charts do not.
    assert!(png.len() > 50_000, "screenshot of {} bytes looks blank", png.len());
    eprintln!("screenshot: {} ({} bytes)", shot.display(), png.len());

    let (dom, log) = run_chromium(&browser, &page, &dir.join("profile-dom"), &["--dump-dom"]);
    assert!(console_lines(&log).is_empty(), "console messages:\n{log}");
    assert!(dom.contains("Measured beside published"), "the DOM Chromium built");
    assert_eq!(dom.matches("<svg").count(), html.matches("<svg").count());
}

#[test]
fn report_html_draws_the_victim_cdf_of_an_emulator_run() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html-report-emu");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (json, page) = (dir.join("emu.json"), dir.join("emu.html"));
    let wafer = |args: &[&std::ffi::OsStr]| {
        let out = Command::new(env!("CARGO_BIN_EXE_wafer")).args(args).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    let os = |s: &'static str| std::ffi::OsStr::new(s);
    wafer(&[
        os("emu"),
        os("run"),
        os("--preset"),
        os("tiny"),
        os("--fill"),
        os("0.9"),
        os("--workload"),
        os("randwrite"),
        os("--until"),
        os("4x"),
        os("--quiet"),
        os("--json"),
        json.as_os_str(),
    ]);
    wafer(&[
        os("report"),
        os("html"),
        os("--emu"),
        json.as_os_str(),
        os("--out"),
        page.as_os_str(),
    ]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("GC victims: CDF of the valid ratio"), "the chart's title");
    // The tiny device's interface and policy name the curve.
    assert!(html.contains("conventional (1 stream), OP 25%, greedy"));
    assert_eq!(html.matches("<svg").count(), 1, "no runs: only the CDF");
}

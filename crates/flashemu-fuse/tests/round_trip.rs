//! The served device end to end through the kernel: bytes written to `MOUNT/ssd` read back,
//! a hole punch reaches the emulator as TRIM, the stats file shows the counters moving; and
//! ext4 with `-o discard` on a loop device over the file trims what a deleted file held.
//!
//! Where FUSE (or loop devices) cannot be used, each test prints why and skips, unless
//! WAFER_REQUIRE_FUSE is set (CI runs as root with /dev/fuse and sets it).

use std::fs::OpenOptions;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use flashemu::{Config, Ssd, LBA_BYTES};
use flashemu_fuse::{loopfs, serve, LoopFs, Stats};

const REQUIRE_ENV: &str = "WAFER_REQUIRE_FUSE";

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("flashemu-fuse-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Why this test cannot run here, or None.
fn unavailable(need_loop: bool) -> Option<String> {
    let reason = serve::fuse_unavailable().or_else(|| {
        if need_loop {
            loopfs::loop_unavailable()
        } else {
            None
        }
    });
    if let Some(reason) = &reason {
        assert!(std::env::var_os(REQUIRE_ENV).is_none(), "{REQUIRE_ENV} is set but {reason}");
        eprintln!("skipped: {reason}");
    }
    reason
}

/// 256 MiB of flash (16 superblocks of 16 MiB), about 180 MiB logical.
fn small_device() -> Ssd {
    let mut config = Config::preset("cns").expect("preset");
    config.set("geometry.blocks_per_chip", "4").expect("override");
    // 4 of the 16 superblocks are GC's reserve and open ones: OP must leave room for them.
    config.set("op", "0.4").expect("override");
    Ssd::new(config).expect("ssd")
}

#[test]
fn bytes_round_trip_and_a_hole_punch_is_a_trim() {
    if unavailable(false).is_some() {
        return;
    }
    let dir = scratch("rt");
    let mut served = serve(small_device(), "cns 256 MiB flash", &dir).expect("serve");
    let file = OpenOptions::new().read(true).write(true).open(served.device_path()).expect("open");
    let size = file.metadata().expect("stat").len();
    assert_eq!(size % LBA_BYTES, 0);
    let data: Vec<u8> = (0..3 * LBA_BYTES as usize + 100).map(|i| (i % 253) as u8 + 1).collect();
    file.write_all_at(&data, 2 * LBA_BYTES + 7).expect("write");
    file.sync_all().expect("fsync");
    let mut back = vec![0u8; data.len()];
    file.read_exact_at(&mut back, 2 * LBA_BYTES + 7).expect("read");
    assert_eq!(back, data);
    let written = served.counters().expect("counters");
    assert_eq!(written.host_write_bytes, 4 * LBA_BYTES, "blocks 2..=5, each whole");

    // Punch blocks 3 and 4 (whole): trimmed, and they read as zeros.
    let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
    // SAFETY: a valid open descriptor; fallocate touches no memory of ours.
    let rc = unsafe {
        libc::fallocate(file.as_raw_fd(), mode, (3 * LBA_BYTES) as i64, (2 * LBA_BYTES) as i64)
    };
    assert_eq!(rc, 0, "fallocate: {}", std::io::Error::last_os_error());
    let trimmed = served.counters().expect("counters").since(&written);
    assert_eq!(trimmed.host_trim_bytes, 2 * LBA_BYTES);
    file.read_exact_at(&mut back[..2 * LBA_BYTES as usize], 3 * LBA_BYTES).expect("read");
    assert!(back[..2 * LBA_BYTES as usize].iter().all(|&b| b == 0));

    // Writing past the end is refused; the size stays.
    assert!(file.write_all_at(&[1u8; 10], size).is_err());
    assert!(file.set_len(size + LBA_BYTES).is_err());

    let stats = Stats::from_json(&std::fs::read_to_string(served.stats_path()).expect("stats"))
        .expect("parse");
    assert_eq!(stats.logical_bytes, size);
    assert_eq!(stats.counters.host_trim_bytes, 2 * LBA_BYTES);
    assert_eq!(stats.counters, served.counters().expect("counters"));
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("readdir")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
        .collect();
    names.sort();
    assert_eq!(names, ["ssd", "stats"]);

    drop(file);
    served.unmount().expect("unmount");
    assert!(std::fs::read_dir(&dir).expect("readdir").next().is_none(), "still mounted");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ext4_with_discard_on_a_loop_device_trims_a_deleted_file() {
    if unavailable(true).is_some() {
        return;
    }
    let dir = scratch("ext4");
    let (mount, fs_dir) = (dir.join("fuse"), dir.join("fs"));
    std::fs::create_dir_all(&mount).expect("mkdir");
    let mut served = serve(small_device(), "cns 256 MiB flash", &mount).expect("serve");
    let fs = LoopFs::create(&served.device_path(), &fs_dir).expect("loop + ext4");
    let path = fs_dir.join("data");
    let chunk = vec![0x5Au8; 1 << 20];
    let mut file = std::fs::File::create(&path).expect("create");
    for _ in 0..8 {
        file.write_all(&chunk).expect("write");
    }
    file.sync_all().expect("fsync");
    drop(file);
    fs.sync().expect("sync");
    let before = served.counters().expect("counters");
    std::fs::remove_file(&path).expect("rm");
    fs.sync().expect("sync");
    let after = served.counters().expect("counters").since(&before);
    assert!(
        after.host_trim_bytes >= 7 << 20,
        "deleting 8 MiB trimmed only {} bytes",
        after.host_trim_bytes
    );
    fs.destroy().expect("teardown");
    served.unmount().expect("unmount");
    let _ = std::fs::remove_dir_all(&dir);
}

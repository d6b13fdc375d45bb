//! `wafer emu serve` and `wafer emu stats`: the emulated SSD as a file over FUSE, and its
//! counters read while it serves.
use std::path::PathBuf;

use clap::Args;
use flashemu::{Ssd, StoreKind};
use flashemu_fuse::{serve, ServeError, Stats, STATS_FILE};

use super::emu_device::DeviceArgs;
use super::error::CliError;

#[derive(Debug, Args)]
pub(super) struct ServeArgs {
    #[command(flatten)]
    device: DeviceArgs,
    /// Directory to mount on (empty): the device appears as DIR/ssd, its counters as
    /// DIR/stats.
    #[arg(long, value_name = "DIR")]
    mount: PathBuf,
    /// Once the device is served, write its file's path here (written whole, then renamed
    /// into place): a program that started the server waits for this file.
    #[arg(long, value_name = "FILE")]
    ready_file: Option<PathBuf>,
    /// On exit, write the final counters here as JSON (the `stats` file's schema).
    #[arg(long, value_name = "FILE")]
    stats_out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(super) struct StatsArgs {
    /// The mount directory of `wafer emu serve` (or its stats file).
    #[arg(value_name = "DIR")]
    path: PathBuf,
    /// Print the stats file's JSON as it is.
    #[arg(long)]
    json: bool,
}

/// Serves until SIGINT or SIGTERM, then unmounts. While a loop device still holds the file
/// the unmount is refused and serving goes on; a second signal then detaches it anyway.
pub(super) fn serve_cmd(args: &ServeArgs) -> Result<(), CliError> {
    let config = args.device.config()?;
    if config.store == StoreKind::None {
        return Err(CliError(
            "the device keeps no bytes (store = none): serving needs --set store=memory or a \
             file store"
                .into(),
        ));
    }
    let label = args.device.label();
    // Signals are routed to the iterator before the mount, so none is lost in between.
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])
    .map_err(|e| CliError(format!("installing signal handlers: {e}")))?;
    let ssd = Ssd::new(config)?;
    let mut served = serve(ssd, &label, &args.mount)?;
    let size_mib = served.stats()?.logical_bytes >> 20;
    if let Some(path) = &args.ready_file {
        write_whole(path, served.device_path().display().to_string().as_bytes())?;
    }
    eprintln!(
        "serving {label}: {} ({size_mib} MiB), counters in {}; SIGINT or SIGTERM unmounts\n\
         e.g. losetup --find --show {} && mkfs.ext4 /dev/loopN && mount -o discard /dev/loopN /mnt",
        served.device_path().display(),
        served.stats_path().display(),
        served.device_path().display(),
    );
    let mut refused = false;
    for _signal in signals.forever() {
        match served.unmount() {
            Ok(()) => break,
            Err(e @ ServeError::Busy { .. }) if !refused => {
                eprintln!("{e}\nstill serving; a second signal detaches it anyway");
                refused = true;
            }
            Err(e) => {
                eprintln!("{e}; detaching lazily");
                served.force_unmount();
                break;
            }
        }
    }
    let stats = served.stats()?;
    if let Some(path) = &args.stats_out {
        write_whole(path, stats.to_json().as_bytes())?;
    }
    print!("{}", stats.render());
    Ok(())
}

/// Writes `path` through a temporary file renamed into place, so a reader that sees the file
/// sees all of it.
fn write_whole(path: &std::path::Path, bytes: &[u8]) -> Result<(), CliError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| CliError(format!("{}: {e}", path.display())))
}

pub(super) fn stats_cmd(args: &StatsArgs) -> Result<(), CliError> {
    let path = if args.path.is_dir() { args.path.join(STATS_FILE) } else { args.path.clone() };
    let text = std::fs::read_to_string(&path).map_err(|e| {
        CliError(format!("{}: {e} (is `wafer emu serve --mount` running there?)", path.display()))
    })?;
    let stats =
        Stats::from_json(&text).map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    if args.json {
        print!("{}", stats.to_json());
    } else {
        print!("{}", stats.render());
    }
    Ok(())
}

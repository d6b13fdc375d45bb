//! `wafer tune`: what an MQSSD device profile says Wafer's batch sizes should be.
use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;
use wafer_bench::mqssd::tune::{self, Choice};
use wafer_bench::mqssd::DeviceProfile;

use super::error::CliError;

#[derive(Debug, Args)]
pub struct TuneArgs {
    /// The device profile (`wafer profile --out`).
    #[arg(long, value_name = "FILE.toml")]
    mqssd_profile: PathBuf,
    /// in-place (doublewrite) or out-of-place: the eviction batch is priced by how it is written.
    #[arg(long, default_value = "in-place")]
    write_mode: String,
    /// Buffer pool size the batches are bounded by [default: the production options' 256 MiB].
    #[arg(long, value_name = "BYTES")]
    buffer_pool: Option<String>,
    /// Print the choices as JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: TuneArgs) -> Result<(), CliError> {
    let path = &args.mqssd_profile;
    let text =
        std::fs::read_to_string(path).map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    let profile = DeviceProfile::from_toml(&text)?;
    let mut options = match args.write_mode.as_str() {
        "in-place" => wafer::Options::production(),
        "out-of-place" => wafer::Options::production().out_of_place(),
        other => return Err(CliError(format!("--write-mode `{other}`: in-place or out-of-place"))),
    };
    if let Some(size) = &args.buffer_pool {
        options.buffer_pool_bytes = wafer_bench::jobs::parse_bytes(size)
            .map_err(|e| CliError(format!("--buffer-pool: {e}")))?;
    }
    let depth = u64::from(wafer::device::URING_QUEUE_DEPTH);
    let choices = tune::choose(&profile, &options, depth);
    if args.json {
        let json =
            serde_json::to_string_pretty(&choices).map_err(|e| CliError(format!("JSON: {e}")))?;
        println!("{json}");
        return Ok(());
    }
    print!("{}", render(&args.write_mode, &choices, &profile, depth));
    Ok(())
}

fn render(mode: &str, choices: &[Choice], profile: &DeviceProfile, depth: u64) -> String {
    let mut out = format!(
        "Batch sizes for {mode} from {} (costs per 4 KiB page, microseconds, syncs included; \
         the smallest power of two, or the cap, within {:.0}% of the cheapest):\n\n\
         | parameter | option | today | model | us/page today | us/page model |\n\
         |---|---|---|---|---|---|\n",
        profile.info.device,
        tune::WITHIN * 100.0
    );
    for c in choices {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.2} | {:.2} |",
            c.parameter,
            c.location,
            c.current,
            c.chosen,
            c.current_us_per_page,
            c.chosen_us_per_page
        );
    }
    out.push('\n');
    for c in choices {
        let _ = writeln!(out, "- {}: {}.", c.parameter, c.why);
    }
    let (read_depth, read_us) = tune::saturating_depth(profile, false);
    let (write_depth, write_us) = tune::saturating_depth(profile, true);
    let _ = write!(
        out,
        "\nConstants no option sets (left as they are):\n\
         - parallel leaf reads of a batch: PREFETCH_THREADS_MAX threads (db/mod.rs). Random \
         page reads stop getting cheaper at {read_depth} deep (t + alpha = {read_us:.1} us).\n\
         - write-back depth: io_uring keeps {depth} operations in flight (device/uring.rs \
         QUEUE_DEPTH); the eviction batch bounds it. Random page writes stop getting cheaper \
         at {write_depth} deep (s + beta = {write_us:.1} us).\n\
         - batches the background cleaner evicts per wake: BATCHES_PER_WAKE_MAX \
         (buffer/cleaner.rs): a bound on work per wake, not an I/O depth.\n"
    );
    out
}

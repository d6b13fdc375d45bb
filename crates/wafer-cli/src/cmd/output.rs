//! Where commands write their results: the report flags every reporting command shares, and
//! the checks that fail before a long run rather than after it. A leaf beside `error.rs`.
use super::error::CliError;

/// Fails before a long run rather than after it if an output cannot be written.
pub fn check_output_path(path: Option<&std::path::Path>) -> Result<(), CliError> {
    let parent = path.and_then(|p| p.parent()).filter(|p| !p.as_os_str().is_empty());
    if let Some(dir) = parent {
        if !dir.is_dir() {
            return Err(CliError(format!("{}: directory does not exist", dir.display())));
        }
    }
    Ok(())
}

pub fn write_file(path: &std::path::Path, bytes: &[u8]) -> Result<(), CliError> {
    std::fs::write(path, bytes).map_err(|e| CliError(format!("{}: {e}", path.display())))
}

/// Where a command's results go: the same flags for every command that writes a report, a
/// table and charts.
#[derive(Debug, clap::Args)]
pub struct ReportFiles {
    /// Write the report as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    /// Write the report's table as markdown.
    #[arg(long, visible_alias = "md", value_name = "FILE")]
    pub markdown: Option<std::path::PathBuf>,
    /// Write the charts as STEM-NAME.png (.svg for SVG).
    #[arg(long, value_name = "STEM")]
    pub plots: Option<std::path::PathBuf>,
    /// No live lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

impl ReportFiles {
    /// Fails before a long run if an output's directory is missing.
    pub fn check(&self) -> Result<(), CliError> {
        for path in [&self.json, &self.markdown, &self.plots] {
            check_output_path(path.as_deref())?;
        }
        Ok(())
    }
}

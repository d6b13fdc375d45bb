//! The error every command returns. A leaf: the commands name it, and it names none of them.

/// A failed command: the message is printed after `wafer: error: `.
#[derive(Debug)]
pub struct CliError(pub String);

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl<E: std::error::Error> From<E> for CliError {
    fn from(error: E) -> CliError {
        CliError(error.to_string())
    }
}

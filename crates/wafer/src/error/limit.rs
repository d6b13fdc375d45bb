//! The values an option may take, for messages and matching: shared by the engine's options
//! and the space manager's, so it names neither.
use std::fmt;

/// What an option's value must be. Limits that name another option carry its value, so the
/// message shows both sides of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    AtLeast(u64),
    AtMost(u64),
    Within {
        min: u64,
        max: u64,
    },
    MultipleOf(u64),
    /// Strictly below another option's value.
    Below {
        option: &'static str,
        value: u64,
    },
    /// Strictly above another option's value.
    Above {
        option: &'static str,
        value: u64,
    },
    /// At least another option's value.
    NotBelow {
        option: &'static str,
        value: u64,
    },
    /// At most another option's value.
    NotAbove {
        option: &'static str,
        value: u64,
    },
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::AtLeast(n) => write!(f, "at least {n}"),
            Limit::AtMost(n) => write!(f, "at most {n}"),
            Limit::Within { min, max } => write!(f, "in {min}..={max}"),
            Limit::MultipleOf(n) => write!(f, "a positive multiple of {n}"),
            Limit::Below { option, value } => write!(f, "below {option} ({value})"),
            Limit::Above { option, value } => write!(f, "above {option} ({value})"),
            Limit::NotBelow { option, value } => write!(f, "at least {option} ({value})"),
            Limit::NotAbove { option, value } => write!(f, "at most {option} ({value})"),
        }
    }
}

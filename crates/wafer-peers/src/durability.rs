//! When a commit is on stable storage, the one setting every engine is given alike.

/// When a commit is on stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Durability {
    /// Each commit syncs its log (LMDB: its pages and meta page) before it returns.
    Sync,
    /// Each commit writes its log record; the engine syncs later (background flush,
    /// checkpoint, or the OS). A crash may lose the last commits, never consistency.
    Lazy,
}

impl Durability {
    pub fn parse(text: &str) -> Result<Durability, String> {
        match text.trim() {
            "sync" => Ok(Durability::Sync),
            "lazy" | "none" => Ok(Durability::Lazy),
            other => Err(format!("durability `{other}`: expected sync or lazy")),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Durability::Sync => "sync",
            Durability::Lazy => "lazy",
        }
    }
}

//! Checks shared by the cargo-fuzz target `flashemu_config` (`fuzz/`) and the stable
//! `tests/decoders_never_panic.rs`: configuration text from a user (a TOML file, `--set KEY=VALUE`)
//! must give a config or an error, never a panic; an accepted config must have a layout and
//! survive `to_toml` -> `from_toml` unchanged. Not part of the emulator's API.
#![allow(clippy::unwrap_used)]

use crate::Config;

/// A TOML document, then the same bytes as `KEY=VALUE` overrides of the `tiny` preset.
pub fn config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(config) = Config::from_toml(&text) {
        let _ = config.layout();
        let again = config.to_toml().expect("a valid config serialises");
        let back = Config::from_toml(&again).expect("to_toml output reads back");
        assert_eq!(back, config, "config TOML round trip");
    }
    let mut config = Config::preset("tiny").unwrap();
    for line in text.lines().take(64) {
        let (key, value) = line.split_once('=').unwrap_or((line, ""));
        let _ = config.set(key, value);
    }
    if config.validate().is_ok() {
        let _ = config.layout();
    }
}

/// Valid inputs (corpus seeds and mutation bases).
pub fn valid_inputs() -> Vec<Vec<u8>> {
    let mut out = vec![
        b"preset = \"cns\"\nop = 0.2\n[geometry]\nchannels = 4\n".to_vec(),
        b"op=0.1\ngc-policy=greedy\ngeometry.channels=2\n".to_vec(),
    ];
    for name in crate::PRESET_NAMES {
        if let Ok(t) = Config::preset(name).and_then(|c| c.to_toml()) {
            out.push(t.into_bytes());
        }
    }
    out
}

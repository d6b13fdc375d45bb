//! Configuration: presets, TOML round trip, overrides, field-naming errors.
#![allow(clippy::unwrap_used)]
use flashemu::{Config, ConfigError, FdpIsolation, GcPolicy, Interface, StoreKind};

fn invalid_field(result: Result<(), ConfigError>) -> &'static str {
    match result {
        Err(ConfigError::Invalid { field, .. }) => field,
        other => panic!("expected an Invalid error, got {other:?}"),
    }
}

#[test]
fn presets_validate_and_have_the_stated_shape() {
    for name in ["cns", "zns", "fdp", "tiny"] {
        Config::preset(name).unwrap().validate().unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let cns = Config::preset("cns").unwrap().layout();
    assert_eq!(cns.superblock_bytes(), 16 << 20);
    assert_eq!(cns.superblock_count, 256);
    assert_eq!(cns.slots_per_page, 4);
    // 4 GiB / 1.07 = 3.74 GiB logical.
    let logical_gib = (cns.logical_blocks * 4096) as f64 / f64::from(1u32 << 30);
    assert!((logical_gib - 4.0 / 1.07).abs() < 0.001, "{logical_gib}");
    assert!(matches!(Config::preset("zns").unwrap().interface, Interface::Zns { .. }));
    assert!(matches!(Config::preset("fdp").unwrap().interface, Interface::Fdp { .. }));
    assert_eq!(Config::preset("nope"), Err(ConfigError::UnknownPreset("nope".into())));
}

#[test]
fn toml_round_trip() {
    for name in ["cns", "zns", "fdp", "tiny"] {
        let mut config = Config::preset(name).unwrap();
        config.store = StoreKind::File("/tmp/somewhere.img".into());
        let text = config.to_toml().unwrap();
        assert_eq!(Config::from_toml(&text).unwrap(), config, "{name}:\n{text}");
    }
}

#[test]
fn toml_preset_with_overrides() {
    let text = r#"
        preset = "cns"
        op = 0.28
        gc-policy = "fifo"
        [geometry]
        channels = 4
        [interface]
        kind = "fdp"
        ruh_count = 4
        isolation = "persistently-isolated"
        [store]
        kind = "none"
    "#;
    let config = Config::from_toml(text).unwrap();
    assert_eq!(config.op, 0.28);
    assert_eq!(config.gc.policy, GcPolicy::Fifo);
    assert_eq!(config.geometry.channels, 4);
    assert_eq!(
        config.interface,
        Interface::Fdp { ruh_count: 4, isolation: FdpIsolation::PersistentlyIsolated }
    );
    assert_eq!(config.store, StoreKind::None);
    assert!(matches!(
        Config::from_toml("preset = \"cns\"\nbogus = 1"),
        Err(ConfigError::UnknownKey(_))
    ));
    assert!(matches!(Config::from_toml("not toml ["), Err(ConfigError::Parse(_))));
    // Overrides are validated as a whole: a geometry that breaks names its field.
    assert!(matches!(
        Config::from_toml("preset = \"cns\"\nflash-page-bytes = 8192"),
        Err(ConfigError::Invalid { field: "geometry.flash_page_bytes", .. })
    ));
}

#[test]
fn set_accepts_flat_and_dotted_keys() {
    let mut config = Config::preset("cns").unwrap();
    config.set("op", "0.28").unwrap();
    config.set("gc-policy", "cost-benefit").unwrap();
    config.set("geometry.channels", "4").unwrap();
    config.set("chips_per_channel", "2").unwrap();
    config.set("gc.free-superblocks-high", "6").unwrap();
    config.set("flash-page-size", "4k").unwrap();
    config.set("store", "none").unwrap();
    config.set("seed", "7").unwrap();
    assert_eq!(config.op, 0.28);
    assert_eq!(config.gc.policy, GcPolicy::CostBenefit);
    assert_eq!(config.geometry.channels, 4);
    assert_eq!(config.geometry.chips_per_channel, 2);
    assert_eq!(config.gc.free_superblocks_high, 6);
    assert_eq!(config.geometry.flash_page_bytes, 4096);
    assert_eq!(config.store, StoreKind::None);
    assert_eq!(config.seed, 7);
    config.validate().unwrap();

    config.set("interface", "zns").unwrap();
    config.set("interface.max-open-zones", "4").unwrap();
    config.set("max_active_zones", "8").unwrap();
    config.set("zone-capacity-blocks", "100").unwrap();
    assert_eq!(
        config.interface,
        Interface::Zns { zone_capacity_blocks: 100, max_open_zones: 4, max_active_zones: 8 }
    );
    config.validate().unwrap();
    // Fields of another interface name themselves.
    assert!(matches!(
        config.set("streams", "2"),
        Err(ConfigError::Invalid { field: "interface.streams", .. })
    ));
    assert!(matches!(config.set("nonsense", "1"), Err(ConfigError::UnknownKey(_))));
    assert!(matches!(config.set("op", "lots"), Err(ConfigError::Invalid { field: "op", .. })));
    assert!(matches!(
        config.set("gc-policy", "lru"),
        Err(ConfigError::Invalid { field: "gc.policy", .. })
    ));
}

#[test]
fn invalid_geometry_names_the_field() {
    let base = Config::preset("tiny").unwrap();
    let cases: [(&str, &str, &str); 9] = [
        ("channels", "0", "geometry.channels"),
        ("chips-per-channel", "0", "geometry.chips_per_channel"),
        ("blocks-per-chip", "0", "geometry.blocks_per_chip"),
        ("pages-per-block", "0", "geometry.pages_per_block"),
        ("flash-page-bytes", "8192", "geometry.flash_page_bytes"),
        ("superblock-chips-per-channel", "3", "geometry.superblock_chips_per_channel"),
        ("op", "-0.1", "op"),
        // Too little OP for the GC reserve plus the open superblocks.
        ("op", "0.01", "op"),
        ("gc.free-superblocks-low", "0", "gc.free_superblocks_low"),
    ];
    for (key, value, field) in cases {
        let mut config = base.clone();
        config.set(key, value).unwrap();
        assert_eq!(invalid_field(config.validate()), field, "{key}={value}");
    }
    let mut config = base.clone();
    config.set("gc.free-superblocks-high", "1").unwrap();
    config.set("gc.free-superblocks-low", "2").unwrap();
    assert_eq!(invalid_field(config.validate()), "gc.free_superblocks_high");

    let mut config = base.clone();
    config.set("interface", "zns").unwrap();
    config.set("zone-capacity-blocks", "33").unwrap();
    assert_eq!(invalid_field(config.validate()), "interface.zone_capacity_blocks");
    config.set("zone-capacity-blocks", "32").unwrap();
    config.set("max-open-zones", "5").unwrap();
    config.set("max-active-zones", "4").unwrap();
    assert_eq!(invalid_field(config.validate()), "interface.max_open_zones");

    let mut config = base;
    config.set("streams", "0").unwrap();
    assert_eq!(invalid_field(config.validate()), "interface.streams");
    // The message names the field too.
    let message = config.validate().unwrap_err().to_string();
    assert!(message.contains("interface.streams"), "{message}");
}

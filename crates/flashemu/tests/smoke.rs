//! Basic device behaviour: sequential fill/overwrite WAF, reads return what was written.
#![allow(clippy::unwrap_used)]
use flashemu::{Config, Placement, Ssd, StoreKind, LBA_BYTES};

fn tiny(store: StoreKind) -> Ssd {
    let mut config = Config::preset("tiny").unwrap();
    config.store = store;
    Ssd::new(config).unwrap()
}

#[test]
fn presets_validate() {
    for name in ["cns", "zns", "fdp", "tiny"] {
        let config = Config::preset(name).unwrap();
        config.validate().unwrap_or_else(|e| panic!("preset {name}: {e}"));
    }
}

#[test]
fn sequential_fill_and_overwrites_have_waf_one() {
    let mut ssd = tiny(StoreKind::None);
    let n = ssd.logical_blocks();
    for round in 0..6 {
        for lba in 0..n {
            ssd.write(lba, 1, None, Placement::None).unwrap();
        }
        ssd.check_consistency().unwrap();
        let c = ssd.counters();
        assert_eq!(c.flash_gc_bytes, 0, "round {round}: sequential overwrites copy nothing");
    }
    let c = ssd.counters();
    assert!(c.superblock_erases > 0, "GC must have run");
    assert_eq!(c.waf(), Some(1.0));
}

#[test]
fn read_returns_last_write() {
    let mut ssd = tiny(StoreKind::Memory);
    let block = vec![7u8; LBA_BYTES as usize];
    ssd.write(5, 1, Some(&block), Placement::None).unwrap();
    let mut buf = vec![1u8; 2 * LBA_BYTES as usize];
    ssd.read(5, &mut buf).unwrap();
    assert!(buf[..4096].iter().all(|&b| b == 7));
    assert!(buf[4096..].iter().all(|&b| b == 0));
    ssd.trim(5, 1).unwrap();
    ssd.read(5, &mut buf).unwrap();
    assert!(buf.iter().all(|&b| b == 0));
}

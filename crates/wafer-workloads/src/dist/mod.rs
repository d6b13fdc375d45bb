//! Random distributions for workloads: a deterministic PRNG and YCSB's key choosers.
//!
//! [`Distribution`] is the *specification* (a value, parsed from strings such as `uniform`,
//! `zipf:0.99`, `scrambled:0.99`, `latest`, `hotcold:0.8:0.2`); [`Chooser`] is the stateful
//! sampler built from it for a given item count. Randomness always comes from a caller-owned
//! [`Rng`], so per-thread generators are deterministic from (seed, thread id).
//!
//! | spec                 | meaning                                                          |
//! |----------------------|------------------------------------------------------------------|
//! | `uniform`            | every item equally likely                                        |
//! | `zipf[:theta]`       | zipfian, item 0 hottest (YCSB ZipfianGenerator), theta def. 0.99 |
//! | `scrambled[:theta]`  | zipfian with hot items scattered by FNV (YCSB "zipfian")         |
//! | `latest[:theta]`     | zipfian over recency, newest item hottest (YCSB SkewedLatest)    |
//! | `hotcold:x:y`        | fraction x of draws to the first fraction y of the items         |

mod hotcold;
mod latest;
mod rng;
mod scrambled;
mod zipfian;

pub use hotcold::HotCold;
pub use latest::SkewedLatest;
pub use rng::Rng;
pub use scrambled::{
    fnvhash64, ScrambledZipfian, FNV_OFFSET_BASIS_64, FNV_PRIME_64, SCRAMBLED_ITEM_COUNT,
    SCRAMBLED_ZETAN, YCSB_ZIPFIAN_CONSTANT,
};
pub use zipfian::{zeta, zeta_range, Zipfian};

use std::fmt;
use std::str::FromStr;

/// Invalid distribution specification (user input: never a panic).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DistError {
    #[error("unknown distribution {0:?} (expected uniform, zipf[:theta], scrambled[:theta], latest[:theta], hotcold:ops:data)")]
    Unknown(String),
    #[error("bad number {value:?} in distribution {spec:?}")]
    BadNumber { spec: String, value: String },
    #[error("zipfian constant {0} must be in (0, 1)")]
    Theta(f64),
    #[error("fraction {0} must be in [0, 1]")]
    Fraction(f64),
    #[error("distribution {spec:?} needs at least {min} items, got {item_count}")]
    TooFewItems { spec: String, min: u64, item_count: u64 },
}

/// A distribution over item ids [0, n). See the module docs for the string forms.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Distribution {
    Uniform,
    Zipfian { theta: f64 },
    ScrambledZipfian { theta: f64 },
    Latest { theta: f64 },
    HotCold { hot_ops_fraction: f64, hot_data_fraction: f64 },
}

impl Distribution {
    /// YCSB's `requestdistribution=zipfian` (which is scrambled).
    pub const YCSB_ZIPFIAN: Distribution =
        Distribution::ScrambledZipfian { theta: YCSB_ZIPFIAN_CONSTANT };
    /// YCSB's `requestdistribution=latest`.
    pub const YCSB_LATEST: Distribution = Distribution::Latest { theta: YCSB_ZIPFIAN_CONSTANT };

    fn validate(self) -> Result<Self, DistError> {
        match self {
            Distribution::Uniform => {}
            Distribution::Zipfian { theta }
            | Distribution::ScrambledZipfian { theta }
            | Distribution::Latest { theta } => {
                // `!(..)` so NaN is rejected too.
                if !(theta > 0.0 && theta < 1.0) {
                    return Err(DistError::Theta(theta));
                }
            }
            Distribution::HotCold { hot_ops_fraction, hot_data_fraction } => {
                for f in [hot_ops_fraction, hot_data_fraction] {
                    if !(0.0..=1.0).contains(&f) {
                        return Err(DistError::Fraction(f));
                    }
                }
            }
        }
        Ok(self)
    }

    /// Smallest item count this distribution can sample from.
    pub fn min_item_count(&self) -> u64 {
        match self {
            Distribution::Latest { .. } => 2,
            _ => 1,
        }
    }

    /// A sampler over [0, item_count).
    pub fn chooser(&self, item_count: u64) -> Result<Chooser, DistError> {
        let d = self.validate()?;
        if item_count < d.min_item_count() {
            return Err(DistError::TooFewItems {
                spec: d.to_string(),
                min: d.min_item_count(),
                item_count,
            });
        }
        let kind = match d {
            Distribution::Uniform => ChooserKind::Uniform,
            Distribution::Zipfian { theta } => {
                ChooserKind::Zipfian(Zipfian::new(item_count, theta))
            }
            Distribution::ScrambledZipfian { theta } => {
                ChooserKind::Scrambled(ScrambledZipfian::new(item_count, theta))
            }
            Distribution::Latest { theta } => {
                ChooserKind::Latest(SkewedLatest::new(item_count, theta))
            }
            Distribution::HotCold { hot_ops_fraction, hot_data_fraction } => {
                ChooserKind::HotCold(HotCold::new(item_count, hot_ops_fraction, hot_data_fraction))
            }
        };
        Ok(Chooser { kind, item_count })
    }
}

fn parse_f64(spec: &str, value: &str) -> Result<f64, DistError> {
    value
        .trim()
        .parse::<f64>()
        .map_err(|_| DistError::BadNumber { spec: spec.to_string(), value: value.to_string() })
}

impl FromStr for Distribution {
    type Err = DistError;

    fn from_str(spec: &str) -> Result<Self, DistError> {
        let lower = spec.trim().to_ascii_lowercase();
        let mut parts = lower.split(':');
        let name = parts.next().unwrap_or("");
        let args: Vec<&str> = parts.collect();
        let theta_arg = |args: &[&str]| -> Result<f64, DistError> {
            match args {
                [] => Ok(YCSB_ZIPFIAN_CONSTANT),
                [t] => parse_f64(spec, t),
                _ => Err(DistError::Unknown(spec.to_string())),
            }
        };
        let d = match name {
            "uniform" if args.is_empty() => Distribution::Uniform,
            "zipf" | "zipfian" => Distribution::Zipfian { theta: theta_arg(&args)? },
            "scrambled" | "scrambled_zipfian" => {
                Distribution::ScrambledZipfian { theta: theta_arg(&args)? }
            }
            "latest" => Distribution::Latest { theta: theta_arg(&args)? },
            "hotcold" | "hotspot" => match args.as_slice() {
                [ops, data] => Distribution::HotCold {
                    hot_ops_fraction: parse_f64(spec, ops)?,
                    hot_data_fraction: parse_f64(spec, data)?,
                },
                _ => return Err(DistError::Unknown(spec.to_string())),
            },
            _ => return Err(DistError::Unknown(spec.to_string())),
        };
        d.validate()
    }
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Distribution::Uniform => write!(f, "uniform"),
            Distribution::Zipfian { theta } => write!(f, "zipf:{theta}"),
            Distribution::ScrambledZipfian { theta } => write!(f, "scrambled:{theta}"),
            Distribution::Latest { theta } => write!(f, "latest:{theta}"),
            Distribution::HotCold { hot_ops_fraction, hot_data_fraction } => {
                write!(f, "hotcold:{hot_ops_fraction}:{hot_data_fraction}")
            }
        }
    }
}

impl TryFrom<String> for Distribution {
    type Error = DistError;
    fn try_from(s: String) -> Result<Self, DistError> {
        s.parse()
    }
}

impl From<Distribution> for String {
    fn from(d: Distribution) -> String {
        d.to_string()
    }
}

#[derive(Debug, Clone)]
enum ChooserKind {
    Uniform,
    Zipfian(Zipfian),
    Scrambled(ScrambledZipfian),
    Latest(SkewedLatest),
    HotCold(HotCold),
}

/// A stateful sampler over item ids [0, item_count). Cheap to clone: give each thread its own.
#[derive(Debug, Clone)]
pub struct Chooser {
    kind: ChooserKind,
    item_count: u64,
}

impl Chooser {
    pub fn item_count(&self) -> u64 {
        self.item_count
    }

    /// Grow the item space, e.g. after inserts. Zipfian extends zeta incrementally; latest
    /// moves its hot spot to the new items; hot-cold rescales its hot set. Scrambled zipfian
    /// keeps the modulus it was built with, as YCSB does (the hot set must not move), so build
    /// it over the final item count and reject ids not yet inserted. Shrinking is ignored.
    pub fn grow(&mut self, item_count: u64) {
        if item_count <= self.item_count {
            return;
        }
        self.item_count = item_count;
        match &mut self.kind {
            ChooserKind::Uniform | ChooserKind::Scrambled(_) | ChooserKind::Latest(_) => {}
            ChooserKind::Zipfian(z) => z.grow(item_count),
            ChooserKind::HotCold(h) => h.grow(item_count),
        }
    }

    /// Next item id in [0, item_count).
    #[inline]
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        let v = match &mut self.kind {
            ChooserKind::Uniform => rng.below(self.item_count),
            ChooserKind::Zipfian(z) => z.next(rng),
            ChooserKind::Scrambled(s) => s.next(rng),
            ChooserKind::Latest(l) => l.next(rng, self.item_count),
            ChooserKind::HotCold(h) => h.next(rng),
        };
        debug_assert!(v < self.item_count);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_display_round_trip() {
        let cases = [
            ("uniform", Distribution::Uniform),
            ("zipf:0.99", Distribution::Zipfian { theta: 0.99 }),
            ("zipf", Distribution::Zipfian { theta: 0.99 }),
            ("ZIPF:0.8", Distribution::Zipfian { theta: 0.8 }),
            ("scrambled:0.99", Distribution::YCSB_ZIPFIAN),
            ("latest", Distribution::YCSB_LATEST),
            (
                "hotcold:0.8:0.2",
                Distribution::HotCold { hot_ops_fraction: 0.8, hot_data_fraction: 0.2 },
            ),
        ];
        for (s, want) in cases {
            let got: Distribution = s.parse().unwrap();
            assert_eq!(got, want, "{s}");
            let again: Distribution = got.to_string().parse().unwrap();
            assert_eq!(again, want);
            let json = serde_json::to_string(&got).unwrap();
            let back: Distribution = serde_json::from_str(&json).unwrap();
            assert_eq!(back, want, "{json}");
        }
    }

    #[test]
    fn parse_rejects_bad_input() {
        for s in [
            "",
            "gauss",
            "zipf:1.0",
            "zipf:0",
            "zipf:x",
            "zipf:0.5:1",
            "hotcold:0.8",
            "hotcold:2:0.1",
            "uniform:3",
            "latest:nan",
        ] {
            assert!(s.parse::<Distribution>().is_err(), "{s:?} parsed");
        }
        assert!(Distribution::YCSB_LATEST.chooser(1).is_err());
    }

    #[test]
    fn every_chooser_stays_in_range_while_growing() {
        let seed = 1234;
        for spec in ["uniform", "zipf:0.9", "scrambled", "latest", "hotcold:0.9:0.1"] {
            let d: Distribution = spec.parse().unwrap();
            let mut rng = Rng::new(seed);
            let mut c = d.chooser(10).unwrap();
            for n in 10..200 {
                c.grow(n);
                for _ in 0..50 {
                    let v = c.next(&mut rng);
                    assert!(v < n, "seed {seed} {spec}: {v} >= {n}");
                }
            }
        }
    }
}

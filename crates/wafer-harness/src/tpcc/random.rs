//! TPC-C's random inputs (spec 2.1.6, 4.3.2): NURand with its run-time constants, last names
//! from syllables, random a-strings and n-strings, and the "ORIGINAL" marker in 10% of the
//! item and stock data fields.
use super::Cardinality;
use wafer_workloads::dist::Rng;

const SYLLABLES: [&str; 10] =
    ["BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"];

/// The customer last name for `n` in 0..=999 (spec 4.3.2.3).
pub fn last_name(n: u32) -> Vec<u8> {
    let n = n % 1000;
    let mut out = Vec::with_capacity(15);
    for digit in [n / 100, (n / 10) % 10, n % 10] {
        out.extend_from_slice(SYLLABLES[digit as usize].as_bytes());
    }
    out
}

/// The C constants of NURand (spec 2.1.6): one per A value. The run uses constants that
/// differ from the load's as spec 2.1.6.1 requires for C_LAST.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NuRandC {
    pub c_last: u32,
    pub c_id: u32,
    pub ol_i_id: u32,
}

impl NuRandC {
    pub fn for_load(seed: u64) -> NuRandC {
        let mut rng = Rng::new(seed ^ 0x7C7C);
        NuRandC {
            c_last: rng.below(256) as u32,
            c_id: rng.below(1024) as u32,
            ol_i_id: rng.below(8192) as u32,
        }
    }

    /// Run-time constants: C_LAST differs from the load's by 65..=119, not 96 or 112.
    pub fn for_run(load: NuRandC, seed: u64) -> NuRandC {
        let mut rng = Rng::new(seed ^ 0x5EED);
        let delta = loop {
            let d = rng.range_inclusive(65, 119) as u32;
            if d != 96 && d != 112 {
                break d;
            }
        };
        NuRandC {
            c_last: (load.c_last + delta) % 256,
            c_id: rng.below(1024) as u32,
            ol_i_id: rng.below(8192) as u32,
        }
    }
}

/// NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x. A is capped at
/// the next power of two minus one of the range, so reduced cardinalities keep the skew shape.
pub fn nurand(rng: &mut Rng, a: u32, c: u32, x: u32, y: u32) -> u32 {
    debug_assert!(x <= y);
    let span = y - x + 1;
    let a = a.min(span.next_power_of_two() - 1);
    let r1 = rng.range_inclusive(0, u64::from(a)) as u32;
    let r2 = rng.range_inclusive(u64::from(x), u64::from(y)) as u32;
    (((r1 | r2) + (c % (a + 1))) % span) + x
}

/// Random a-string (alphanumeric) of length lo..=hi.
pub fn astring(rng: &mut Rng, lo: usize, hi: usize) -> Vec<u8> {
    const ALNUM: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let len = rng.range_inclusive(lo as u64, hi as u64) as usize;
    (0..len).map(|_| ALNUM[rng.below(ALNUM.len() as u64) as usize]).collect()
}

/// Random n-string (digits) of length `len`.
pub fn nstring(rng: &mut Rng, len: usize) -> Vec<u8> {
    (0..len).map(|_| b'0' + rng.below(10) as u8).collect()
}

/// I_DATA / S_DATA: 26..=50 characters, 10% holding "ORIGINAL" at a random position.
pub fn data_field(rng: &mut Rng) -> Vec<u8> {
    let mut d = astring(rng, 26, 50);
    if rng.below(10) == 0 {
        let at = rng.below((d.len() - 8) as u64) as usize;
        d[at..at + 8].copy_from_slice(b"ORIGINAL");
    }
    d
}

/// The inputs whose ranges depend on the cardinalities.
#[derive(Debug, Clone, Copy)]
pub struct Draw {
    pub c: NuRandC,
    pub card: Cardinality,
}

impl Draw {
    pub fn customer_id(&self, rng: &mut Rng) -> u32 {
        nurand(rng, 1023, self.c.c_id, 1, self.card.customers_per_district)
    }
    pub fn item_id(&self, rng: &mut Rng) -> u32 {
        nurand(rng, 8191, self.c.ol_i_id, 1, self.card.items)
    }
    /// A last name some customer of every district has (loaded names cover
    /// 0..min(1000, customers)).
    pub fn last_name(&self, rng: &mut Rng) -> Vec<u8> {
        let top = self.card.customers_per_district.min(1000) - 1;
        last_name(nurand(rng, 255, self.c.c_last, 0, top))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_nurand_follow_the_spec() {
        assert_eq!(last_name(371), b"PRICALLYOUGHT".to_vec());
        assert_eq!(last_name(0), b"BARBARBAR".to_vec());
        let mut rng = Rng::new(1);
        let mut hits = vec![0u32; 3001];
        for _ in 0..100_000 {
            let v = nurand(&mut rng, 1023, 17, 1, 3000);
            assert!((1..=3000).contains(&v));
            hits[v as usize] += 1;
        }
        // Non-uniform: the most drawn id is drawn far more often than the mean (33).
        assert!(*hits.iter().max().unwrap() > 80, "{:?}", hits.iter().max());
        let load = NuRandC::for_load(3);
        let run = NuRandC::for_run(load, 3);
        let delta = (run.c_last + 256 - load.c_last) % 256;
        assert!((65..=119).contains(&delta) && delta != 96 && delta != 112, "{delta}");
        for _ in 0..100 {
            let d = data_field(&mut rng);
            assert!((26..=50).contains(&d.len()));
        }
    }
}

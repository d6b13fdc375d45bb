//! YCSB key names as engine keys: `"user"` followed by the decimal key number, zero-padded.
//!
//! YCSB `CoreWorkload.buildKeyName(keynum, zeropadding, orderedinserts)`: with
//! `insertorder=hashed` (the default, `orderedinserts=false`) the key number is first replaced
//! by `fnvhash64(keynum)`, so consecutive inserts land all over the key space.
//!
//! Engine encoding: the ASCII bytes of that name, no terminator. With the default padding of
//! [`KEY_DIGITS_MAX`] digits every key is exactly [`KEY_LEN_MAX_BYTES`] = 23 bytes, and byte
//! order equals numeric order of the (hashed) number, which keeps scans meaningful. YCSB's own
//! default padding is 1 (variable-length keys, e.g. `user6284781860667377211`); set
//! `zero_padding = 1` to get exactly YCSB's strings.

use crate::dist::fnvhash64;

/// Digits of the largest key number: fnvhash64 returns a non-negative Java long (< 2^63,
/// 19 digits); unhashed key numbers are far below that.
pub const KEY_DIGITS_MAX: usize = 19;
pub const KEY_PREFIX: &[u8; 4] = b"user";
pub const KEY_LEN_MAX_BYTES: usize = KEY_PREFIX.len() + KEY_DIGITS_MAX + 1;

/// One key, inline (no allocation per operation).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    len: u8,
    bytes: [u8; KEY_LEN_MAX_BYTES],
}

impl Key {
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Always ASCII by construction.
        write!(f, "Key({})", String::from_utf8_lossy(self.as_bytes()))
    }
}

/// How key numbers become key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KeyFormat {
    /// YCSB `insertorder`: true = hashed (default), false = ordered.
    pub hashed: bool,
    /// YCSB `zeropadding`: minimum digits, 1..=19.
    pub zero_padding: u8,
}

impl Default for KeyFormat {
    fn default() -> Self {
        KeyFormat { hashed: true, zero_padding: KEY_DIGITS_MAX as u8 }
    }
}

impl KeyFormat {
    /// YCSB's defaults exactly: hashed, no padding (variable-length names).
    pub const YCSB: KeyFormat = KeyFormat { hashed: true, zero_padding: 1 };

    /// Largest key length this format produces.
    pub fn max_len_bytes(&self) -> usize {
        KEY_PREFIX.len() + KEY_DIGITS_MAX.max(usize::from(self.zero_padding))
    }

    /// Key length used to size datasets: exact for fixed-width formats, the maximum otherwise.
    pub fn nominal_len_bytes(&self) -> usize {
        self.max_len_bytes()
    }

    /// YCSB buildKeyName.
    pub fn key(&self, keynum: u64) -> Key {
        assert!(
            (1..=KEY_DIGITS_MAX as u8).contains(&self.zero_padding),
            "zero_padding {} outside 1..={KEY_DIGITS_MAX}",
            self.zero_padding
        );
        let number = if self.hashed { fnvhash64(keynum) } else { keynum };
        // Decimal digits, least significant first, into a scratch buffer (u64 has <= 20).
        let mut digits = [b'0'; 20];
        let mut n = number;
        let mut count = 0;
        loop {
            digits[count] = b'0' + (n % 10) as u8;
            count += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let width = count.max(usize::from(self.zero_padding));
        let mut key = Key { len: 0, bytes: [0; KEY_LEN_MAX_BYTES] };
        key.bytes[..KEY_PREFIX.len()].copy_from_slice(KEY_PREFIX);
        let body = &mut key.bytes[KEY_PREFIX.len()..KEY_PREFIX.len() + width];
        for (i, b) in body.iter_mut().enumerate() {
            let from_right = width - 1 - i;
            *b = if from_right < count { digits[from_right] } else { b'0' };
        }
        key.len = (KEY_PREFIX.len() + width) as u8;
        key
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ycsb_names() {
        // fnvhash64(0) = 6284781860667377211 (see dist::scrambled tests).
        assert_eq!(KeyFormat::YCSB.key(0).as_bytes(), b"user6284781860667377211");
        assert_eq!(KeyFormat::YCSB.key(42).as_bytes(), b"user55488592825689361");
        let ordered = KeyFormat { hashed: false, zero_padding: 1 };
        assert_eq!(ordered.key(0).as_bytes(), b"user0");
        assert_eq!(ordered.key(1234).as_bytes(), b"user1234");
    }

    #[test]
    fn default_is_fixed_width_and_orders_numerically() {
        let f = KeyFormat::default();
        assert_eq!(f.key(42).as_bytes(), b"user0055488592825689361");
        let mut pairs: Vec<(u64, Key)> = (0..1000).map(|k| (fnvhash64(k), f.key(k))).collect();
        for (_, k) in &pairs {
            assert_eq!(k.as_bytes().len(), 23);
        }
        pairs.sort_by_key(|p| p.0);
        assert!(pairs.windows(2).all(|w| w[0].1.as_bytes() < w[1].1.as_bytes()));
        assert_eq!(f.max_len_bytes(), 23);
    }
}

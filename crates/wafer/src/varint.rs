//! Unsigned LEB128 integers, the one variable-length integer of the on-disk formats (commit
//! records' fields and extent changes, the map journal's batched records): 7 bits a byte, low
//! bits first, the high bit set on every byte but the last; at most 10 bytes, and only the
//! shortest form of a value decodes (so every decoded record re-encodes to its own bytes).

/// Bytes a `u64` takes at most.
pub(crate) const VARINT_BYTES_MAX: usize = 10;

/// Appends `v` to `out`.
pub(crate) fn put(out: &mut Vec<u8>, mut v: u64) {
    // Bounded: a u64 takes at most 10 bytes.
    for _ in 0..VARINT_BYTES_MAX {
        if v < 0x80 {
            out.push(v as u8);
            return;
        }
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
}

/// Reads a value from the front of `bytes`, advancing it. Err for a value that ends early,
/// runs past 64 bits, or is not in its shortest form. Never panics.
pub(crate) fn take(bytes: &mut &[u8]) -> Result<u64, &'static str> {
    let mut v = 0u64;
    for i in 0..VARINT_BYTES_MAX {
        let Some((&b, rest)) = bytes.split_first() else { return Err("varint ends early") };
        *bytes = rest;
        if i == VARINT_BYTES_MAX - 1 && b > 1 {
            return Err("varint beyond 64 bits");
        }
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            if b == 0 && i > 0 {
                return Err("overlong varint");
            }
            return Ok(v);
        }
    }
    Err("varint longer than 10 bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_in_their_shortest_form_and_damage_is_an_error() {
        for v in [0, 1, 127, 128, 300, 1 << 35, u64::MAX - 1, u64::MAX] {
            let mut out = Vec::new();
            put(&mut out, v);
            let want = (64 - v.leading_zeros() as usize).div_ceil(7).max(1);
            assert_eq!(out.len(), want, "{v}");
            let mut b = &out[..];
            assert_eq!(take(&mut b), Ok(v));
            assert!(b.is_empty());
            let mut cut = &out[..out.len() - 1];
            assert!(take(&mut cut).is_err(), "{v} cut short");
        }
        assert!(take(&mut &[0x80, 0x00][..]).is_err(), "overlong zero");
        assert!(take(&mut &[0xff; 10][..]).is_err(), "past 64 bits");
        assert!(
            take(&mut &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02][..]).is_err()
        );
    }
}

//! The snapshot byte format: every key-value pair of the state machine, in key order, checked
//! end to end before anything is installed.
//!
//! ```text
//! "WFRSNAP1"                                   8 bytes
//! per pair: key_len u32 LE, key, value_len u64 LE, value
//! pair count u64 LE, CRC-32C of every byte before it u32 LE
//! ```
use crate::error::{Error, Result};

const MAGIC: &[u8; 8] = b"WFRSNAP1";
/// The pair count and the checksum.
const TRAILER_BYTES: usize = 12;

#[derive(Debug)]
pub(crate) struct Writer {
    buf: Vec<u8>,
    count: u64,
}

impl Writer {
    pub(crate) fn new() -> Writer {
        Writer { buf: MAGIC.to_vec(), count: 0 }
    }

    pub(crate) fn push(&mut self, key: &[u8], value: &[u8]) {
        // Keys are at most 1 KiB (the engine's limit), so u32 always holds their length.
        self.buf.extend_from_slice(&(key.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(key);
        self.buf.extend_from_slice(&(value.len() as u64).to_le_bytes());
        self.buf.extend_from_slice(value);
        self.count += 1;
    }

    pub(crate) fn finish(mut self) -> Vec<u8> {
        self.buf.extend_from_slice(&self.count.to_le_bytes());
        let crc = crc32c::crc32c(&self.buf);
        self.buf.extend_from_slice(&crc.to_le_bytes());
        self.buf
    }
}

fn invalid(reason: impl Into<String>) -> Error {
    Error::SnapshotFormat(reason.into())
}

/// Takes `n` bytes from the front of `rest`.
fn take<'a>(rest: &mut &'a [u8], n: usize, what: &str) -> Result<&'a [u8]> {
    if rest.len() < n {
        return Err(invalid(format!("{what} runs past the end of the pairs")));
    }
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    Ok(head)
}

fn take_len(rest: &mut &[u8], bytes: usize, what: &str) -> Result<usize> {
    let raw = take(rest, bytes, what)?;
    let mut le = [0u8; 8];
    le[..bytes].copy_from_slice(raw);
    usize::try_from(u64::from_le_bytes(le)).map_err(|_| invalid(format!("{what} too large")))
}

/// The pairs of a snapshot, borrowed from `data`; an error when the magic, the checksum, a
/// length or the count is wrong.
pub(crate) fn parse(data: &[u8]) -> Result<Vec<(&[u8], &[u8])>> {
    if data.len() < MAGIC.len() + TRAILER_BYTES || &data[..MAGIC.len()] != MAGIC {
        return Err(invalid("no snapshot header"));
    }
    let (body, crc) = data.split_at(data.len() - 4);
    let mut crc_le = [0u8; 4];
    crc_le.copy_from_slice(crc);
    if crc32c::crc32c(body) != u32::from_le_bytes(crc_le) {
        return Err(invalid("checksum mismatch"));
    }
    let (pairs, count) = body.split_at(body.len() - 8);
    let mut count_le = [0u8; 8];
    count_le.copy_from_slice(count);
    let count = u64::from_le_bytes(count_le);
    let mut rest = &pairs[MAGIC.len()..];
    let mut out = Vec::new();
    while !rest.is_empty() {
        let key_len = take_len(&mut rest, 4, "key length")?;
        let key = take(&mut rest, key_len, "key")?;
        let value_len = take_len(&mut rest, 8, "value length")?;
        let value = take(&mut rest, value_len, "value")?;
        out.push((key, value));
    }
    if out.len() as u64 != count {
        return Err(invalid(format!("{} pairs where the trailer says {count}", out.len())));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_round_trip_and_damage_is_refused() -> Result<()> {
        let mut w = Writer::new();
        w.push(b"a", b"");
        w.push(b"bb", &[7u8; 5000]);
        let data = w.finish();
        let pairs = parse(&data)?;
        assert_eq!(pairs, vec![(&b"a"[..], &b""[..]), (&b"bb"[..], &[7u8; 5000][..])]);
        for cut in [0, 3, 12, data.len() - 1] {
            assert!(parse(&data[..cut]).is_err(), "cut at {cut}");
        }
        let mut flipped = data.clone();
        flipped[10] ^= 1;
        assert!(parse(&flipped).is_err());
        assert_eq!(parse(&Writer::new().finish())?, Vec::new());
        Ok(())
    }
}

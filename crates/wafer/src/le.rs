//! Little-endian fields at byte offsets: the one encoding every on-disk format here uses
//! (pages, the WAL's blocks, map snapshots, free-page sections, dump streams). The lowest
//! layer: it names nothing else in the crate.
//!
//! The plain readers and writers index the slice and so panic past its end: callers use them
//! on buffers whose length they checked (a page, a block). Bytes of unchecked length go
//! through [`try_u64`].

pub fn get_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
pub fn get_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
pub fn get_u64(b: &[u8], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(v)
}
pub fn put_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
pub fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
pub fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
/// The u64 at `at`, or None when `b` ends before it.
pub fn try_u64(b: &[u8], at: usize) -> Option<u64> {
    let v: [u8; 8] = b.get(at..at.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_little_endian() {
        let mut b = [0u8; 16];
        put_u16(&mut b, 0, 0x0102);
        put_u32(&mut b, 2, 0x0304_0506);
        put_u64(&mut b, 6, 0x0708_090a_0b0c_0d0e);
        assert_eq!(b[..2], [0x02, 0x01], "least significant byte first");
        assert_eq!(get_u16(&b, 0), 0x0102);
        assert_eq!(get_u32(&b, 2), 0x0304_0506);
        assert_eq!(get_u64(&b, 6), 0x0708_090a_0b0c_0d0e);
        assert_eq!(try_u64(&b, 6), Some(0x0708_090a_0b0c_0d0e));
        assert_eq!(try_u64(&b, 9), None);
        assert_eq!(try_u64(&b, usize::MAX), None);
    }
}

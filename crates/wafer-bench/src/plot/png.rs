//! A minimal PNG encoder: 8-bit RGB, no filtering, zlib stream of stored deflate blocks.
//!
//! Why stored blocks: charts are small (under a megabyte raw), so compression buys little, and a
//! stored stream is trivially correct and decodable by every viewer. CRC-32 (PNG chunks) and
//! Adler-32 (zlib trailer) are written here so the crate needs no image dependency.

/// PNG file signature (PNG spec 5.2).
pub const SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];

/// Largest payload of one stored deflate block (LEN is a 16-bit field).
const STORED_BLOCK_MAX_BYTES: usize = 65_535;

/// Encodes `rgb` (row-major, 3 bytes per pixel, `width * height * 3` bytes) as a PNG file.
pub fn encode_rgb(width: u32, height: u32, rgb: &[u8]) -> Vec<u8> {
    assert!(width > 0 && height > 0, "empty image");
    let row_bytes = width as usize * 3;
    assert_eq!(rgb.len(), row_bytes * height as usize, "pixel buffer does not match the size");

    let mut out = Vec::with_capacity(rgb.len() + rgb.len() / 64 + 128);
    out.extend_from_slice(&SIGNATURE);

    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    // Bit depth 8, colour type 2 (truecolour), deflate, adaptive filtering method 0, no interlace.
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    write_chunk(&mut out, b"IHDR", &ihdr);

    // Every scanline starts with its filter type byte; 0 = None.
    let mut raw = Vec::with_capacity(rgb.len() + height as usize);
    for row in rgb.chunks_exact(row_bytes) {
        raw.push(0);
        raw.extend_from_slice(row);
    }
    write_chunk(&mut out, b"IDAT", &zlib_stored(&raw));
    write_chunk(&mut out, b"IEND", &[]);
    out
}

fn write_chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
    assert!((len as usize) == data.len(), "PNG chunk too large");
    out.extend_from_slice(&len.to_be_bytes());
    let crc_start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[crc_start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// A zlib stream (RFC 1950) holding `data` in stored (uncompressed) deflate blocks (RFC 1951 3.2.4).
pub fn zlib_stored(data: &[u8]) -> Vec<u8> {
    let blocks = data.len().div_ceil(STORED_BLOCK_MAX_BYTES).max(1);
    let mut out = Vec::with_capacity(data.len() + blocks * 5 + 6);
    // CMF: deflate, 32 KiB window. FLG: no dictionary, check bits make CMF*256+FLG divisible by 31.
    const CMF: u8 = 0x78;
    const FLG: u8 = 0x01;
    const _: () = assert!((CMF as u32 * 256 + FLG as u32).is_multiple_of(31));
    out.extend_from_slice(&[CMF, FLG]);
    if data.is_empty() {
        out.extend_from_slice(&[0x01, 0x00, 0x00, 0xff, 0xff]);
    }
    let mut chunks = data.chunks(STORED_BLOCK_MAX_BYTES).peekable();
    while let Some(chunk) = chunks.next() {
        let final_block = chunks.peek().is_none();
        // BFINAL in bit 0, BTYPE = 00 (stored) in bits 1-2; the rest of the byte is padding.
        out.push(u8::from(final_block));
        let len = chunk.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    out.extend_from_slice(&adler32(data).to_be_bytes());
    out
}

/// CRC-32 (ISO-HDLC, reflected polynomial 0xEDB88320) as PNG chunks use it.
pub fn crc32(data: &[u8]) -> u32 {
    const TABLE: [u32; 256] = crc32_table();
    let mut crc = 0xffff_ffffu32;
    for &byte in data {
        crc = TABLE[((crc ^ u32::from(byte)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc ^ 0xffff_ffff
}

const fn crc32_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut n = 0;
    while n < 256 {
        let mut c = n as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 == 1 { 0xedb8_8320 ^ (c >> 1) } else { c >> 1 };
            k += 1;
        }
        table[n] = c;
        n += 1;
    }
    table
}

/// Adler-32 (RFC 1950 8.2), the zlib trailer checksum.
pub fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65_521;
    // 5552 is the largest run whose sums cannot overflow u32 before the reduction.
    const RUN: usize = 5552;
    let (mut a, mut b) = (1u32, 0u32);
    for run in data.chunks(RUN) {
        for &byte in run {
            a += u32::from(byte);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn checksums_match_known_values() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b"IEND"), 0xae42_6082);
        assert_eq!(adler32(b"Wikipedia"), 0x11e6_0398);
        assert_eq!(adler32(&[]), 1);
    }

    /// Splits a PNG into (type, data) chunks, checking lengths and CRCs on the way.
    fn chunks(png: &[u8]) -> Vec<([u8; 4], Vec<u8>)> {
        assert_eq!(&png[..8], &SIGNATURE);
        let mut at = 8;
        let mut out = Vec::new();
        while at < png.len() {
            let len = u32::from_be_bytes(png[at..at + 4].try_into().unwrap()) as usize;
            let kind: [u8; 4] = png[at + 4..at + 8].try_into().unwrap();
            let data = png[at + 8..at + 8 + len].to_vec();
            let crc = u32::from_be_bytes(png[at + 8 + len..at + 12 + len].try_into().unwrap());
            assert_eq!(crc, crc32(&png[at + 4..at + 8 + len]), "bad CRC in {kind:?}");
            out.push((kind, data));
            at += 12 + len;
        }
        assert_eq!(at, png.len());
        out
    }

    /// Inflates a zlib stream made only of stored blocks, checking header and Adler-32.
    fn inflate_stored(z: &[u8]) -> Vec<u8> {
        assert_eq!((u32::from(z[0]) * 256 + u32::from(z[1])) % 31, 0);
        assert_eq!(z[0] & 0x0f, 8, "deflate method");
        let mut at = 2;
        let mut out = Vec::new();
        loop {
            let header = z[at];
            assert_eq!((header >> 1) & 3, 0, "only stored blocks expected");
            let len = u16::from_le_bytes([z[at + 1], z[at + 2]]);
            let nlen = u16::from_le_bytes([z[at + 3], z[at + 4]]);
            assert_eq!(len, !nlen);
            out.extend_from_slice(&z[at + 5..at + 5 + len as usize]);
            at += 5 + len as usize;
            if header & 1 == 1 {
                break;
            }
        }
        let adler = u32::from_be_bytes(z[at..at + 4].try_into().unwrap());
        assert_eq!(adler, adler32(&out));
        assert_eq!(at + 4, z.len());
        out
    }

    #[test]
    fn png_round_trips_through_a_stored_block_decoder() {
        // 150 x 200 RGB is 90 000 bytes of pixels: more than one stored block.
        let (width, height) = (150u32, 200u32);
        let mut rgb = Vec::new();
        for y in 0..height {
            for x in 0..width {
                rgb.extend_from_slice(&[(x % 256) as u8, (y % 256) as u8, ((x * y) % 251) as u8]);
            }
        }
        let png = encode_rgb(width, height, &rgb);
        let parts = chunks(&png);
        let kinds: Vec<&[u8; 4]> = parts.iter().map(|(k, _)| k).collect();
        assert_eq!(kinds, vec![b"IHDR", b"IDAT", b"IEND"]);
        let ihdr = &parts[0].1;
        assert_eq!(u32::from_be_bytes(ihdr[0..4].try_into().unwrap()), width);
        assert_eq!(u32::from_be_bytes(ihdr[4..8].try_into().unwrap()), height);
        assert_eq!(&ihdr[8..], &[8, 2, 0, 0, 0]);

        let raw = inflate_stored(&parts[1].1);
        let row_bytes = width as usize * 3 + 1;
        assert_eq!(raw.len(), row_bytes * height as usize);
        for (y, row) in raw.chunks_exact(row_bytes).enumerate() {
            assert_eq!(row[0], 0, "filter type None");
            let start = y * (row_bytes - 1);
            assert_eq!(&row[1..], &rgb[start..start + row_bytes - 1]);
        }
    }

    #[test]
    fn empty_and_exact_block_sized_streams_decode() {
        assert_eq!(inflate_stored(&zlib_stored(&[])), Vec::<u8>::new());
        let exact = vec![7u8; STORED_BLOCK_MAX_BYTES];
        assert_eq!(inflate_stored(&zlib_stored(&exact)), exact);
    }
}

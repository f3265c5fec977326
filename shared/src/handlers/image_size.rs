//! An image's format and pixel dimensions from its header alone (PNG's IHDR chunk, JPEG's
//! start-of-frame segment), so a screenshot's size is known without decoding it.

use crate::job::payloads::ImageFormat;

/// What the header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageInfo {
    pub format: ImageFormat,
    pub width: u32,
    pub height: u32,
}

const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];

/// The format and dimensions of a PNG or JPEG; `None` for anything else or a header cut short.
pub fn image_info(bytes: &[u8]) -> Option<ImageInfo> {
    if bytes.starts_with(&PNG_SIGNATURE) {
        png(bytes)
    } else if bytes.starts_with(&[0xff, 0xd8]) {
        jpeg(bytes)
    } else {
        None
    }
}

fn be16(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at + 2)?;
    Some(u32::from(u16::from_be_bytes([b[0], b[1]])))
}

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at + 4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// The first chunk must be IHDR: length (4), "IHDR", width (4), height (4), all big-endian.
fn png(bytes: &[u8]) -> Option<ImageInfo> {
    if bytes.get(12..16)? != b"IHDR" {
        return None;
    }
    let (width, height) = (be32(bytes, 16)?, be32(bytes, 20)?);
    (width > 0 && height > 0).then_some(ImageInfo {
        format: ImageFormat::Png,
        width,
        height,
    })
}

/// Walks the segments after SOI to the first start-of-frame (SOF0-SOF15 but DHT, JPG and
/// DAC, which share the range): length (2), precision (1), height (2), width (2).
fn jpeg(bytes: &[u8]) -> Option<ImageInfo> {
    let mut at = 2;
    loop {
        if *bytes.get(at)? != 0xff {
            return None;
        }
        // Any number of 0xff fill bytes may precede a marker.
        while *bytes.get(at + 1)? == 0xff {
            at += 1;
        }
        let marker = *bytes.get(at + 1)?;
        at += 2;
        match marker {
            // Standalone markers carry no length.
            0x01 | 0xd0..=0xd7 => continue,
            // Start of scan or end of image before any frame header: not a usable JPEG.
            0xd9 | 0xda => return None,
            0xc0..=0xcf if !matches!(marker, 0xc4 | 0xc8 | 0xcc) => {
                let (height, width) = (be16(bytes, at + 3)?, be16(bytes, at + 5)?);
                return (width > 0 && height > 0).then_some(ImageInfo {
                    format: ImageFormat::Jpeg,
                    width,
                    height,
                });
            }
            _ => at += usize::try_from(be16(bytes, at)?).ok()?,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn png_header(width: u32, height: u32) -> Vec<u8> {
        let mut b = PNG_SIGNATURE.to_vec();
        b.extend(13u32.to_be_bytes());
        b.extend(b"IHDR");
        b.extend(width.to_be_bytes());
        b.extend(height.to_be_bytes());
        b.extend([8, 6, 0, 0, 0]);
        b
    }

    /// SOI, an APP0 (JFIF) segment, fill bytes, a DQT-like segment, then the given SOF.
    fn jpeg_header(sof: u8, width: u16, height: u16) -> Vec<u8> {
        let mut b = vec![0xff, 0xd8];
        b.extend([0xff, 0xe0, 0x00, 0x10]);
        b.extend(b"JFIF\0");
        b.extend([1, 1, 0, 0, 1, 0, 1, 0, 0]);
        b.extend([0xff, 0xff, 0xdb, 0x00, 0x04, 0xaa, 0xbb]);
        b.extend([0xff, sof, 0x00, 0x11, 8]);
        b.extend(height.to_be_bytes());
        b.extend(width.to_be_bytes());
        b.extend([3, 1, 0x22, 0]);
        b
    }

    #[test]
    fn png_dimensions() {
        let info = image_info(&png_header(1280, 800)).unwrap();
        assert_eq!(
            info,
            ImageInfo {
                format: ImageFormat::Png,
                width: 1280,
                height: 800
            }
        );
        assert_eq!(image_info(&png_header(0, 800)), None);
        let mut other_chunk = png_header(1, 1);
        other_chunk[12..16].copy_from_slice(b"IDAT");
        assert_eq!(image_info(&other_chunk), None);
    }

    #[test]
    fn jpeg_dimensions_baseline_and_progressive() {
        for sof in [0xc0, 0xc1, 0xc2] {
            let info = image_info(&jpeg_header(sof, 640, 4000)).unwrap();
            assert_eq!(
                (info.format, info.width, info.height),
                (ImageFormat::Jpeg, 640, 4000)
            );
        }
        // A DHT (0xc4) in the SOF range is skipped like any other segment.
        let mut with_dht = vec![0xff, 0xd8, 0xff, 0xc4, 0x00, 0x03, 0x00];
        with_dht.extend(&jpeg_header(0xc0, 10, 20)[2..]);
        assert_eq!(
            image_info(&with_dht).map(|i| (i.width, i.height)),
            Some((10, 20))
        );
    }

    #[test]
    fn not_an_image_or_cut_short() {
        assert_eq!(image_info(b""), None);
        assert_eq!(image_info(b"GIF89a\x01\x00\x01\x00"), None);
        assert_eq!(image_info(&png_header(5, 5)[..20]), None);
        let jpeg = jpeg_header(0xc0, 5, 5);
        for cut in 0..jpeg.len() - 4 {
            assert_eq!(image_info(&jpeg[..cut]), None, "cut at {cut}");
        }
        // Scan data before any frame header.
        assert_eq!(image_info(&[0xff, 0xd8, 0xff, 0xda, 0, 2]), None);
    }

    proptest! {
        #[test]
        fn never_panics(tail in proptest::collection::vec(any::<u8>(), 0..64)) {
            for head in [&[0xff, 0xd8][..], &PNG_SIGNATURE[..], &[][..]] {
                let mut bytes = head.to_vec();
                bytes.extend(&tail);
                let _ = image_info(&bytes);
            }
        }
    }
}

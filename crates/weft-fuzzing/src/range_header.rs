//! `Range` headers of `GET /data/...`: the first 8 bytes are the object's size (little
//! endian, shorter inputs padded with zeros), the rest the header value. A range that
//! parses is never empty and lies within the object.

use weft_types::ErrorCode;

pub fn run(data: &[u8]) {
    let (head, value) = data.split_at(data.len().min(8));
    let mut size = [0u8; 8];
    size[..head.len()].copy_from_slice(head);
    // Small sizes as often as huge ones: the top bit picks which.
    let size = u64::from_le_bytes(size);
    let size = if size >> 63 == 0 { size % 1024 } else { size };
    match weft_api::parsers::range(value, size) {
        Ok(r) => assert!(r.start < r.end && r.end <= size, "{r:?} of {size}"),
        Err(e) => assert_eq!(e.code, ErrorCode::RangeNotSatisfiable),
    }
}

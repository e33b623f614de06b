//! Bundle bodies of `POST /bundles`: the first byte says how the rest arrived (one frame,
//! or frames of 1-255 bytes), the rest is the body. A bundle that parses has one piece of
//! bytes per file, of its size, and the pieces are exactly what followed the header.

use bytes::Bytes;
use weft_types::ErrorCode;

pub fn run(data: &[u8]) {
    let Some((&cut, body)) = data.split_first() else {
        return;
    };
    let frames: Vec<Bytes> = if cut == 0 {
        vec![Bytes::copy_from_slice(body)]
    } else {
        body.chunks(cut as usize).map(Bytes::copy_from_slice).collect()
    };
    match weft_api::parsers::bundle(frames) {
        Ok((header, files)) => {
            assert_eq!(header.files.len(), files.len());
            let split = body.iter().position(|b| *b == b'\n').expect("a header line");
            let mut at = split + 1;
            for (f, bytes) in header.files.iter().zip(&files) {
                assert_eq!(f.size, bytes.len() as u64);
                assert_eq!(&body[at..at + bytes.len()], &bytes[..]);
                at += bytes.len();
            }
            assert_eq!(at, body.len(), "every byte after the header belongs to a file");
        }
        Err(e) => assert_eq!(e.code, ErrorCode::InvalidArgument),
    }
}

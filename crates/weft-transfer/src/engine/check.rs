//! What the engine checks of the bytes it moves: that it read as many as it expected, that
//! they hash to the checksum the source recorded when the transfer was planned, and with
//! `--verify strong` that the destination re-reads what was written. These checks decide
//! between a damaged source (final) and damage on the way (retried): see [`Failed`].

use super::retry::Failed;
use crate::side::Side;
use bytes::Bytes;
use weft_types::{Checksum, Endpoint, Error, ErrorCode, TransferFile};

/// A whole (small) file read from `at` with the checksum to send along, its size checked.
/// With `trust` (the destination verifies writes; first attempts only) a checksum the
/// source knows is sent as it is; otherwise the bytes are hashed here and compared with it,
/// so a retry after a mismatch tells a damaged source from damage on the way.
pub(super) fn hashed(
    at: &Endpoint,
    f: &TransferFile,
    data: Bytes,
    trust: bool,
) -> Result<(Bytes, Checksum), Failed> {
    check_len(at, f.size, data.len() as u64)?;
    if let (true, Some(known)) = (trust, &f.checksum) {
        return Ok((data, known.clone()));
    }
    let sum = Checksum::blake3(&blake3::hash(&data));
    check_source(at, f.checksum.as_ref(), &sum)?;
    Ok((data, sum))
}

pub(super) fn check_len(at: &Endpoint, want: u64, got: u64) -> Result<(), Error> {
    if want != got {
        // The source changed under the transfer (or the read was cut): try again.
        return Err(Error::new(
            ErrorCode::IncompleteBody,
            format!("read {got} bytes of {at} where {want} were expected"),
        ));
    }
    Ok(())
}

/// A source that does not read as its recorded checksum changed since the transfer was
/// planned or is damaged: sending it again cannot help.
pub(super) fn check_source(at: &Endpoint, expected: Option<&Checksum>, got: &Checksum) -> Result<(), Failed> {
    match expected {
        Some(e) if e != got => Err(Failed {
            error: Error::new(
                ErrorCode::ChecksumMismatch,
                format!(
                    "{at} reads as {got}, but its checksum was {e} when the transfer was planned: \
                     it changed since, or its copy is damaged (`weft checksum --verify` re-reads it)"
                ),
            ),
            retry: false,
        }),
        _ => Ok(()),
    }
}

/// `--verify strong`: the destination re-reads what it holds.
pub(super) async fn verify_strong(dst: &dyn Side, at: &Endpoint, sum: &Checksum) -> Result<(), Error> {
    let there = dst.verify(at).await?;
    if there != *sum {
        return Err(Error::new(
            ErrorCode::ChecksumMismatch,
            format!("{at} re-read hashes to {there}, {sum} was written"),
        ));
    }
    Ok(())
}

//! Reading a header with ranged reads: the first [`READ_MIN`] bytes, then what the reader
//! asks for, until it answers or the budget is spent. An S3 resource serves each read as
//! one ranged GET; a 300 MB movie costs a few kilobytes.

use crate::Zone;
use std::sync::Arc;
use weft_catalog::Node;
use weft_extract::{Known, Problem, READ_MIN};
use weft_types::{Error, ErrorCode};

/// Reads after the first, at most, before later optional parts are left out.
const ROUNDS: u32 = 16;
/// Bytes read for one header, at most.
const BUDGET: u64 = 16 << 20;

/// The first bytes of `node` (up to [`READ_MIN`]), as a [`Known`].
pub(crate) async fn head(zone: &Arc<Zone>, node: &Node) -> Result<Known, Error> {
    let len = node.size as u64;
    let mut known = Known::new(len);
    if len > 0 {
        known.add(0, range(zone, node, 0, READ_MIN.min(len)).await?);
    }
    Ok(known)
}

/// Runs `read` over `known`, reading what it needs, until it answers.
pub(crate) async fn until_read<T>(
    zone: &Arc<Zone>,
    node: &Node,
    mut known: Known,
    read: impl Fn(&Known) -> Result<T, Problem>,
) -> Result<T, Error> {
    let mut spent = READ_MIN;
    let mut rounds = 0;
    loop {
        match read(&known) {
            Ok(v) => return Ok(v),
            Err(Problem::Bad(why)) => return Err(bad(node, why)),
            Err(Problem::Need { at, len }) => {
                if rounds == ROUNDS || spent + len > BUDGET {
                    // Once more without asking: what is optional (a TIFF's page count) is
                    // left out; what is not makes the header unreadable here.
                    known.stop_asking();
                    return match read(&known) {
                        Ok(v) => Ok(v),
                        Err(Problem::Bad(why)) => Err(bad(node, why)),
                        Err(Problem::Need { .. }) => Err(bad(
                            node,
                            format!(
                                "the header is spread over more than {ROUNDS} reads or {} MiB",
                                BUDGET >> 20
                            ),
                        )),
                    };
                }
                let len = len.max(READ_MIN).min(node.size as u64 - at);
                known.add(at, range(zone, node, at, len).await?);
                spent += len;
                rounds += 1;
            }
        }
    }
}

async fn range(zone: &Arc<Zone>, node: &Node, at: u64, len: u64) -> Result<Vec<u8>, Error> {
    let stream = zone
        .data()
        .read_good_replica(node.id, &node.path, at..at + len)
        .await?;
    Ok(weft_storage::collect(stream).await?.to_vec())
}

fn bad(node: &Node, why: String) -> Error {
    Error::new(ErrorCode::ExtractFailed, format!("{}: {why}", node.path))
}

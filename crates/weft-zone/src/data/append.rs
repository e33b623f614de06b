//! Appending to a data object: a file that only grows (an instrument's log, a movie
//! written frame by frame, a job's output) sends only its new bytes, as iRODS' PUT_APPEND
//! does. The object's content becomes its old bytes followed by the new ones, written as
//! a new replica: the old bytes are copied by the zone from a good replica (they do not
//! cross the network again), the whole is hashed and must match the checksum the client
//! computed of its whole file, and it is registered in place of the old content as an
//! overwrite is (copies elsewhere become stale). A failure at any point leaves the object
//! as it was.

use super::objects::{check_expected, copy_hashing, Committed, PutOutcome, OWN_SYNC_THRESHOLD};
use super::Data;
use crate::access::quotas::Charge;
use crate::Caller;
use bytes::Bytes;
use futures::{Stream, StreamExt};
use weft_storage::Store;
use weft_types::{Checksum, Error, ErrorCode, LogicalPath, Permission};

impl Data<'_> {
    /// Appends `size` bytes (`body`) to the data object `path`, which must hold `from`
    /// bytes now; `expected` is the checksum of the whole new content. Errors: `conflict`
    /// (the object is not `from` bytes long: it changed, or the client's idea of it is
    /// old), `checksum_mismatch` (the old bytes and the new do not make the client's file),
    /// and those of a put.
    pub async fn append<S>(
        self,
        caller: &Caller,
        path: &LogicalPath,
        (from, size): (u64, u64),
        expected: &Checksum,
        body: S,
    ) -> Result<PutOutcome, Error>
    where
        S: Stream<Item = Result<Bytes, Error>> + Send,
    {
        let node = self
            .zone
            .namespace()
            .object_as(
                caller,
                path,
                Permission::Write,
                "append to one of its data objects",
            )
            .await?;
        if node.size as u64 != from {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!(
                    "{path} holds {} bytes, not {from}: it changed since; send the file whole (`weft put --force`, `weft watch --sync`)",
                    node.size
                ),
            ));
        }
        let total = from
            .checked_add(size)
            .ok_or_else(|| Error::invalid("size overflows"))?;
        let target = self.prepare_put(caller, path, None, true).await?;
        let charge = Charge::objects(target.replaces, &target.resource.name, total, 1);
        self.zone.access().check_quota(caller, charge).await?;
        let old = self.read_good_replica(node.id, path, 0..from).await?;
        let key = Store::new_key();
        let mut writer = target.store.writer(&key).await?;
        let whole = old.chain(body);
        let checked = copy_hashing(whole, total, Some(&mut writer))
            .await
            .and_then(|sum| check_expected(path, sum, Some(expected)));
        let checksum = match checked {
            Ok(sum) => sum,
            Err(e) => {
                writer.abort().await;
                return Err(e);
            }
        };
        let durable = total >= OWN_SYNC_THRESHOLD;
        writer.commit(durable).await?;
        let committed = Committed {
            path,
            size: total,
            checksum,
            target: &target,
            key,
            durable,
            s3: None,
        };
        self.register(caller, committed, true).await
    }
}

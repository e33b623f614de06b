//! Extended attributes: `user.NAME` is the metadata attribute NAME of the node (an
//! extended attribute has one value: setting one replaces the attribute's values); the
//! zone's own facts under `user.weft.` are read-only.

use super::Fs;
use crate::errno::{Errno, FsResult};
use weft_types::wire::{AvuWire, MetaRequest};
use weft_types::LogicalPath;

/// `xattr` names of the zone's own facts, read-only.
const XATTR_CHECKSUM: &str = "user.weft.checksum";
const XATTR_REPLICAS: &str = "user.weft.replicas";
/// The files at or below a node closed here and not uploaded yet (write-back).
const XATTR_PENDING: &str = "user.weft.pending";

impl Fs {
    pub async fn getxattr(&self, ino: u64, name: &str) -> FsResult<Vec<u8>> {
        let path = self.path(ino)?;
        match name {
            XATTR_CHECKSUM => {
                let stat = self.client.stat(&path).await.map_err(|e| Errno::of_client(&e))?;
                stat.checksum.map(String::into_bytes).ok_or(Errno::ENODATA)
            }
            XATTR_PENDING => {
                let pending: Vec<String> = self
                    .pending()
                    .into_iter()
                    .filter(|p| p.starts_with(&path))
                    .map(|p| p.to_string())
                    .collect();
                Ok(pending.join("\n").into_bytes())
            }
            XATTR_REPLICAS => {
                let stat = self.client.stat(&path).await.map_err(|e| Errno::of_client(&e))?;
                let lines: Vec<String> = stat
                    .replicas
                    .iter()
                    .map(|r| format!("{}/{} {}", r.zone, r.resource, r.state))
                    .collect();
                Ok(lines.join("\n").into_bytes())
            }
            _ => {
                let values = self.values(&path, avu_name(name)?).await?;
                Ok(values.join("\n").into_bytes())
            }
        }
    }

    async fn avus(&self, path: &LogicalPath) -> FsResult<Vec<AvuWire>> {
        self.client
            .meta_list(path)
            .await
            .map_err(|e| Errno::of_client(&e))
    }

    /// The values of the attribute `attr`; `ENODATA` when it has none.
    async fn values(&self, path: &LogicalPath, attr: &str) -> FsResult<Vec<String>> {
        let values: Vec<String> = self
            .avus(path)
            .await?
            .into_iter()
            .filter(|a| a.attr == attr)
            .map(|a| a.value)
            .collect();
        if values.is_empty() {
            return Err(Errno::ENODATA);
        }
        Ok(values)
    }

    pub async fn listxattr(&self, ino: u64) -> FsResult<Vec<String>> {
        let path = self.path(ino)?;
        let mut names = vec![XATTR_CHECKSUM.to_owned(), XATTR_REPLICAS.to_owned()];
        for a in self.avus(&path).await? {
            let n = format!("user.{}", a.attr);
            if !names.contains(&n) {
                names.push(n);
            }
        }
        Ok(names)
    }

    /// `setxattr user.NAME VALUE`: the metadata attribute NAME set to VALUE (its earlier
    /// values replaced, as an extended attribute has one value).
    pub async fn setxattr(&self, ino: u64, name: &str, value: &[u8]) -> FsResult<()> {
        let path = self.path(ino)?;
        if [XATTR_CHECKSUM, XATTR_REPLICAS, XATTR_PENDING].contains(&name) {
            return Err(Errno::EPERM);
        }
        let attr = avu_name(name)?;
        let value = std::str::from_utf8(value).map_err(|_| Errno::EINVAL)?;
        let edit = MetaRequest {
            op: "set".into(),
            attr: attr.to_owned(),
            value: Some(value.to_owned()),
            unit: String::new(),
        };
        self.client
            .meta_edit(&path, &edit)
            .await
            .map_err(|e| Errno::of_client(&e))
    }

    pub async fn removexattr(&self, ino: u64, name: &str) -> FsResult<()> {
        let path = self.path(ino)?;
        if [XATTR_CHECKSUM, XATTR_REPLICAS, XATTR_PENDING].contains(&name) {
            return Err(Errno::EPERM);
        }
        let attr = avu_name(name)?;
        self.values(&path, attr).await?;
        let edit = MetaRequest {
            op: "rm".into(),
            attr: attr.to_owned(),
            value: None,
            unit: String::new(),
        };
        self.client
            .meta_edit(&path, &edit)
            .await
            .map_err(|e| Errno::of_client(&e))
    }
}

/// The metadata attribute an extended attribute names: only the `user.` namespace maps.
fn avu_name(name: &str) -> FsResult<&str> {
    match name.strip_prefix("user.") {
        Some(a) if !a.is_empty() => Ok(a),
        _ => Err(Errno::ENOTSUP),
    }
}

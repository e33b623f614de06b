//! The S3Gateway part of the catalog's contract and its records; implemented in `sql/s3.rs`.

use crate::{Avu, Node, NodeId, PrincipalId};
use async_trait::async_trait;
use weft_types::{Checksum, Error, LogicalPath, Millis, PrincipalName};

/// An S3 access key: who it acts as. The secret is only in [`S3Gateway::s3_secret`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Key {
    pub access_key: String,
    pub user_id: PrincipalId,
    pub user: PrincipalName,
    pub created: Millis,
}

/// A bucket an administrator declared over a collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Bucket {
    pub name: String,
    pub node_id: NodeId,
    /// The collection's current path.
    pub path: LogicalPath,
    pub public_read: bool,
    pub created: Millis,
}

/// What S3 clients need of an object besides weft's own record: the ETag they check and
/// the content type. Registered with the object, in its transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Attrs {
    pub etag: String,
    pub content_type: Option<String>,
    /// The sizes of the parts it was completed from, in order (a multipart upload's); empty
    /// for an object written whole, which is its own one part.
    pub parts: Vec<u64>,
}

/// The unit of the AVUs that hold an object's `x-amz-meta-*`: a write through the S3
/// gateway replaces those and leaves the object's other metadata alone.
pub const S3_META_UNIT: &str = "s3";

/// What a write through the S3 gateway registers with its object, in its transaction: the
/// attributes, and the `x-amz-meta-*` pairs that replace its AVUs of [`S3_META_UNIT`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Write {
    pub attrs: S3Attrs,
    pub meta: Vec<(String, String)>,
}

/// A data object as an S3 listing shows it, with its [`S3Attrs`] when they still hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Listed {
    pub path: String,
    /// A folder (a collection made through S3 as the key `dir/`), not a data object.
    pub folder: bool,
    pub size: i64,
    pub checksum: Option<Checksum>,
    pub modified: Millis,
    pub attrs: Option<S3Attrs>,
}

/// The S3 gateway's keys, buckets and object attributes.
#[async_trait]
pub trait S3Gateway: Send + Sync {
    /// Errors: `already_exists` (the access key), `not_found` (user).
    async fn create_s3_key(
        &self,
        access_key: &str,
        user_id: PrincipalId,
        secret: &str,
    ) -> Result<S3Key, Error>;
    /// Keys of `user_id`, or of everyone; by user, then creation.
    async fn s3_keys(&self, user_id: Option<PrincipalId>) -> Result<Vec<S3Key>, Error>;
    /// The key and its secret, opened.
    async fn s3_secret(&self, access_key: &str) -> Result<Option<(S3Key, String)>, Error>;
    /// Errors: `not_found`.
    async fn delete_s3_key(&self, access_key: &str) -> Result<(), Error>;

    /// Errors: `already_exists` (name), `not_found` (node).
    async fn add_s3_bucket(&self, name: &str, node_id: NodeId, public_read: bool) -> Result<S3Bucket, Error>;
    async fn s3_buckets(&self) -> Result<Vec<S3Bucket>, Error>;
    async fn s3_bucket(&self, name: &str) -> Result<Option<S3Bucket>, Error>;
    /// Errors: `not_found`.
    async fn delete_s3_bucket(&self, name: &str) -> Result<S3Bucket, Error>;

    /// The node at `path` with its S3 attributes, if they were registered for its current
    /// content, and its AVUs, in one statement: what a HEAD or GET answers with.
    async fn s3_object_at(
        &self,
        path: &LogicalPath,
    ) -> Result<Option<(Node, Option<S3Attrs>, Vec<Avu>)>, Error>;
    /// Data objects and folders with `lo <= path < hi` and `path > after`, by path (byte
    /// order, which is S3's key order), at most `limit`.
    async fn s3_list(&self, lo: &str, hi: &str, after: &str, limit: u32) -> Result<Vec<S3Listed>, Error>;
    /// Those of `paths` that are folders.
    async fn s3_folders(&self, paths: &[String]) -> Result<Vec<S3Listed>, Error>;
    /// Makes the collection `node_id` a folder (made through S3 as the key `dir/`, and
    /// listed so until it is removed or unmarked) or no longer one.
    async fn set_s3_folder(&self, node_id: NodeId, folder: bool) -> Result<(), Error>;
}

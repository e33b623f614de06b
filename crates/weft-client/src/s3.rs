//! Routes that manage the S3 gateway: access keys and buckets.

use crate::client::Client;
use crate::error::ClientError;
use reqwest::Method;
use weft_types::wire::{NewS3Bucket, NewS3Key, S3BucketWire, S3KeyCreated, S3KeyWire};

impl Client {
    /// A new access key for `user` (default: the caller); its secret is in the answer only.
    pub async fn create_s3_key(&self, user: Option<&str>) -> Result<S3KeyCreated, ClientError> {
        let req = NewS3Key {
            user: user.map(str::to_owned),
        };
        self.json(self.request(Method::POST, self.url("/s3/keys")).json(&req))
            .await
    }

    /// The caller's keys, another user's, or (`all`) everyone's.
    pub async fn s3_keys(&self, user: Option<&str>, all: bool) -> Result<Vec<S3KeyWire>, ClientError> {
        let mut q: Vec<(&str, &str)> = Vec::new();
        if let Some(u) = user {
            q.push(("user", u));
        }
        if all {
            q.push(("all", "true"));
        }
        self.json(self.request(Method::GET, self.url("/s3/keys")).query(&q))
            .await
    }

    pub async fn remove_s3_key(&self, access_key: &str) -> Result<(), ClientError> {
        self.empty(self.request(Method::DELETE, self.name_url("s3/keys", access_key)))
            .await
    }

    pub async fn s3_buckets(&self) -> Result<Vec<S3BucketWire>, ClientError> {
        self.json(self.request(Method::GET, self.url("/s3/buckets")))
            .await
    }

    pub async fn add_s3_bucket(&self, req: &NewS3Bucket) -> Result<S3BucketWire, ClientError> {
        self.json(self.request(Method::POST, self.url("/s3/buckets")).json(req))
            .await
    }

    pub async fn remove_s3_bucket(&self, name: &str) -> Result<(), ClientError> {
        self.empty(self.request(Method::DELETE, self.name_url("s3/buckets", name)))
            .await
    }
}

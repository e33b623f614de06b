//! Resource settings, as stored (JSON) in the catalog.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsConfig {
    /// Directory holding the resource's data; created if missing.
    pub root: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct S3Config {
    pub endpoint: String,
    pub bucket: String,
    #[serde(default = "default_region")]
    pub region: String,
    pub access_key: String,
    pub secret_key: String,
    /// Key prefix inside the bucket, so several resources can share one bucket.
    #[serde(default)]
    pub prefix: String,
}

fn default_region() -> String {
    "us-east-1".into()
}

impl S3Config {
    /// The settings without the secret, for listings and logs.
    pub fn redacted(&self) -> serde_json::Value {
        serde_json::json!({
            "endpoint": self.endpoint, "bucket": self.bucket, "region": self.region,
            "access_key": self.access_key, "prefix": self.prefix,
        })
    }
}

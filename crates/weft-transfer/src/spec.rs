//! What a user asks for.

use serde::{Deserialize, Serialize};
use weft_types::{Endpoint, Error};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verify {
    /// Checksums computed in flight, compared end to end.
    #[default]
    Default,
    /// And the destination re-read and hashed after writing (Globus' "verify").
    Strong,
}

/// A transfer request, stored as JSON with the transfer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransferSpec {
    pub sources: Vec<String>,
    pub destination: String,
    #[serde(default)]
    pub recursive: bool,
    #[serde(default)]
    pub sync: bool,
    #[serde(default)]
    pub verify: Verify,
    /// Parallel streams per large file.
    pub streams: u32,
    /// Large files in flight at once; bundles of small files, twice as many.
    pub concurrency: u32,
}

impl TransferSpec {
    pub const STREAMS_DEFAULT: u32 = 4;
    pub const CONCURRENCY_DEFAULT: u32 = 8;
    const MAX_PARALLEL: u32 = 64;

    /// Parses and checks the endpoints and limits. Errors: `invalid_argument`.
    pub fn check(&self) -> Result<(Vec<Endpoint>, Endpoint), Error> {
        if self.sources.is_empty() {
            return Err(Error::invalid("a transfer needs at least one source"));
        }
        for (what, n) in [("streams", self.streams), ("concurrency", self.concurrency)] {
            if n == 0 || n > Self::MAX_PARALLEL {
                return Err(Error::invalid(format!(
                    "{what} must be between 1 and {}, not {n}",
                    Self::MAX_PARALLEL
                )));
            }
        }
        let sources = self
            .sources
            .iter()
            .map(|s| Endpoint::parse(s))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((sources, Endpoint::parse(&self.destination)?))
    }
}

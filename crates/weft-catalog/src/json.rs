//! The JSON documents the catalog's records carry, one type per kind: a transfer's request,
//! a policy rule and action, a store's settings, an S3 upload's completion. Their shapes are
//! defined by crates above the catalog (weft-transfer, weft-policy, weft-storage, the S3
//! gateway), which it cannot name, so each type holds the document as the JSON text the
//! catalog stores, unchanged: made only from a value (serialized) or from text that is
//! JSON, read as the caller's type with [`decode`](TransferSpecJson::decode).

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Serialize;
use weft_types::Error;

macro_rules! json_docs {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name(String);

        impl $name {
            /// `value` as JSON, the text the catalog stores.
            pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<$name, Error> {
                serde_json::to_string(value)
                    .map($name)
                    .map_err(|e| Error::internal(format!("{}: {e}", stringify!($name))))
            }

            /// The document read as `T`.
            pub fn decode<T: DeserializeOwned>(&self) -> serde_json::Result<T> {
                serde_json::from_str(&self.0)
            }

            /// The JSON text, as stored.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// A column of a row. Not parsed again: the catalog wrote it from `encode` or
            /// `parse`, and the reader's `decode` reports what it cannot read, so one bad row
            /// fails its own use, not every listing it is in.
            pub(crate) fn stored(text: String) -> $name {
                $name(text)
            }
        }
        /// JSON text. Errors: `invalid_argument` when it is not JSON.
        impl std::str::FromStr for $name {
            type Err = Error;

            fn from_str(text: &str) -> Result<$name, Error> {
                check(text).map_err(|e| Error::invalid(format!("not JSON: {e}")))?;
                Ok($name(text.to_owned()))
            }
        }
    )*};
}

/// Whether `text` is one JSON value (read, not kept).
fn check(text: &str) -> serde_json::Result<()> {
    serde_json::from_str::<IgnoredAny>(text).map(|_| ())
}

json_docs! {
    /// A transfer's request ([`TransferRecord::spec`](crate::TransferRecord)): the JSON of
    /// `weft_transfer::TransferSpec`.
    TransferSpecJson;
    /// A policy rule's definition ([`PolicyRuleRecord`](crate::PolicyRuleRecord)): the JSON of
    /// `weft_policy::Rule`.
    PolicyRuleJson;
    /// What a policy task does ([`PolicyTask`](crate::PolicyTask)): the JSON of
    /// `weft_policy::Action`. One task of a rule per node and action is open at a time,
    /// compared by this text.
    PolicyActionJson;
    /// A resource's or staging area's settings, by kind (root directory; endpoint, bucket,
    /// credentials...): the JSON of weft-storage's configurations. Its secret fields are
    /// stored sealed (`seal.rs`) and held here opened.
    StoreSettingsJson;
    /// What the S3 gateway registers with the object when a multipart upload completes
    /// ([`UploadRecord::s3`](crate::UploadRecord)), as it wrote it.
    S3UploadJson;
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_types::ErrorCode;

    #[test]
    fn documents_keep_the_text_of_their_values_and_refuse_what_is_not_json() {
        #[derive(Serialize, serde::Deserialize, Debug, PartialEq)]
        struct Spec {
            to: String,
            streams: u32,
        }
        let spec = Spec {
            to: "/z/x".into(),
            streams: 4,
        };
        let doc = TransferSpecJson::encode(&spec).unwrap();
        assert_eq!(doc.as_str(), serde_json::to_string(&spec).unwrap());
        assert_eq!(doc.decode::<Spec>().unwrap(), spec);
        assert!(doc.decode::<Vec<u8>>().is_err());
        let parsed: TransferSpecJson = r#"{"b": 1, "a": 2}"#.parse().unwrap();
        assert_eq!(parsed.as_str(), r#"{"b": 1, "a": 2}"#, "the text as it was");
        for bad in ["", "mint", "{", "{} {}"] {
            assert_eq!(
                bad.parse::<PolicyActionJson>().unwrap_err().code,
                ErrorCode::InvalidArgument
            );
        }
    }
}

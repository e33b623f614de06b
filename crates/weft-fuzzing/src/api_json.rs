//! The JSON request bodies of API v1 (`weft_types::wire`): any bytes are a value or an
//! error, and a value serialises to JSON that reads back.

use weft_types::wire;

fn one<T: serde::de::DeserializeOwned + serde::Serialize>(data: &[u8]) {
    if let Ok(v) = serde_json::from_slice::<T>(data) {
        let json = serde_json::to_vec(&v).expect("a value read from JSON writes as JSON");
        serde_json::from_slice::<T>(&json).expect("what was written reads back");
    }
}

pub fn run(data: &[u8]) {
    one::<wire::MoveRequest>(data);
    one::<wire::CopyRequest>(data);
    one::<wire::UploadRequest>(data);
    one::<wire::CompleteUpload>(data);
    one::<wire::MetaBatch>(data);
    one::<wire::MetaRequest>(data);
    one::<wire::NewUser>(data);
    one::<wire::NewGroup>(data);
    one::<wire::TokenRequest>(data);
    one::<wire::AclRequest>(data);
    one::<wire::NewResourceWire>(data);
    one::<wire::NewPeerZone>(data);
    one::<wire::UserMapWire>(data);
    one::<wire::NewStagingArea>(data);
    one::<wire::BundleHeader>(data);
    one::<wire::TransferRequest>(data);
    one::<wire::ReplicateRequest>(data);
    one::<wire::MintPidRequest>(data);
    one::<wire::PolicyRequest>(data);
    one::<wire::QosRequest>(data);
}

//! Routes of managed transfers: the zones move the bytes, the client only submits, watches
//! and cancels.

use crate::client::Client;
use crate::error::ClientError;
use reqwest::Method;
use weft_types::wire::{
    MintPidRequest, PidWire, ReplicaWire, ReplicateRequest, TransferFileWire, TransferPlanWire,
    TransferRequest, TransferWire,
};
use weft_types::LogicalPath;

impl Client {
    /// `POST /transfers`: checked and planned by the zone before it answers; runs after.
    pub async fn start_transfer(&self, req: &TransferRequest) -> Result<TransferWire, ClientError> {
        self.json(self.request(Method::POST, self.url("/transfers")).json(req))
            .await
    }

    /// `POST /transfers/plan`: what a transfer would move, without starting it.
    pub async fn plan_transfer(&self, req: &TransferRequest) -> Result<TransferPlanWire, ClientError> {
        self.json(self.request(Method::POST, self.url("/transfers/plan")).json(req))
            .await
    }

    /// The caller's transfers (all of them for an admin), newest first.
    pub async fn transfers(&self, limit: u32) -> Result<Vec<TransferWire>, ClientError> {
        let req = self
            .request(Method::GET, self.url("/transfers"))
            .query(&[("limit", limit)]);
        self.json(req).await
    }

    pub async fn transfer(&self, id: &str) -> Result<TransferWire, ClientError> {
        self.json(self.request(Method::GET, self.name_url("transfers", id)))
            .await
    }

    /// One page of a transfer's files by sequence number, optionally only those in `state`;
    /// `after` is the last `seq` of the previous page.
    pub async fn transfer_files(
        &self,
        id: &str,
        state: Option<&str>,
        after: Option<u64>,
        limit: u32,
    ) -> Result<Vec<TransferFileWire>, ClientError> {
        let mut query = vec![("limit", limit.to_string())];
        if let Some(s) = state {
            query.push(("state", s.to_owned()));
        }
        if let Some(c) = after {
            query.push(("cursor", c.to_string()));
        }
        let url = format!("{}/files", self.name_url("transfers", id));
        self.json(self.request(Method::GET, url).query(&query)).await
    }

    pub async fn cancel_transfer(&self, id: &str) -> Result<(), ClientError> {
        let url = format!("{}/cancel", self.name_url("transfers", id));
        self.empty(self.request(Method::POST, url)).await
    }

    /// `POST /replicas`: replication, run by the object's zone as a managed transfer.
    pub async fn replicate(&self, req: &ReplicateRequest) -> Result<TransferWire, ClientError> {
        self.json(self.request(Method::POST, self.url("/replicas")).json(req))
            .await
    }

    /// `DELETE /replicas/{path}?from=`: removes one replica (never the last good one).
    pub async fn trim(&self, path: &LogicalPath, from: &str) -> Result<ReplicaWire, ClientError> {
        let req = self
            .request(Method::DELETE, self.path_url("replicas", path))
            .query(&[("from", from)]);
        self.json(req).await
    }

    /// `POST /pids`: the PID of a collection or data object (minted on first request).
    pub async fn mint_pid(&self, path: &LogicalPath) -> Result<PidWire, ClientError> {
        let req = MintPidRequest {
            path: path.to_string(),
        };
        self.json(self.request(Method::POST, self.url("/pids")).json(&req))
            .await
    }

    /// `GET /pids/{prefix}/{suffix}`: what a PID stands for now.
    pub async fn resolve_pid(&self, pid: &str) -> Result<PidWire, ClientError> {
        let (prefix, suffix) = pid
            .split_once('/')
            .ok_or_else(|| ClientError::Invalid(format!("{pid:?} is not a PID: expected PREFIX/SUFFIX")))?;
        let url = format!(
            "{}/{}",
            self.name_url("pids", prefix),
            crate::client::encode_segment(suffix)
        );
        self.json(self.request(Method::GET, url)).await
    }
}

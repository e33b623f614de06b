//! Routes of the namespace: stat, list, mkdir, remove, move, copy, checksum, metadata, find.

use crate::client::Client;
use crate::error::ClientError;
use reqwest::Method;
use weft_types::wire::{
    AvuWire, ChecksumReport, CopyRequest, ExtractedWire, Health, MetaRequest, MoveRequest, NodeStat, Page,
    ZoneStatus,
};
use weft_types::LogicalPath;

/// Page size asked for when a caller wants everything; the zone caps it anyway.
pub const PAGE_LIMIT: u32 = 1000;

/// A search below a collection (`GET /find`).
#[derive(Debug, Clone)]
pub struct FindParams {
    pub root: LogicalPath,
    /// `*` and `?` wildcards over the last path component.
    pub name: Option<String>,
    /// Conditions as users write them: `attr=value`, `attr>number`, ...
    pub meta: Vec<String>,
    /// `object` or `collection`.
    pub kind: Option<String>,
}

impl Client {
    /// `GET /health`; needs no token.
    pub async fn health(&self) -> Result<Health, ClientError> {
        self.json(self.request(Method::GET, self.url("/health"))).await
    }

    /// `GET /zone`: the zone's background workers and their state.
    pub async fn zone_status(&self) -> Result<ZoneStatus, ClientError> {
        self.json(self.request(Method::GET, self.url("/zone"))).await
    }

    /// `GET /openapi.json`.
    pub async fn openapi(&self) -> Result<serde_json::Value, ClientError> {
        self.json(self.request(Method::GET, self.url("/openapi.json")))
            .await
    }

    pub async fn stat(&self, path: &LogicalPath) -> Result<NodeStat, ClientError> {
        self.json(self.request(Method::GET, self.path_url("stat", path)))
            .await
    }

    /// One page of the children of a collection (a data object lists as itself).
    pub async fn list(
        &self,
        path: &LogicalPath,
        cursor: Option<&str>,
        limit: Option<u32>,
    ) -> Result<Page<NodeStat>, ClientError> {
        let mut q: Vec<(&str, String)> = Vec::new();
        if let Some(c) = cursor {
            q.push(("cursor", c.to_owned()));
        }
        if let Some(l) = limit {
            q.push(("limit", l.to_string()));
        }
        self.json(self.request(Method::GET, self.path_url("list", path)).query(&q))
            .await
    }

    /// Every child, following the cursor through all pages.
    pub async fn list_all(&self, path: &LogicalPath) -> Result<Vec<NodeStat>, ClientError> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = self.list(path, cursor.as_deref(), Some(PAGE_LIMIT)).await?;
            out.extend(page.items);
            match page.next_cursor {
                Some(c) if Some(&c) != cursor.as_ref() => cursor = Some(c),
                _ => return Ok(out),
            }
        }
    }

    pub async fn mkdir(&self, path: &LogicalPath, parents: bool) -> Result<NodeStat, ClientError> {
        let req = self
            .request(Method::POST, self.path_url("mkdir", path))
            .query(&[("parents", parents)]);
        self.json(req).await
    }

    pub async fn remove(&self, path: &LogicalPath, recursive: bool) -> Result<(), ClientError> {
        let req = self
            .request(Method::DELETE, self.path_url("nodes", path))
            .query(&[("recursive", recursive)]);
        self.empty(req).await
    }

    /// Renames `from` to exactly `to` (server-side, no bytes move); with `replace`, an
    /// existing `to` is replaced in the same step, as rename(2) does.
    pub async fn rename(
        &self,
        from: &LogicalPath,
        to: &LogicalPath,
        replace: bool,
    ) -> Result<NodeStat, ClientError> {
        let body = MoveRequest {
            from: from.to_string(),
            to: to.to_string(),
            replace,
        };
        self.json(self.request(Method::POST, self.url("/move")).json(&body))
            .await
    }

    /// Copies the data object `from` to `to` inside the zone (server-side).
    pub async fn copy(
        &self,
        from: &LogicalPath,
        to: &LogicalPath,
        resource: Option<&str>,
        overwrite: bool,
    ) -> Result<NodeStat, ClientError> {
        let body = CopyRequest {
            from: from.to_string(),
            to: to.to_string(),
            resource: resource.map(str::to_owned),
            overwrite,
        };
        self.json(self.request(Method::POST, self.url("/copy")).json(&body))
            .await
    }

    /// The stored checksum; with `verify`, every replica re-read and re-hashed by the zone.
    pub async fn checksum(&self, path: &LogicalPath, verify: bool) -> Result<ChecksumReport, ClientError> {
        let req = self
            .request(Method::POST, self.path_url("checksum", path))
            .query(&[("verify", verify)]);
        self.json(req).await
    }

    pub async fn meta_list(&self, path: &LogicalPath) -> Result<Vec<AvuWire>, ClientError> {
        self.json(self.request(Method::GET, self.path_url("meta", path)))
            .await
    }

    pub async fn meta_edit(&self, path: &LogicalPath, edit: &MetaRequest) -> Result<(), ClientError> {
        self.empty(self.request(Method::POST, self.path_url("meta", path)).json(edit))
            .await
    }

    /// Reads the object's header into its metadata (the zone's extractors).
    pub async fn extract(&self, path: &LogicalPath) -> Result<ExtractedWire, ClientError> {
        self.json(self.request(Method::POST, self.path_url("extract", path)))
            .await
    }

    /// Several edits of one node in one request, applied all or none.
    pub async fn meta_edit_many(&self, path: &LogicalPath, ops: Vec<MetaRequest>) -> Result<(), ClientError> {
        let batch = weft_types::wire::MetaBatch { ops };
        self.empty(
            self.request(Method::PATCH, self.path_url("meta", path))
                .json(&batch),
        )
        .await
    }

    /// One page of a search.
    pub async fn find(
        &self,
        params: &FindParams,
        cursor: Option<&str>,
        limit: Option<u32>,
    ) -> Result<Page<NodeStat>, ClientError> {
        let mut q: Vec<(&str, String)> = vec![("path", params.root.to_string())];
        if let Some(n) = &params.name {
            q.push(("name", n.clone()));
        }
        for m in &params.meta {
            q.push(("meta", m.clone()));
        }
        if let Some(k) = &params.kind {
            q.push(("kind", k.clone()));
        }
        if let Some(c) = cursor {
            q.push(("cursor", c.to_owned()));
        }
        if let Some(l) = limit {
            q.push(("limit", l.to_string()));
        }
        self.json(self.request(Method::GET, self.url("/find")).query(&q))
            .await
    }

    /// Every match, following the cursor through all pages.
    pub async fn find_all(&self, params: &FindParams) -> Result<Vec<NodeStat>, ClientError> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = self.find(params, cursor.as_deref(), Some(PAGE_LIMIT)).await?;
            out.extend(page.items);
            match page.next_cursor {
                Some(c) if Some(&c) != cursor.as_ref() => cursor = Some(c),
                _ => return Ok(out),
            }
        }
    }
}

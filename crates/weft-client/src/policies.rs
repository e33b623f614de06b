//! Routes of policies, QoS requirements and metadata exports (FAIR metadata).

use crate::client::Client;
use crate::error::ClientError;
use reqwest::Method;
use weft_types::wire::{PolicyRequest, PolicyRuleWire, PolicyStatusWire, QosRequest, QosWire, RuleTestWire};
use weft_types::LogicalPath;

impl Client {
    /// `POST /policies`: loads the rules of a policy file (replacing rules of the same names).
    pub async fn apply_policies(&self, source: &str) -> Result<Vec<PolicyRuleWire>, ClientError> {
        let req = PolicyRequest {
            source: source.to_owned(),
            path: None,
        };
        self.json(self.request(Method::POST, self.url("/policies")).json(&req))
            .await
    }

    pub async fn policies(&self) -> Result<Vec<PolicyRuleWire>, ClientError> {
        self.json(self.request(Method::GET, self.url("/policies"))).await
    }

    pub async fn remove_policy(&self, name: &str) -> Result<(), ClientError> {
        self.empty(self.request(Method::DELETE, self.name_url("policies", name)))
            .await
    }

    /// `POST /policies/test`: what the rules of `source` would do to `path`; nothing is done.
    pub async fn test_policies(
        &self,
        source: &str,
        path: &LogicalPath,
    ) -> Result<Vec<RuleTestWire>, ClientError> {
        let req = PolicyRequest {
            source: source.to_owned(),
            path: Some(path.to_string()),
        };
        self.json(self.request(Method::POST, self.url("/policies/test")).json(&req))
            .await
    }

    pub async fn policy_status(&self) -> Result<Vec<PolicyStatusWire>, ClientError> {
        self.json(self.request(Method::GET, self.url("/policies/status")))
            .await
    }

    pub async fn add_qos(&self, path: &LogicalPath, expression: &str) -> Result<QosWire, ClientError> {
        let req = QosRequest {
            path: path.to_string(),
            expression: expression.to_owned(),
        };
        self.json(self.request(Method::POST, self.url("/qos")).json(&req))
            .await
    }

    /// Requirements on `path`, above it and below it.
    pub async fn qos(&self, path: &LogicalPath) -> Result<Vec<QosWire>, ClientError> {
        let req = self
            .request(Method::GET, self.url("/qos"))
            .query(&[("path", path.as_str())]);
        self.json(req).await
    }

    /// `GET /export/datacite/{*path}`: DataCite JSON of a collection or data object.
    pub async fn export_datacite(&self, path: &LogicalPath) -> Result<serde_json::Value, ClientError> {
        self.json(self.request(Method::GET, self.path_url("export/datacite", path)))
            .await
    }

    pub async fn remove_qos(&self, id: i64) -> Result<(), ClientError> {
        self.empty(self.request(Method::DELETE, self.name_url("qos", &id.to_string())))
            .await
    }
}

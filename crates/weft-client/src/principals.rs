//! Routes of principals, tokens, ACLs, resources, federated zones and staging areas.

use crate::client::Client;
use crate::error::ClientError;
use reqwest::Method;
use weft_types::wire::{
    AclRequest, AclWire, AuditWire, ImportReportWire, ImportWire, NewGroup, NewPeerZone, NewResourceWire,
    NewStagingArea, NewUser, Page, PeerZoneWire, PrincipalWire, QuotaRequest, QuotaWire, ResourceWire,
    SpaceWire, StagingAreaWire, TokenCreated, TokenRequest, TokenWire, UserMapWire, WhoAmI,
};
use weft_types::LogicalPath;

impl Client {
    /// Who the token belongs to; also the cheapest way to check a token works.
    pub async fn whoami(&self) -> Result<WhoAmI, ClientError> {
        self.json(self.request(Method::GET, self.url("/whoami"))).await
    }

    pub async fn users(&self) -> Result<Vec<PrincipalWire>, ClientError> {
        self.json(self.request(Method::GET, self.url("/users"))).await
    }

    pub async fn add_user(&self, name: &str, admin: bool) -> Result<PrincipalWire, ClientError> {
        let body = NewUser {
            name: name.to_owned(),
            admin,
        };
        self.json(self.request(Method::POST, self.url("/users")).json(&body))
            .await
    }

    pub async fn remove_user(&self, name: &str) -> Result<(), ClientError> {
        self.empty(self.request(Method::DELETE, self.name_url("users", name)))
            .await
    }

    pub async fn groups(&self) -> Result<Vec<PrincipalWire>, ClientError> {
        self.json(self.request(Method::GET, self.url("/groups"))).await
    }

    pub async fn add_group(&self, name: &str) -> Result<PrincipalWire, ClientError> {
        let body = NewGroup {
            name: name.to_owned(),
        };
        self.json(self.request(Method::POST, self.url("/groups")).json(&body))
            .await
    }

    pub async fn remove_group(&self, name: &str) -> Result<(), ClientError> {
        self.empty(self.request(Method::DELETE, self.name_url("groups", name)))
            .await
    }

    pub async fn members(&self, group: &str) -> Result<Vec<PrincipalWire>, ClientError> {
        let url = format!("{}/members", self.name_url("groups", group));
        self.json(self.request(Method::GET, url)).await
    }

    pub async fn add_member(&self, group: &str, user: &str) -> Result<(), ClientError> {
        self.empty(self.request(Method::PUT, self.member_url(group, user)))
            .await
    }

    pub async fn remove_member(&self, group: &str, user: &str) -> Result<(), ClientError> {
        self.empty(self.request(Method::DELETE, self.member_url(group, user)))
            .await
    }

    fn member_url(&self, group: &str, user: &str) -> String {
        format!(
            "{}/members/{}",
            self.name_url("groups", group),
            crate::client::encode_segment(user)
        )
    }

    pub async fn create_token(&self, req: &TokenRequest) -> Result<TokenCreated, ClientError> {
        self.json(self.request(Method::POST, self.url("/tokens")).json(req))
            .await
    }

    /// The caller's tokens (an administrator's: everyone's), newest first.
    pub async fn tokens(&self) -> Result<Vec<TokenWire>, ClientError> {
        self.json(self.request(Method::GET, self.url("/tokens"))).await
    }

    /// Deletes token `id`, and the web sessions opened with it.
    pub async fn delete_token(&self, id: i64) -> Result<(), ClientError> {
        self.empty(self.request(Method::DELETE, self.url(&format!("/tokens/{id}"))))
            .await
    }

    pub async fn acl(&self, path: &LogicalPath) -> Result<Vec<AclWire>, ClientError> {
        self.json(self.request(Method::GET, self.path_url("acl", path)))
            .await
    }

    pub async fn set_acl(&self, path: &LogicalPath, req: &AclRequest) -> Result<(), ClientError> {
        self.empty(self.request(Method::POST, self.path_url("acl", path)).json(req))
            .await
    }

    pub async fn resources(&self) -> Result<Vec<ResourceWire>, ClientError> {
        self.json(self.request(Method::GET, self.url("/resources"))).await
    }

    /// The default resource's space (what a put lands on), as `df` shows it.
    pub async fn default_space(&self) -> Result<SpaceWire, ClientError> {
        self.json(self.request(Method::GET, self.url("/resources/default/space")))
            .await
    }

    pub async fn add_resource(&self, req: &NewResourceWire) -> Result<ResourceWire, ClientError> {
        self.json(self.request(Method::POST, self.url("/resources")).json(req))
            .await
    }

    /// `POST /resources/{name}/import`: registers the files below `path` of the resource as
    /// data objects under `into`, without a copy (administrators).
    pub async fn import_in_place(
        &self,
        name: &str,
        path: &str,
        into: &str,
    ) -> Result<ImportReportWire, ClientError> {
        let url = format!("{}/import", self.name_url("resources", name));
        let req = ImportWire {
            path: path.to_owned(),
            into: into.to_owned(),
        };
        self.json(self.request(Method::POST, url).json(&req)).await
    }

    pub async fn remove_resource(&self, name: &str) -> Result<(), ClientError> {
        self.empty(self.request(Method::DELETE, self.name_url("resources", name)))
            .await
    }

    /// `GET /quotas`: every quota with its usage (administrators).
    pub async fn quotas(&self) -> Result<Vec<QuotaWire>, ClientError> {
        self.json(self.request(Method::GET, self.url("/quotas"))).await
    }

    /// `GET /audit`: a page of the audit log, newest first (administrators).
    pub async fn audit(
        &self,
        path: Option<&str>,
        user: Option<&str>,
        since: Option<i64>,
        cursor: Option<&str>,
        limit: u32,
    ) -> Result<Page<AuditWire>, ClientError> {
        let mut q: Vec<(&str, String)> = vec![("limit", limit.to_string())];
        if let Some(p) = path {
            q.push(("path", p.to_owned()));
        }
        if let Some(u) = user {
            q.push(("user", u.to_owned()));
        }
        if let Some(s) = since {
            q.push(("since", s.to_string()));
        }
        if let Some(c) = cursor {
            q.push(("cursor", c.to_owned()));
        }
        self.json(self.request(Method::GET, self.url("/audit")).query(&q))
            .await
    }

    /// `PUT /quotas`: sets a quota, replacing the one of the same principal and resource.
    pub async fn set_quota(&self, req: &QuotaRequest) -> Result<(), ClientError> {
        self.empty(self.request(Method::PUT, self.url("/quotas")).json(req))
            .await
    }

    /// `DELETE /quotas/{principal}`: the quota on `resource`, or the one on all resources.
    pub async fn remove_quota(&self, principal: &str, resource: Option<&str>) -> Result<(), ClientError> {
        let mut req = self.request(Method::DELETE, self.name_url("quotas", principal));
        if let Some(r) = resource {
            req = req.query(&[("resource", r)]);
        }
        self.empty(req).await
    }

    /// `GET /zones`: the federated zones, each probed for reachability.
    pub async fn zones(&self) -> Result<Vec<PeerZoneWire>, ClientError> {
        self.json(self.request(Method::GET, self.url("/zones"))).await
    }

    pub async fn add_zone(&self, req: &NewPeerZone) -> Result<PeerZoneWire, ClientError> {
        self.json(self.request(Method::POST, self.url("/zones")).json(req))
            .await
    }

    pub async fn remove_zone(&self, name: &str) -> Result<(), ClientError> {
        self.empty(self.request(Method::DELETE, self.name_url("zones", name)))
            .await
    }

    /// Users of `zone` mapped to local users (administrators).
    pub async fn user_maps(&self, zone: &str) -> Result<Vec<UserMapWire>, ClientError> {
        let url = format!("{}/users", self.name_url("zones", zone));
        self.json(self.request(Method::GET, url)).await
    }

    pub async fn map_user(&self, zone: &str, map: &UserMapWire) -> Result<(), ClientError> {
        let url = format!("{}/users", self.name_url("zones", zone));
        self.empty(self.request(Method::POST, url).json(map)).await
    }

    pub async fn unmap_user(&self, zone: &str, remote_user: &str) -> Result<(), ClientError> {
        let url = format!(
            "{}/users/{}",
            self.name_url("zones", zone),
            crate::client::encode_segment(remote_user)
        );
        self.empty(self.request(Method::DELETE, url)).await
    }

    /// `GET /staging`: where transfers of this zone may stage data.
    pub async fn staging_areas(&self) -> Result<Vec<StagingAreaWire>, ClientError> {
        self.json(self.request(Method::GET, self.url("/staging"))).await
    }

    pub async fn add_staging_area(&self, req: &NewStagingArea) -> Result<StagingAreaWire, ClientError> {
        self.json(self.request(Method::POST, self.url("/staging")).json(req))
            .await
    }

    pub async fn remove_staging_area(&self, name: &str) -> Result<(), ClientError> {
        self.empty(self.request(Method::DELETE, self.name_url("staging", name)))
            .await
    }
}

//! The routes of API v1, registered through [`RouteTable`] so that the list of routes the
//! server answers is known (and checked against the OpenAPI document).

pub mod acl;
pub mod audit;
pub mod data;
pub mod federation;
pub mod meta;
pub mod namespace;
pub mod pids;
pub mod policies;
pub mod quotas;
pub mod replicas;
pub mod resources;
pub mod s3;
pub mod staging;
pub mod tokens;
pub mod transfers;
pub mod uploads;
pub mod users;

use crate::AppState;
use axum::handler::Handler;
use axum::routing::{on, MethodFilter};
use axum::Router;
use http::Method;
use std::sync::Arc;

/// A router that remembers what it routes.
pub struct RouteTable {
    pub router: Router<Arc<AppState>>,
    pub routes: Vec<(Method, &'static str)>,
}

impl RouteTable {
    pub fn new() -> Self {
        RouteTable {
            router: Router::new(),
            routes: Vec::new(),
        }
    }

    pub fn add<H, T>(mut self, method: Method, path: &'static str, handler: H) -> Self
    where
        H: Handler<T, Arc<AppState>>,
        T: 'static,
    {
        let filter = MethodFilter::try_from(method.clone()).expect("a routable method");
        self.routes.push((method, path));
        self.router = self.router.route(path, on(filter, handler));
        self
    }
}

impl Default for RouteTable {
    fn default() -> Self {
        Self::new()
    }
}

pub fn table() -> RouteTable {
    use http::Method as M;
    RouteTable::new()
        .add(M::GET, "/api/v1/health", crate::health)
        .add(M::GET, "/api/v1/openapi.json", crate::openapi_json)
        .add(M::GET, "/api/v1/zone", crate::zone_status)
        .add(M::GET, "/metrics", crate::metrics::metrics)
        .add(M::GET, "/api/v1/whoami", users::whoami)
        .add(M::GET, "/api/v1/stat/{*path}", namespace::stat)
        .add(M::GET, "/api/v1/list/{*path}", namespace::list)
        .add(M::POST, "/api/v1/mkdir/{*path}", namespace::mkdir)
        .add(M::DELETE, "/api/v1/nodes/{*path}", namespace::remove)
        .add(M::POST, "/api/v1/move", namespace::rename)
        .add(M::POST, "/api/v1/copy", namespace::copy)
        .add(M::PUT, "/api/v1/data/{*path}", data::put)
        .add(M::GET, "/api/v1/data/{*path}", data::get)
        .add(M::POST, "/api/v1/bundles", data::bundle)
        .add(M::POST, "/api/v1/uploads", uploads::begin_upload)
        .add(M::GET, "/api/v1/uploads/{id}", uploads::upload_status)
        .add(M::PUT, "/api/v1/uploads/{id}/{index}", uploads::upload_piece)
        .add(M::POST, "/api/v1/uploads/{id}/complete", uploads::complete_upload)
        .add(M::DELETE, "/api/v1/uploads/{id}", uploads::abort_upload)
        .add(M::POST, "/api/v1/checksum/{*path}", data::checksum)
        .add(M::GET, "/api/v1/meta/{*path}", meta::list)
        .add(M::POST, "/api/v1/meta/{*path}", meta::edit)
        .add(M::PATCH, "/api/v1/meta/{*path}", meta::edit_many)
        .add(M::GET, "/api/v1/find", meta::find)
        .add(M::GET, "/api/v1/export/datacite/{*path}", meta::export_datacite)
        .add(M::GET, "/api/v1/users", users::list_users)
        .add(M::POST, "/api/v1/users", users::add_user)
        .add(M::DELETE, "/api/v1/users/{name}", users::remove_user)
        .add(M::GET, "/api/v1/groups", users::list_groups)
        .add(M::POST, "/api/v1/groups", users::add_group)
        .add(M::DELETE, "/api/v1/groups/{name}", users::remove_group)
        .add(M::GET, "/api/v1/groups/{name}/members", users::members)
        .add(M::PUT, "/api/v1/groups/{name}/members/{user}", users::add_member)
        .add(
            M::DELETE,
            "/api/v1/groups/{name}/members/{user}",
            users::remove_member,
        )
        .add(M::POST, "/api/v1/tokens", tokens::create_token)
        .add(M::GET, "/api/v1/tokens", tokens::list_tokens)
        .add(M::DELETE, "/api/v1/tokens/{id}", tokens::delete_token)
        .add(M::GET, "/api/v1/acl/{*path}", acl::list_acl)
        .add(M::POST, "/api/v1/acl/{*path}", acl::set_acl)
        .add(M::GET, "/api/v1/resources", resources::list_resources)
        .add(M::POST, "/api/v1/resources", resources::add_resource)
        .add(M::DELETE, "/api/v1/resources/{name}", resources::remove_resource)
        .add(M::GET, "/api/v1/audit", audit::audit)
        .add(M::GET, "/api/v1/quotas", quotas::list_quotas)
        .add(M::PUT, "/api/v1/quotas", quotas::set_quota)
        .add(M::DELETE, "/api/v1/quotas/{principal}", quotas::remove_quota)
        .add(M::GET, "/api/v1/zones", federation::list_zones)
        .add(M::POST, "/api/v1/zones", federation::add_zone)
        .add(M::DELETE, "/api/v1/zones/{name}", federation::remove_zone)
        .add(M::GET, "/api/v1/zones/{name}/users", federation::user_maps)
        .add(M::POST, "/api/v1/zones/{name}/users", federation::map_user)
        .add(
            M::DELETE,
            "/api/v1/zones/{name}/users/{user}",
            federation::unmap_user,
        )
        .add(M::GET, "/api/v1/staging", staging::list_staging)
        .add(M::POST, "/api/v1/staging", staging::add_staging)
        .add(M::DELETE, "/api/v1/staging/{name}", staging::remove_staging)
        .add(M::GET, "/api/v1/s3/keys", s3::list_keys)
        .add(M::POST, "/api/v1/s3/keys", s3::create_key)
        .add(M::DELETE, "/api/v1/s3/keys/{access_key}", s3::remove_key)
        .add(M::GET, "/api/v1/s3/buckets", s3::list_buckets)
        .add(M::POST, "/api/v1/s3/buckets", s3::add_bucket)
        .add(M::DELETE, "/api/v1/s3/buckets/{name}", s3::remove_bucket)
        .add(M::POST, "/api/v1/transfers", transfers::start)
        .add(M::POST, "/api/v1/transfers/plan", transfers::plan)
        .add(M::GET, "/api/v1/transfers", transfers::list)
        .add(M::GET, "/api/v1/transfers/{id}", transfers::show)
        .add(M::GET, "/api/v1/transfers/{id}/files", transfers::files)
        .add(M::POST, "/api/v1/transfers/{id}/cancel", transfers::cancel)
        .add(M::POST, "/api/v1/replicas", replicas::replicate)
        .add(M::DELETE, "/api/v1/replicas/{*path}", replicas::trim)
        .add(M::POST, "/api/v1/pids", pids::mint)
        .add(M::GET, "/api/v1/pids/{prefix}/{suffix}", pids::resolve)
        .add(M::GET, "/pid/{prefix}/{suffix}", pids::landing)
        .add(M::GET, "/api/v1/policies", policies::list)
        .add(M::POST, "/api/v1/policies", policies::apply)
        .add(M::DELETE, "/api/v1/policies/{name}", policies::remove)
        .add(M::POST, "/api/v1/policies/test", policies::try_rules)
        .add(M::GET, "/api/v1/policies/status", policies::rule_status)
        .add(M::GET, "/api/v1/qos", policies::list_qos)
        .add(M::POST, "/api/v1/qos", policies::add_qos)
        .add(M::DELETE, "/api/v1/qos/{id}", policies::remove_qos)
}

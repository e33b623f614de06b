//! The control plane by name: one arm per operation of the typed client, its arguments
//! read from a JSON object and its answer written as the wire type's JSON. The Python
//! layer (`weft/client.py`) gives each a method with a signature and a docstring.

use crate::{logical, Failure};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use weft_client::wire::{MetaRequest, ReplicateRequest};
use weft_client::{Client, FindParams};
use weft_types::LogicalPath;

/// The arguments of one call.
struct Args(Value);

impl Args {
    fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key).filter(|v| !v.is_null())
    }

    fn str(&self, key: &str) -> Result<String, Failure> {
        self.opt_str(key)?
            .ok_or_else(|| Failure::invalid(format!("{key} is required")))
    }

    fn opt_str(&self, key: &str) -> Result<Option<String>, Failure> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(Failure::invalid(format!("{key} must be a string, not {other}"))),
        }
    }

    fn path(&self, key: &str) -> Result<LogicalPath, Failure> {
        logical(&self.str(key)?)
    }

    fn flag(&self, key: &str) -> bool {
        self.get(key).and_then(Value::as_bool).unwrap_or(false)
    }

    fn int(&self, key: &str) -> Result<Option<i64>, Failure> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_i64()
                .map(Some)
                .ok_or_else(|| Failure::invalid(format!("{key} must be an integer, not {v}"))),
        }
    }

    fn limit(&self, default: u32) -> Result<u32, Failure> {
        let n = self.int("limit")?.unwrap_or(i64::from(default));
        u32::try_from(n).map_err(|_| Failure::invalid(format!("limit must be between 0 and {}", u32::MAX)))
    }

    /// A request body given whole, as the wire type.
    fn body<T: DeserializeOwned>(&self, key: &str) -> Result<T, Failure> {
        let v = self
            .get(key)
            .cloned()
            .ok_or_else(|| Failure::invalid(format!("{key} is required")))?;
        serde_json::from_value(v).map_err(|e| Failure::invalid(format!("{key}: {e}")))
    }

    fn strings(&self, key: &str) -> Result<Vec<String>, Failure> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(_) => self.body(key),
        }
    }
}

fn json<T: Serialize>(r: Result<T, weft_client::ClientError>) -> Result<String, Failure> {
    let v = r?;
    serde_json::to_string(&v).map_err(|e| Failure::new("protocol", e.to_string()))
}

pub(crate) async fn call(c: &Client, op: &str, args: Value) -> Result<String, Failure> {
    let a = Args(args);
    match op {
        "health" => json(c.health().await),
        "zone_status" => json(c.zone_status().await),
        "whoami" => json(c.whoami().await),
        "stat" => json(c.stat(&a.path("path")?).await),
        "ls" => json(c.list_all(&a.path("path")?).await),
        "ls_page" => {
            let limit = a.int("limit")?.map(|l| l.clamp(1, 10_000) as u32);
            json(
                c.list(&a.path("path")?, a.opt_str("cursor")?.as_deref(), limit)
                    .await,
            )
        }
        "mkdir" => json(c.mkdir(&a.path("path")?, a.flag("parents")).await),
        "rm" => json(c.remove(&a.path("path")?, a.flag("recursive")).await),
        "mv" => json(c.rename(&a.path("from")?, &a.path("to")?, false).await),
        "cp" => {
            let resource = a.opt_str("resource")?;
            json(
                c.copy(
                    &a.path("from")?,
                    &a.path("to")?,
                    resource.as_deref(),
                    a.flag("overwrite"),
                )
                .await,
            )
        }
        "checksum" => json(c.checksum(&a.path("path")?, a.flag("verify")).await),
        "find" => {
            let params = FindParams {
                root: a.path("path")?,
                name: a.opt_str("name")?,
                meta: a.strings("meta")?,
                kind: a.opt_str("kind")?,
            };
            json(c.find_all(&params).await)
        }
        "meta_ls" => json(c.meta_list(&a.path("path")?).await),
        "extract" => json(c.extract(&a.path("path")?).await),
        "import_in_place" => json(
            c.import_in_place(&a.str("resource")?, &a.str("dir")?, a.path("into")?.as_str())
                .await,
        ),
        "meta_edit" => {
            let ops: Vec<MetaRequest> = a.body("ops")?;
            json(c.meta_edit_many(&a.path("path")?, ops).await)
        }
        "acl_ls" => json(c.acl(&a.path("path")?).await),
        "acl_set" => json(c.set_acl(&a.path("path")?, &a.body("request")?).await),
        "users" => json(c.users().await),
        "user_add" => json(c.add_user(&a.str("name")?, a.flag("admin")).await),
        "user_rm" => json(c.remove_user(&a.str("name")?).await),
        "groups" => json(c.groups().await),
        "group_add" => json(c.add_group(&a.str("name")?).await),
        "group_rm" => json(c.remove_group(&a.str("name")?).await),
        "members" => json(c.members(&a.str("group")?).await),
        "member_add" => json(c.add_member(&a.str("group")?, &a.str("user")?).await),
        "member_rm" => json(c.remove_member(&a.str("group")?, &a.str("user")?).await),
        "token_create" => json(c.create_token(&a.body("request")?).await),
        "resources" => json(c.resources().await),
        "zones" => json(c.zones().await),
        "quotas" => json(c.quotas().await),
        "audit" => {
            let (path, user) = (a.opt_str("path")?, a.opt_str("user")?);
            let cursor = a.opt_str("cursor")?;
            json(
                c.audit(
                    path.as_deref(),
                    user.as_deref(),
                    a.int("since")?,
                    cursor.as_deref(),
                    a.limit(100)?,
                )
                .await,
            )
        }
        "transfer_start" => json(c.start_transfer(&a.body("request")?).await),
        "transfer_plan" => json(c.plan_transfer(&a.body("request")?).await),
        "transfers" => json(c.transfers(a.limit(50)?).await),
        "transfer" => json(c.transfer(&a.str("id")?).await),
        "transfer_files" => {
            let state = a.opt_str("state")?;
            let after = a.int("after")?.map(|n| n.max(0) as u64);
            json(
                c.transfer_files(&a.str("id")?, state.as_deref(), after, a.limit(1000)?)
                    .await,
            )
        }
        "transfer_cancel" => json(c.cancel_transfer(&a.str("id")?).await),
        "replicate" => {
            let req = ReplicateRequest {
                path: a.path("path")?.to_string(),
                target: a.str("target")?,
                recursive: a.flag("recursive"),
            };
            json(c.replicate(&req).await)
        }
        "trim" => json(c.trim(&a.path("path")?, &a.str("from")?).await),
        "pid_mint" => json(c.mint_pid(&a.path("path")?).await),
        "pid_resolve" => json(c.resolve_pid(&a.str("pid")?).await),
        "qos_add" => json(c.add_qos(&a.path("path")?, &a.str("expression")?).await),
        "qos_ls" => json(c.qos(&a.path("path")?).await),
        "qos_rm" => {
            let id = a.int("id")?.ok_or_else(|| Failure::invalid("id is required"))?;
            json(c.remove_qos(id).await)
        }
        "policy_apply" => json(c.apply_policies(&a.str("source")?).await),
        "policies" => json(c.policies().await),
        "policy_rm" => json(c.remove_policy(&a.str("name")?).await),
        "policy_status" => json(c.policy_status().await),
        "policy_test" => json(c.test_policies(&a.str("source")?, &a.path("path")?).await),
        "datacite" => json(c.export_datacite(&a.path("path")?).await),
        other => Err(Failure::invalid(format!("unknown operation {other:?}"))),
    }
}

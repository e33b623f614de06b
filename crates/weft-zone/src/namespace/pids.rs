//! Persistent identifiers: `weft pid mint PATH` binds `<prefix>/<suffix>` to a collection or
//! data object. The PID is bound to the node's id, so it follows moves and renames; a node
//! has at most one; a removed node's PID still resolves, to a record saying it is gone and
//! where it was. Resolving is public (a PID is made to be cited), so it answers what the
//! PID profile needs and no more: the path (the landing page's subject), kind, size,
//! checksum and times, and the `datacite.*` metadata the owner set for publication; not
//! the owner, the replicas (resources and zones are the operator's business) or other
//! metadata, which `stat` and `meta ls` show to whoever may read the object. Minting needs
//! `own`. The prefix is the zone's name unless configured; with an outside
//! registry ([`crate::namespace::PidRegistry`]) a PID exists there before it is bound here, so a PID
//! this zone hands out always resolves at both.

use super::Namespace;
use crate::namespace::NodeInfo;
use crate::Caller;
use weft_catalog::{Avu, NodeId, PidRecord};
use weft_types::{Error, ErrorCode, LogicalPath, Millis, NodeKind, Permission};

/// A PID and what it stands for now.
#[derive(Debug, Clone)]
pub struct PidInfo {
    /// `<prefix>/<suffix>`.
    pub pid: String,
    /// Where the node is, or was when removed.
    pub path: LogicalPath,
    /// The node with its replicas; `None` once removed.
    pub node: Option<NodeInfo>,
    pub metadata: Vec<Avu>,
    pub created: Millis,
    pub removed: Option<Millis>,
}

/// `prefix/suffix`: two non-empty parts of letters, digits, `.`, `_` and `-`.
pub fn parse_pid(pid: &str) -> Result<(&str, &str), Error> {
    let ok = |s: &str| {
        !s.is_empty()
            && s.len() <= 128
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    };
    match pid.split_once('/') {
        Some((prefix, suffix)) if ok(prefix) && ok(suffix) => Ok((prefix, suffix)),
        _ => Err(Error::invalid(format!(
            "{pid:?} is not a PID: expected PREFIX/SUFFIX of letters, digits, '.', '_' and '-'"
        ))),
    }
}

/// How this zone mints: under which prefix, and where else it registers.
pub(crate) struct Pids {
    pub prefix: String,
    /// Public base URL for landing pages, required with a registry.
    pub landing: Option<String>,
    pub registry: Option<Box<dyn crate::namespace::PidRegistry>>,
}

impl Namespace<'_> {
    /// Binds a new PID to `path`, or returns the one it has. Needs `own`: a PID publishes
    /// the object for good, which is its owner's decision. With an outside
    /// registry the PID is created there first: if that fails nothing is bound and the
    /// error says why (`service_unavailable` may pass on a retry).
    pub async fn mint_pid(self, caller: &Caller, path: &LogicalPath) -> Result<PidInfo, Error> {
        let node = self.node_as(caller, path, Permission::Own).await?;
        if let Some(record) = self.zone.catalog.pid_of(node.id).await? {
            return self.pid_info(record).await;
        }
        let suffix = uuid::Uuid::new_v4().to_string().to_uppercase();
        let pid = format!("{}/{suffix}", self.zone.pids.prefix);
        if let Some(registry) = &self.zone.pids.registry {
            let landing = self.zone.pids.landing.as_deref().unwrap_or_default();
            registry
                .register(&crate::namespace::Registration {
                    url: format!("{landing}/pid/{pid}"),
                    checksum: node.checksum.as_ref().map(|c| c.to_string()),
                    pid: pid.clone(),
                })
                .await?;
        }
        let record = self
            .zone
            .catalog
            .mint_pid(node.id, &self.zone.pids.prefix, &suffix)
            .await;
        let lost = match &record {
            Ok(r) => r.suffix != suffix,
            Err(_) => true,
        };
        if let (true, Some(registry)) = (lost, &self.zone.pids.registry) {
            // Another mint bound its PID first, or the catalog failed: ours points nowhere.
            if let Err(e) = registry.withdraw(&pid).await {
                tracing::warn!(%pid, error = %e, "could not withdraw a PID created at the registry but not bound");
            }
        }
        self.pid_info(record?).await
    }

    /// What `pid` stands for, as its public record (see the module's documentation);
    /// anyone may ask. Errors: `invalid_argument`, `not_found`.
    pub async fn resolve_pid(self, pid: &str) -> Result<PidInfo, Error> {
        let (prefix, suffix) = parse_pid(pid)?;
        let record = self
            .zone
            .catalog
            .get_pid(prefix, suffix)
            .await?
            .ok_or_else(|| Error::new(ErrorCode::NotFound, format!("PID {pid} was never minted here")))?;
        let mut info = self.pid_info(record).await?;
        if let Some(node) = &mut info.node {
            node.replicas.clear();
        }
        info.metadata
            .retain(|a| a.attr.starts_with(crate::namespace::datacite::PREFIX));
        Ok(info)
    }

    /// The PID bound to the node, if any (for `stat`).
    pub(crate) async fn pid_of(self, node_id: NodeId) -> Result<Option<String>, Error> {
        Ok(self
            .zone
            .catalog
            .pid_of(node_id)
            .await?
            .map(|r| format!("{}/{}", r.prefix, r.suffix)))
    }

    async fn pid_info(self, r: PidRecord) -> Result<PidInfo, Error> {
        let mut node = None;
        let mut metadata = Vec::new();
        if let Some(n) = self
            .zone
            .catalog
            .get_node_by_id(r.node_id.unwrap_or(NodeId(-1)))
            .await?
        {
            metadata = self.zone.catalog.list_avus(n.id).await?;
            let replicas = match n.kind {
                NodeKind::Object => self.replicas_of(n.id).await?,
                NodeKind::Collection => Vec::new(),
            };
            node = Some(NodeInfo {
                node: n,
                replicas,
                pid: None,
                access: None,
            });
        }
        Ok(PidInfo {
            pid: format!("{}/{}", r.prefix, r.suffix),
            path: r.path,
            node,
            metadata,
            created: r.created,
            removed: r.removed,
        })
    }
}

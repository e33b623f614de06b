//! Metadata (AVUs) and search.

use crate::namespace::MAX_PAGE;
use crate::{Caller, Zone};
use weft_catalog::{Avu, FindQuery, Node};
use weft_types::meta::validate_avu_part;
use weft_types::{Error, LogicalPath, NodeKind, Permission};

pub enum MetaEdit {
    Add(Avu),
    Set(Avu),
    Remove { attr: String, value: Option<String> },
}

impl Zone {
    pub async fn edit_meta(&self, caller: &Caller, path: &LogicalPath, edit: MetaEdit) -> Result<(), Error> {
        let node = self.node(path).await?;
        self.require(caller, path, Permission::Write).await?;
        match edit {
            MetaEdit::Add(avu) => {
                self.validate(node.id, &avu, true).await?;
                self.catalog.add_avu(node.id, &avu).await
            }
            MetaEdit::Set(avu) => {
                self.validate(node.id, &avu, false).await?;
                self.catalog.set_avu(node.id, &avu).await
            }
            MetaEdit::Remove { attr, value } => {
                self.catalog.remove_avu(node.id, &attr, value.as_deref()).await
            }
        }
    }

    pub async fn list_meta(&self, caller: &Caller, path: &LogicalPath) -> Result<Vec<Avu>, Error> {
        let node = self.node(path).await?;
        self.require(caller, path, Permission::Read).await?;
        self.catalog.list_avus(node.id).await
    }

    /// Searches below `q.root`. Results the caller may not read are left out.
    /// Every data object below `root` the caller may see, with its path relative to
    /// `root`, page after page (a transfer's listing of a collection).
    pub(crate) async fn objects_below(
        &self,
        caller: &Caller,
        root: &LogicalPath,
    ) -> Result<Vec<(String, Node)>, Error> {
        let prefix = format!("{root}/");
        let mut out = Vec::new();
        let mut after_id = None;
        loop {
            let q = FindQuery {
                root: root.clone(),
                name_glob: None,
                meta: Vec::new(),
                kind: Some(NodeKind::Object),
                after_id,
                limit: 10_000,
            };
            let (nodes, next) = self.find(caller, q).await?;
            out.extend(nodes.into_iter().map(|n| {
                let rel = n
                    .path
                    .as_str()
                    .strip_prefix(&prefix)
                    .unwrap_or(n.path.name())
                    .to_owned();
                (rel, n)
            }));
            match next.and_then(|c| c.parse().ok()) {
                Some(c) => after_id = Some(c),
                None => return Ok(out),
            }
        }
    }

    pub async fn find(
        &self,
        caller: &Caller,
        mut q: FindQuery,
    ) -> Result<(Vec<Node>, Option<String>), Error> {
        self.node(&q.root).await?;
        self.require(caller, &q.root, Permission::Read).await?;
        for c in &q.meta {
            c.validate()?;
        }
        q.limit = q.limit.clamp(1, MAX_PAGE);
        let found = self.catalog.find(&q).await?;
        let next = (found.len() as u32 == q.limit).then(|| found.last().expect("non-empty").id.to_string());
        let mut visible = Vec::with_capacity(found.len());
        for n in found {
            if caller.is_admin || self.require(caller, &n.path, Permission::Read).await.is_ok() {
                visible.push(n);
            }
        }
        Ok((visible, next))
    }
}

impl Zone {
    /// Checks an AVU about to be added (`add`) or set on node `node_id`; `datacite.*`
    /// attributes are also checked as DataCite fields.
    async fn validate(&self, node_id: i64, avu: &Avu, add: bool) -> Result<(), Error> {
        validate_avu_part("attribute", &avu.attr)?;
        validate_avu_part("value", &avu.value)?;
        validate_avu_part("unit", &avu.unit)?;
        if avu.attr.starts_with(crate::datacite::PREFIX) {
            let existing = self.catalog.list_avus(node_id).await?;
            crate::datacite::check(avu, add, &existing)?;
        }
        Ok(())
    }
}

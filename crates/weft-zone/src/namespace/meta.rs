//! Metadata (AVUs) and search.

use super::Namespace;
use crate::namespace::tree::MAX_PAGE;
use crate::Caller;
use weft_catalog::{Avu, FindQuery, ListedObject, MetaEdit, Node, NodeId};
use weft_types::meta::validate_avu_part;
use weft_types::{Error, LogicalPath, NodeKind, Permission};

impl Namespace<'_> {
    pub async fn edit_meta(self, caller: &Caller, path: &LogicalPath, edit: MetaEdit) -> Result<(), Error> {
        self.edit_meta_many(caller, path, vec![edit]).await
    }

    /// Applies `edits` in order, all or none: one catalog transaction, so a thousand
    /// attributes cost one request and one commit (the bulk metadata of Hünich & Müller-Pfefferkorn, §IV-B).
    pub async fn edit_meta_many(
        self,
        caller: &Caller,
        path: &LogicalPath,
        edits: Vec<MetaEdit>,
    ) -> Result<(), Error> {
        let node = self.node_as(caller, path, Permission::Write).await?;
        for (i, e) in edits.iter().enumerate() {
            let checked = match e {
                MetaEdit::Add(avu) => self.validate(node.id, avu, true).await,
                MetaEdit::Set(avu) => self.validate(node.id, avu, false).await,
                MetaEdit::Remove { .. } => Ok(()),
            };
            checked.map_err(|err| at_edit(err, i, edits.len()))?;
        }
        self.zone.catalog.edit_avus(node.id, &edits).await.map_err(|err| {
            if edits.len() > 1 {
                Error::new(err.code, format!("{}; nothing was changed", err.message))
            } else {
                err
            }
        })
    }

    pub async fn list_meta(self, caller: &Caller, path: &LogicalPath) -> Result<Vec<Avu>, Error> {
        let node = self.node_as(caller, path, Permission::Read).await?;
        self.zone.catalog.list_avus(node.id).await
    }

    /// Every data object below `root`, with its path relative to `root`, size and
    /// checksum, listed by path a page at a time: what a transfer moves. The caller must
    /// be allowed to read `root`, and so everything below it.
    pub(crate) async fn listed_below(
        self,
        caller: &Caller,
        root: &LogicalPath,
    ) -> Result<Vec<(String, ListedObject)>, Error> {
        const PAGE: u32 = 10_000;
        self.node_as(caller, root, Permission::Read).await?;
        let prefix = format!("{root}/");
        let mut out: Vec<(String, ListedObject)> = Vec::new();
        loop {
            let after = out.last().map(|(_, o)| o.path.clone());
            let page = self
                .zone
                .catalog
                .objects_below(root, after.as_deref(), PAGE)
                .await?;
            let full = page.len() == PAGE as usize;
            out.extend(page.into_iter().map(|o| {
                let rel = o.path.strip_prefix(&prefix).unwrap_or(&o.path).to_owned();
                (rel, o)
            }));
            if !full {
                return Ok(out);
            }
        }
    }

    /// Every data object below `root` the caller may see, with its path relative to
    /// `root`, page after page.
    pub(crate) async fn objects_below(
        self,
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

    /// Searches below `q.root`, which the caller must be allowed to read (and so everything
    /// below it).
    pub async fn find(self, caller: &Caller, mut q: FindQuery) -> Result<(Vec<Node>, Option<String>), Error> {
        self.node_as(caller, &q.root, Permission::Read).await?;
        for c in &q.meta {
            c.validate()?;
        }
        q.limit = q.limit.clamp(1, MAX_PAGE);
        // Everything found lies below the root, and a permission only grows downwards
        // (inherited from every collection above): who may read the root may read it all.
        let found = self.zone.catalog.find(&q).await?;
        let next = (found.len() as u32 == q.limit).then(|| found.last().expect("non-empty").id.to_string());
        Ok((found, next))
    }
}

impl Namespace<'_> {
    /// Checks an AVU about to be added (`add`) or set on node `node_id`; `datacite.*`
    /// attributes are also checked as DataCite fields.
    async fn validate(self, node_id: NodeId, avu: &Avu, add: bool) -> Result<(), Error> {
        validate_avu_part("attribute", &avu.attr)?;
        validate_avu_part("value", &avu.value)?;
        validate_avu_part("unit", &avu.unit)?;
        if avu.attr.starts_with(crate::namespace::datacite::PREFIX) {
            let existing = self.zone.catalog.list_avus(node_id).await?;
            crate::namespace::datacite::check(avu, add, &existing)?;
        }
        Ok(())
    }
}

/// Names the edit an error is about when there are several.
fn at_edit(err: Error, index: usize, count: usize) -> Error {
    if count == 1 {
        return err;
    }
    Error::new(
        err.code,
        format!(
            "edit {} of {count}: {}; nothing was changed",
            index + 1,
            err.message
        ),
    )
}

//! Open directories: the zone's listing read a page at a time as the kernel asks for
//! more, so that a collection of a million entries is never held whole. A directory
//! offset is the index of a child plus 2 (`.` and `..` come first); the cursor of each
//! page start read so far is kept, so that a program going back (`seekdir`) reads again
//! from the nearest page.

use crate::errno::{Errno, FsResult};
use std::collections::BTreeMap;
use weft_client::{Client, PAGE_LIMIT};
use weft_types::wire::NodeStat;
use weft_types::LogicalPath;

/// The offsets `.` and `..` take.
pub const DOTS: u64 = 2;

#[derive(Debug, Clone)]
pub struct DirEntry {
    pub name: String,
    pub path: LogicalPath,
    pub stat: NodeStat,
    /// The offset to ask for to continue after this entry.
    pub next: u64,
}

pub struct Listing {
    path: LogicalPath,
    /// The index of the first child of `page`.
    page_start: usize,
    page: Vec<NodeStat>,
    loaded: bool,
    /// Whether pages come after the one held.
    more: bool,
    /// The cursor that lists from a child index on (`None`: from the first).
    cursors: BTreeMap<usize, Option<String>>,
}

impl Listing {
    pub fn new(path: LogicalPath) -> Listing {
        let mut cursors = BTreeMap::new();
        cursors.insert(0, None);
        Listing {
            path,
            page_start: 0,
            page: Vec::new(),
            loaded: false,
            more: true,
            cursors,
        }
    }

    pub fn path(&self) -> &LogicalPath {
        &self.path
    }

    /// Whether the last page is the one held: no children come after it.
    pub fn at_end(&self) -> bool {
        self.loaded && !self.more
    }

    /// The index after the last child of the page held.
    pub fn end(&self) -> usize {
        self.page_start + self.page.len()
    }

    /// The children from the directory offset `offset` to the end of their page.
    pub async fn from(&mut self, client: &Client, offset: u64) -> FsResult<Vec<DirEntry>> {
        let start = offset.saturating_sub(DOTS) as usize;
        if !(self.loaded && (self.page_start..=self.end()).contains(&start)) {
            // The nearest page start at or before `start` whose cursor is known.
            let (&at, _) = self
                .cursors
                .range(..=start)
                .next_back()
                .expect("the first page's cursor is always known");
            self.load(client, at).await?;
        }
        while start >= self.end() && !self.at_end() {
            self.load(client, self.end()).await?;
        }
        let from = start.saturating_sub(self.page_start).min(self.page.len());
        let mut out = Vec::with_capacity(self.page.len() - from);
        for (i, stat) in self.page.iter().enumerate().skip(from) {
            let path = self.path.join(&stat.name).map_err(|e| Errno::of_error(&e))?;
            out.push(DirEntry {
                name: stat.name.clone(),
                path,
                stat: stat.clone(),
                next: (self.page_start + i) as u64 + DOTS + 1,
            });
        }
        Ok(out)
    }

    async fn load(&mut self, client: &Client, at: usize) -> FsResult<()> {
        let cursor = self.cursors.get(&at).cloned().ok_or(Errno::EIO)?;
        let page = client
            .list(&self.path, cursor.as_deref(), Some(PAGE_LIMIT))
            .await
            .map_err(|e| Errno::of_client(&e))?;
        self.page_start = at;
        self.page = page.items;
        self.loaded = true;
        self.more = false;
        if let Some(next) = page.next_cursor {
            if !self.page.is_empty() {
                self.more = true;
                self.cursors.insert(self.end(), Some(next));
            }
        }
        Ok(())
    }
}

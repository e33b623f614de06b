//! Inode numbers for the kernel: each logical path the kernel has looked up gets one, kept
//! until the kernel forgets it; with each, the zone's answer about it for a short while
//! (the attribute cache), so that `ls -l` of a collection is one listing, not a stat per
//! entry.

use std::collections::HashMap;
use std::time::{Duration, Instant};
use weft_types::wire::NodeStat;
use weft_types::LogicalPath;

pub const ROOT: u64 = 1;

struct Node {
    path: LogicalPath,
    /// How many times the kernel was told of this inode and has not forgotten it yet.
    lookups: u64,
    stat: Option<(NodeStat, Instant)>,
}

pub struct Inodes {
    next: u64,
    by_ino: HashMap<u64, Node>,
    by_path: HashMap<LogicalPath, u64>,
    ttl: Duration,
}

impl Inodes {
    pub fn new(root: LogicalPath, ttl: Duration) -> Inodes {
        let mut t = Inodes {
            next: ROOT + 1,
            by_ino: HashMap::new(),
            by_path: HashMap::new(),
            ttl,
        };
        t.by_path.insert(root.clone(), ROOT);
        t.by_ino.insert(
            ROOT,
            Node {
                path: root,
                lookups: 1,
                stat: None,
            },
        );
        t
    }

    pub fn path(&self, ino: u64) -> Option<LogicalPath> {
        self.by_ino.get(&ino).map(|n| n.path.clone())
    }

    /// The inode of `path`, made if new, the kernel now told of it once more.
    pub fn remember(&mut self, path: &LogicalPath, stat: Option<NodeStat>) -> u64 {
        let ino = match self.by_path.get(path) {
            Some(&ino) => ino,
            None => {
                let ino = self.next;
                self.next += 1;
                self.by_path.insert(path.clone(), ino);
                self.by_ino.insert(
                    ino,
                    Node {
                        path: path.clone(),
                        lookups: 0,
                        stat: None,
                    },
                );
                ino
            }
        };
        let node = self.by_ino.get_mut(&ino).expect("just found or made");
        node.lookups += 1;
        if let Some(s) = stat {
            node.stat = Some((s, Instant::now()));
        }
        ino
    }

    /// The kernel dropped `n` of its references; at none the inode is gone.
    pub fn forget(&mut self, ino: u64, n: u64) {
        if ino == ROOT {
            return;
        }
        let Some(node) = self.by_ino.get_mut(&ino) else {
            return;
        };
        node.lookups = node.lookups.saturating_sub(n);
        if node.lookups == 0 {
            let path = node.path.clone();
            self.by_ino.remove(&ino);
            if self.by_path.get(&path) == Some(&ino) {
                self.by_path.remove(&path);
            }
        }
    }

    /// The cached stat of `ino`, if recent enough.
    pub fn cached(&self, ino: u64) -> Option<NodeStat> {
        let (stat, at) = self.by_ino.get(&ino)?.stat.as_ref()?;
        (at.elapsed() < self.ttl).then(|| stat.clone())
    }

    /// The last stat of `path`, however old (what it says of permissions changes seldom).
    pub fn cached_path(&self, path: &LogicalPath) -> Option<NodeStat> {
        let ino = self.by_path.get(path)?;
        self.by_ino.get(ino)?.stat.as_ref().map(|(s, _)| s.clone())
    }

    pub fn cache(&mut self, ino: u64, stat: NodeStat) {
        if let Some(node) = self.by_ino.get_mut(&ino) {
            node.stat = Some((stat, Instant::now()));
        }
    }

    /// Forgets what the zone said of `path` (this mount changed it).
    pub fn invalidate(&mut self, path: &LogicalPath) {
        if let Some(node) = self.by_path.get(path).and_then(|ino| self.by_ino.get_mut(ino)) {
            node.stat = None;
        }
    }

    /// `path` and everything below it now live under `to`.
    pub fn renamed(&mut self, from: &LogicalPath, to: &LogicalPath) {
        // A node the rename replaced is gone: its inode no longer names a path.
        if let Some(old) = self.by_path.remove(to) {
            self.by_ino.remove(&old);
        }
        let moved: Vec<(LogicalPath, u64)> = self
            .by_path
            .iter()
            .filter(|(p, _)| p.starts_with(from))
            .map(|(p, &ino)| (p.clone(), ino))
            .collect();
        for (old, ino) in moved {
            let Some(new) = old.rebase(from, to) else { continue };
            self.by_path.remove(&old);
            self.by_path.insert(new.clone(), ino);
            if let Some(node) = self.by_ino.get_mut(&ino) {
                node.path = new;
                node.stat = None;
            }
        }
    }

    /// `path` was removed: a later lookup of the name must ask the zone again.
    pub fn removed(&mut self, path: &LogicalPath) {
        if let Some(ino) = self.by_path.remove(path) {
            if let Some(node) = self.by_ino.get_mut(&ino) {
                node.stat = None;
            }
        }
    }

    pub fn len(&self) -> usize {
        self.by_ino.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> LogicalPath {
        LogicalPath::parse(s).unwrap()
    }

    #[test]
    fn an_inode_lives_until_the_kernel_forgets_every_lookup() {
        let mut t = Inodes::new(p("/z/home"), Duration::from_secs(1));
        let a = t.remember(&p("/z/home/a"), None);
        assert_eq!(t.remember(&p("/z/home/a"), None), a);
        t.forget(a, 1);
        assert_eq!(t.path(a), Some(p("/z/home/a")));
        t.forget(a, 1);
        assert_eq!(t.path(a), None);
        assert_ne!(
            t.remember(&p("/z/home/a"), None),
            a,
            "a new inode, not a reused one"
        );
        t.forget(ROOT, 10);
        assert_eq!(t.path(ROOT), Some(p("/z/home")));
    }

    #[test]
    fn a_rename_moves_the_subtree_and_drops_the_replaced_node() {
        let mut t = Inodes::new(p("/z/h"), Duration::from_secs(1));
        let d = t.remember(&p("/z/h/d"), None);
        let f = t.remember(&p("/z/h/d/f"), None);
        let old = t.remember(&p("/z/h/e"), None);
        t.renamed(&p("/z/h/d"), &p("/z/h/e"));
        assert_eq!(t.path(d), Some(p("/z/h/e")));
        assert_eq!(t.path(f), Some(p("/z/h/e/f")));
        assert_eq!(t.path(old), None);
        let dd = t.remember(&p("/z/h/dd"), None);
        t.renamed(&p("/z/h/e"), &p("/z/h/x"));
        assert_eq!(t.path(dd), Some(p("/z/h/dd")), "a sibling sharing a prefix stays");
    }
}

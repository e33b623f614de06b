//! When a file an instrument writes is complete. Nothing on a shared file system says so
//! reliably (NFS and SMB lose close events), so a file is taken when it has stopped
//! changing: its size and modification time the same for the settle time, or, at first
//! sight, last modified at least that long ago. An instrument that writes a marker when
//! a file is complete (`X.done` for `X`) is believed instead, and nothing else is taken.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// How a file is known to be complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ready {
    /// Unchanged for this long.
    Settled(Duration),
    /// A marker names it: the pattern's `*` is the file's name (`*.done`: `X.done` names
    /// `X`, in the same directory).
    Marker(MarkerPattern),
}

/// A marker file's name with one `*` standing for the name of the file it declares
/// complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerPattern {
    prefix: String,
    suffix: String,
}

impl MarkerPattern {
    /// `*.done`, `done.*`, `.*.ready`. Errors: not exactly one `*`, a `/`, nothing
    /// around the `*` (every file would be a marker).
    pub fn parse(pattern: &str) -> Result<MarkerPattern, String> {
        let mut parts = pattern.split('*');
        let (Some(prefix), Some(suffix), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format!(
                "{pattern:?}: a marker pattern has exactly one *, as in '*.done'"
            ));
        };
        if pattern.contains('/') {
            return Err(format!(
                "{pattern:?}: a marker names a file in its own directory: no /"
            ));
        }
        if prefix.is_empty() && suffix.is_empty() {
            return Err(format!("{pattern:?}: every file would be a marker; say '*.done'"));
        }
        Ok(MarkerPattern {
            prefix: prefix.to_owned(),
            suffix: suffix.to_owned(),
        })
    }

    /// The file `marker` declares complete, if `marker` is a marker.
    pub fn names(&self, marker: &Path) -> Option<PathBuf> {
        let name = marker.file_name()?.to_str()?;
        let inner = name.strip_prefix(&self.prefix)?.strip_suffix(&self.suffix)?;
        (!inner.is_empty()).then(|| marker.with_file_name(inner))
    }

    /// The marker of `file`.
    pub fn marker_of(&self, file: &Path) -> Option<PathBuf> {
        let name = file.file_name()?.to_str()?;
        Some(file.with_file_name(format!("{}{name}{}", self.prefix, self.suffix)))
    }
}

/// What a look at a file found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Look {
    pub size: u64,
    pub modified: SystemTime,
}

struct Seen {
    look: Look,
    since: Instant,
}

/// The files seen and not yet complete, by the time each was last seen to change.
pub struct Settler {
    quiet: Duration,
    seen: HashMap<PathBuf, Seen>,
}

impl Settler {
    pub fn new(quiet: Duration) -> Settler {
        Settler {
            quiet,
            seen: HashMap::new(),
        }
    }

    /// Records a look at `path` at `now` (and the wall clock `wall`); whether the file is
    /// complete. A file that changed starts its wait again.
    pub fn observe(&mut self, path: &Path, look: Look, now: Instant, wall: SystemTime) -> bool {
        match self.seen.get_mut(path) {
            Some(s) if s.look == look => now.duration_since(s.since) >= self.quiet,
            Some(s) => {
                *s = Seen { look, since: now };
                self.quiet.is_zero()
            }
            None => {
                // Last modified long enough ago: complete at first sight (a restart, or
                // `--once` from cron). A modification time in the future (another
                // machine's clock) counts as now.
                let age = wall.duration_since(look.modified).unwrap_or_default();
                if age >= self.quiet {
                    return true;
                }
                self.seen.insert(path.to_owned(), Seen { look, since: now });
                false
            }
        }
    }

    /// `path` is taken, or gone.
    pub fn forget(&mut self, path: &Path) {
        self.seen.remove(path);
    }

    /// The files waiting to settle.
    pub fn waiting(&self) -> impl Iterator<Item = &Path> {
        self.seen.keys().map(PathBuf::as_path)
    }

    pub fn waiting_count(&self) -> usize {
        self.seen.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn look(size: u64, secs: u64) -> Look {
        Look {
            size,
            modified: SystemTime::UNIX_EPOCH + Duration::from_secs(secs),
        }
    }

    #[test]
    fn a_file_is_complete_once_unchanged_for_the_settle_time() {
        let mut s = Settler::new(Duration::from_secs(10));
        let t0 = Instant::now();
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let p = Path::new("/i/movie_001.mrc");
        assert!(!s.observe(p, look(100, 999), t0, wall), "fresh");
        assert!(!s.observe(p, look(100, 999), t0 + Duration::from_secs(9), wall));
        // It grew: the wait starts again.
        assert!(!s.observe(p, look(200, 1008), t0 + Duration::from_secs(9), wall));
        assert!(!s.observe(p, look(200, 1008), t0 + Duration::from_secs(18), wall));
        assert!(s.observe(p, look(200, 1008), t0 + Duration::from_secs(19), wall));
        assert_eq!(s.waiting_count(), 1, "until it is taken");
        s.forget(p);
        assert_eq!(s.waiting_count(), 0);
    }

    #[test]
    fn an_old_file_is_complete_at_first_sight_and_a_future_one_is_not() {
        let mut s = Settler::new(Duration::from_secs(10));
        let t0 = Instant::now();
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        assert!(s.observe(Path::new("/old"), look(1, 990), t0, wall));
        assert!(!s.observe(Path::new("/skewed"), look(1, 5000), t0, wall));
        assert_eq!(s.waiting().collect::<Vec<_>>(), [Path::new("/skewed")]);
    }

    #[test]
    fn markers_name_their_file_and_bad_patterns_are_refused() {
        let m = MarkerPattern::parse("*.done").unwrap();
        assert_eq!(
            m.names(Path::new("/i/a.mrc.done")),
            Some(PathBuf::from("/i/a.mrc"))
        );
        assert_eq!(m.names(Path::new("/i/a.mrc")), None);
        assert_eq!(m.names(Path::new("/i/.done")), None, "names no file");
        assert_eq!(
            m.marker_of(Path::new("/i/a.mrc")),
            Some(PathBuf::from("/i/a.mrc.done"))
        );
        let p = MarkerPattern::parse("ready-*").unwrap();
        assert_eq!(p.names(Path::new("ready-x")), Some(PathBuf::from("x")));
        for bad in ["*", "done", "*.a*", "d/*.done"] {
            assert!(MarkerPattern::parse(bad).is_err(), "{bad}");
        }
    }
}

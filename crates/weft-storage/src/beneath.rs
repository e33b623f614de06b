//! Names resolved beneath a store's root directory, never through a symbolic link.
//!
//! A staging area is a directory its users can write into, and the zone reads and writes it
//! as its own service account: checking a path for links and then opening it by name would
//! let a user swap a directory for a link in between and point the zone at its own
//! `admin.token` or catalog. So every lookup starts at the root's descriptor and is done by
//! the kernel in one step that refuses links and any way out of the root (`openat2` with
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`); directories are created, files linked into
//! place, renamed and removed relative to a descriptor of their parent obtained that way.
//! The root's own path is the administrator's and may pass through links (`/scratch` is
//! often one on a cluster). Resources use the same code: it costs what an `open` costs.

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use weft_types::Error;

const RESOLVE: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS);

/// How the files and directories a store creates are shared: a resource's are the zone's
/// alone; a staging area's are for the users of the file system it lies on, as their
/// umask decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sharing {
    Private,
    Shared,
}

impl Sharing {
    pub fn file_mode(self) -> Mode {
        match self {
            Sharing::Private => Mode::from_raw_mode(0o600),
            Sharing::Shared => Mode::from_raw_mode(0o644),
        }
    }

    pub fn dir_mode(self) -> Mode {
        match self {
            Sharing::Private => Mode::from_raw_mode(0o700),
            Sharing::Shared => Mode::from_raw_mode(0o755),
        }
    }
}

/// A store's root directory, opened once and kept open.
pub(crate) struct Root {
    path: PathBuf,
    sharing: Sharing,
    fd: Mutex<Option<Arc<OwnedFd>>>,
}

/// A directory beneath a root, open, with the path it was reached by (for messages).
pub(crate) struct DirAt {
    pub fd: Arc<OwnedFd>,
    pub path: PathBuf,
}

impl Root {
    pub fn new(path: PathBuf, sharing: Sharing) -> Root {
        Root {
            path,
            sharing,
            fd: Mutex::new(None),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn sharing(&self) -> Sharing {
        self.sharing
    }

    /// The root's descriptor, opened on first use; with `create`, the root is made first
    /// if it does not exist (a new resource).
    pub fn fd(&self, create: bool) -> io::Result<Arc<OwnedFd>> {
        let mut slot = self.fd.lock().expect("not poisoned");
        if let Some(fd) = &*slot {
            return Ok(fd.clone());
        }
        let open = || {
            rustix::fs::open(
                &self.path,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
        };
        let fd = match open() {
            Err(rustix::io::Errno::NOENT) if create => {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(self.sharing.dir_mode().as_raw_mode())
                    .create(&self.path)?;
                open()?
            }
            other => other?,
        };
        let fd = Arc::new(fd);
        *slot = Some(fd.clone());
        Ok(fd)
    }

    /// Opens the file `rel` beneath the root with `flags` (`O_CREAT` files get the store's
    /// mode).
    pub fn open(&self, rel: &str, flags: OFlags) -> io::Result<File> {
        let root = self.fd(flags.contains(OFlags::CREATE))?;
        // openat2 refuses a mode unless it creates a file.
        let mode = if flags.intersects(OFlags::CREATE | OFlags::TMPFILE) {
            self.sharing.file_mode()
        } else {
            Mode::empty()
        };
        let fd = openat2(&root, rel, flags | OFlags::CLOEXEC, mode)?;
        Ok(File::from(fd))
    }

    /// Opens the directory `rel` (`""`: the root), creating it and its parents beneath the
    /// root with `create`.
    pub fn dir(&self, rel: &str, create: bool) -> io::Result<DirAt> {
        let root = self.fd(create)?;
        let path = self.path.join(rel);
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let rel_or_dot = if rel.is_empty() { "." } else { rel };
        match openat2(&root, rel_or_dot, flags, Mode::empty()) {
            Ok(fd) => {
                return Ok(DirAt {
                    fd: Arc::new(fd),
                    path,
                })
            }
            Err(e) if create && e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        // One component at a time, each opened beneath the last: a component that turns
        // into a link while this runs is refused by the kernel, not followed.
        let mut at = root;
        for part in rel.split('/').filter(|p| !p.is_empty()) {
            match rustix::fs::mkdirat(&*at, part, self.sharing.dir_mode()) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(e.into()),
            }
            at = Arc::new(openat2(&at, part, flags, Mode::empty())?);
        }
        Ok(DirAt { fd: at, path })
    }

    /// What `rel` is (`""`: the root), without following a link at any step, the last
    /// included.
    pub fn stat(&self, rel: &str) -> io::Result<rustix::fs::Stat> {
        let root = self.fd(false)?;
        let rel = if rel.is_empty() { "." } else { rel };
        let fd = openat2(&root, rel, OFlags::PATH | OFlags::CLOEXEC, Mode::empty())?;
        Ok(rustix::fs::fstat(&fd)?)
    }

    /// Removes the file `rel` (its parent reached beneath the root).
    pub fn remove_file(&self, rel: &str) -> io::Result<()> {
        let (parent, name) = split(rel);
        let dir = self.dir(parent, false)?;
        Ok(rustix::fs::unlinkat(&*dir.fd, name, AtFlags::empty())?)
    }
}

/// `rel` as (its parent, its last component).
pub(crate) fn split(rel: &str) -> (&str, &str) {
    match rel.rsplit_once('/') {
        Some((parent, name)) => (parent, name),
        None => ("", rel),
    }
}

/// `openat2` beneath `dir`, links refused. The kernel answers `EAGAIN` when a rename
/// elsewhere raced the lookup; it is safe to ask again.
pub(crate) fn openat2(dir: &OwnedFd, rel: &str, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
    let mut tries = 0;
    loop {
        match rustix::fs::openat2(dir.as_fd(), rel, flags, mode, RESOLVE) {
            Err(rustix::io::Errno::AGAIN) if tries < 8 => tries += 1,
            Err(rustix::io::Errno::NOSYS) => {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "this kernel has no openat2 (Linux 5.6 or later is needed)",
                ))
            }
            other => return Ok(other?),
        }
    }
}

/// Whether an I/O error is the kernel refusing a link or a way out of the root.
pub(crate) fn is_refused_link(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::EXDEV))
}

/// The error for an I/O failure on `what` (a path): a refused link is `forbidden`, naming
/// the rule, anything else what [`crate::io_error`] makes of it.
pub(crate) fn error(what: &str, path: &Path, e: io::Error) -> Error {
    if is_refused_link(&e) {
        Error::forbidden(format!(
            "{} is or passes through a symbolic link; weft follows none inside a staging area",
            path.display()
        ))
    } else {
        crate::io_error(&format!("{what} {}", path.display()), e)
    }
}

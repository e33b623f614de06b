//! Files being written that nobody can see yet.
//!
//! Where the file system supports it (Linux ≥ 3.11: ext4, xfs, btrfs, tmpfs), a write goes
//! to an unnamed `O_TMPFILE` inode in the directory it will live in, and commit links it
//! into place. A crash at any point leaves nothing behind (the kernel frees the unnamed
//! inode), no rename crosses directories (renames across directories serialise on a
//! file-system-wide lock), and no shared temporary directory becomes a hot spot. Elsewhere
//! it is a named file in the resource's `.weft-tmp`, renamed into place and removed at the
//! next start if a crash left it.

use crate::beneath::{self, DirAt, Root};
use crate::fs::TMP_DIR;
use rustix::fs::{AtFlags, OFlags};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use weft_fileio::{FileWriter, SyncBehind};
use weft_types::{Error, ErrorCode};

pub(crate) struct Temp {
    pub file: Arc<File>,
    /// Flushes behind the writers, so that a durable publish waits for little; `None` for
    /// scratch files, which are read back and thrown away.
    sync: Option<Arc<SyncBehind>>,
    /// `None`: unnamed (`O_TMPFILE`) in `dir`; else the fallback directory and the name
    /// in it.
    named: Option<(DirAt, String)>,
    /// The directory the file is published in, held open since it was created, so that
    /// publishing resolves no path again.
    dir: DirAt,
}

impl Temp {
    /// A new temporary file of `size` bytes (0: grows as written) that will be published in
    /// the directory `dir` beneath `root` (made if missing), or in the root's `.weft-tmp` by
    /// name where the file system has no `O_TMPFILE`. A `scratch` file is never published,
    /// so its bytes are not pushed to disk while it is written.
    pub fn create(root: &Root, dir: &str, size: u64, scratch: bool) -> Result<Temp, Error> {
        let dir = root
            .dir(dir, true)
            .map_err(|e| beneath::error("cannot create", &root.path().join(dir), e))?;
        let mode = root.sharing().file_mode();
        let unnamed = rustix::fs::openat(
            &*dir.fd,
            ".",
            OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
            mode,
        );
        let (file, named) = match unnamed {
            Ok(fd) => (File::from(fd), None),
            Err(e) if unsupported(e) => {
                let tmp = root
                    .dir(TMP_DIR, true)
                    .map_err(|e| beneath::error("cannot create", &root.path().join(TMP_DIR), e))?;
                let name = uuid::Uuid::new_v4().simple().to_string();
                let fd = rustix::fs::openat(
                    &*tmp.fd,
                    name.as_str(),
                    OFlags::CREATE | OFlags::EXCL | OFlags::RDWR | OFlags::CLOEXEC | OFlags::NOFOLLOW,
                    mode,
                )
                .map_err(|e| beneath::error("cannot create", &tmp.path.join(&name), e.into()))?;
                (File::from(fd), Some((tmp, name)))
            }
            Err(e) => return Err(beneath::error("cannot create a file in", &dir.path, e.into())),
        };
        let file = Arc::new(file);
        let temp = Temp {
            sync: (!scratch).then(|| Arc::new(SyncBehind::new(file.clone()))),
            file,
            named,
            dir,
        };
        if size > 0 {
            if let Err(e) = allocate(&temp.file, size) {
                temp.discard();
                let e_code = e.raw_os_error();
                let mut err = crate::io_error(&format!("cannot size {}", temp.describe()), e);
                // A size the file system cannot hold is the request's fault, not the
                // storage's: a 400, where it was a 500 (found by weft-api's tests/hostile.rs).
                if err.code == ErrorCode::StorageError
                    && matches!(e_code, Some(libc::EFBIG) | Some(libc::EINVAL))
                {
                    err.code = ErrorCode::InvalidArgument;
                    err.message = format!("{}: a file of {size} bytes is more than it can hold", err.message);
                }
                return Err(err);
            }
        }
        Ok(temp)
    }

    /// Creates `name` in the root's `.weft-tmp`, `size` bytes allocated: where an upload in
    /// pieces keeps them, which every server of the zone reopens by that name (see
    /// [`Temp::reopen`]) until one publishes it.
    pub fn create_staged(root: &Root, name: &str, size: u64) -> Result<(), Error> {
        let tmp = root
            .dir(TMP_DIR, true)
            .map_err(|e| beneath::error("cannot create", &root.path().join(TMP_DIR), e))?;
        let fd = rustix::fs::openat(
            &*tmp.fd,
            staged_name(name)?,
            OFlags::CREATE | OFlags::EXCL | OFlags::RDWR | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            root.sharing().file_mode(),
        )
        .map_err(|e| beneath::error("cannot create", &tmp.path.join(name), e.into()))?;
        let file = File::from(fd);
        if let Err(e) = allocate(&file, size) {
            let _ = rustix::fs::unlinkat(&*tmp.fd, name, AtFlags::empty());
            return Err(crate::io_error(
                &format!("cannot size {}", tmp.path.join(name).display()),
                e,
            ));
        }
        Ok(())
    }

    /// The file `name` of the root's `.weft-tmp` made by [`Temp::create_staged`], to be
    /// published in `dir`. `not_found` if it is gone.
    pub fn reopen(root: &Root, name: &str, dir: &str) -> Result<Temp, Error> {
        let tmp = root
            .dir(TMP_DIR, false)
            .map_err(|e| beneath::error("cannot open", &root.path().join(TMP_DIR), e))?;
        let fd = rustix::fs::openat(
            &*tmp.fd,
            staged_name(name)?,
            OFlags::RDWR | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            rustix::fs::Mode::empty(),
        )
        .map_err(|e| {
            let path = tmp.path.join(name);
            match e {
                rustix::io::Errno::NOENT => Error::not_found(format!("the staged file {}", path.display())),
                e => beneath::error("cannot open", &path, e.into()),
            }
        })?;
        let dir = root
            .dir(dir, true)
            .map_err(|e| beneath::error("cannot create", &root.path().join(dir), e))?;
        let file = Arc::new(File::from(fd));
        Ok(Temp {
            sync: Some(Arc::new(SyncBehind::new(file.clone()))),
            file,
            named: Some((tmp, name.to_owned())),
            dir,
        })
    }

    /// Makes every byte written so far durable.
    pub fn sync(&self) -> Result<(), Error> {
        match &self.sync {
            Some(sync) => sync.finish(),
            None => self.file.sync_data(),
        }
        .map_err(|e| crate::io_error(&format!("cannot sync {}", self.describe()), e))
    }

    /// The writer thread of this file, `depth` calls queued at most; it flushes behind
    /// itself unless this is a scratch file.
    pub fn writer(&self, depth: usize) -> FileWriter {
        FileWriter::start(self.file.clone(), self.sync.clone(), depth)
    }

    /// Writer threads that write aligned buffers direct to the device (see `FileWriter`).
    pub fn direct_writer(&self, depth: usize, threads: usize) -> FileWriter {
        FileWriter::start_direct(self.file.clone(), self.sync.clone(), depth, threads)
    }

    /// A failed write of this file, as the storage error that names it.
    pub fn write_error(&self, e: std::io::Error) -> Error {
        crate::io_error(&format!("cannot write {}", self.describe()), e)
    }

    pub fn describe(&self) -> String {
        match &self.named {
            Some((tmp, name)) => tmp.path.join(name).display().to_string(),
            None => format!("a new file in {}", self.dir.path.display()),
        }
    }

    /// Makes the file visible as `name` in its directory, durable first if asked. A file
    /// already there is replaced atomically (staging areas overwrite; replicas always get
    /// fresh keys); a link there is replaced, never followed.
    pub fn publish(&self, name: &str, durable: bool) -> Result<(), Error> {
        if durable {
            self.sync()?;
        }
        let dir = &*self.dir.fd;
        let r = match &self.named {
            Some((tmp, tmp_name)) => rustix::fs::renameat(&*tmp.fd, tmp_name.as_str(), dir, name),
            None => match link_unnamed(&self.file, dir, name) {
                Err(rustix::io::Errno::EXIST) => {
                    // linkat never replaces: link under a hidden name, then rename over.
                    let aside = format!(".weft-{}.tmp", uuid::Uuid::new_v4().simple());
                    link_unnamed(&self.file, dir, &aside).and_then(|()| {
                        rustix::fs::renameat(dir, aside.as_str(), dir, name).inspect_err(|_| {
                            let _ = rustix::fs::unlinkat(dir, aside.as_str(), AtFlags::empty());
                        })
                    })
                }
                other => other,
            },
        };
        let target = self.dir.path.join(name);
        r.map_err(|e| {
            beneath::error(
                &format!("cannot move {} into place at", self.describe()),
                &target,
                e.into(),
            )
        })?;
        if durable {
            // The new directory entry must survive a crash as much as the bytes.
            rustix::fs::fsync(dir).map_err(|e| {
                crate::io_error(&format!("cannot sync {}", self.dir.path.display()), e.into())
            })?;
        }
        Ok(())
    }

    /// Allocates bytes `range` of the file, growing it as needed (see [`allocate`]): a
    /// part written in place meets a full disk before its first byte.
    pub fn allocate_range(&self, range: std::ops::Range<u64>) -> Result<(), Error> {
        allocate_at(&self.file, range.start, range.end - range.start)
            .map_err(|e| crate::io_error(&format!("cannot size {}", self.describe()), e))
    }

    /// Cuts the file to `size`, makes it durable and links it as `name` in its directory,
    /// keeping its staged name: a completion that fails after this removes `name` and the
    /// staged file still holds what it held.
    pub fn link(&self, name: &str, size: u64) -> Result<(), Error> {
        let Some((tmp, tmp_name)) = &self.named else {
            return Err(Error::internal("only a staged file can be linked"));
        };
        self.file
            .set_len(size)
            .map_err(|e| crate::io_error(&format!("cannot cut {} to {size} bytes", self.describe()), e))?;
        self.sync()?;
        let dir = &*self.dir.fd;
        let target = self.dir.path.join(name);
        rustix::fs::linkat(&*tmp.fd, tmp_name.as_str(), dir, name, AtFlags::empty()).map_err(|e| {
            beneath::error(
                &format!("cannot link {} into place at", self.describe()),
                &target,
                e.into(),
            )
        })?;
        rustix::fs::fsync(dir)
            .map_err(|e| crate::io_error(&format!("cannot sync {}", self.dir.path.display()), e.into()))
    }

    /// Throws the file away (an unnamed one vanishes when its last descriptor closes).
    pub fn discard(&self) {
        if let Some((tmp, name)) = &self.named {
            let _ = rustix::fs::unlinkat(&*tmp.fd, name.as_str(), AtFlags::empty());
        }
    }
}

/// Sets the file's size to `size`, with its blocks allocated where the file system can:
/// a full disk fails here, before any byte is received, and direct writes into allocated
/// (unwritten) blocks run in parallel, where writes into holes are serialised by ext4.
fn allocate(file: &File, size: u64) -> std::io::Result<()> {
    allocate_at(file, 0, size)
}

fn allocate_at(file: &File, offset: u64, len: u64) -> std::io::Result<()> {
    if len == 0 {
        return Ok(());
    }
    // SAFETY: a valid descriptor; fallocate only changes the file's allocation.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, offset as libc::off_t, len as libc::off_t) };
    if rc == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) if file.metadata()?.len() < offset + len => file.set_len(offset + len),
        Some(libc::EOPNOTSUPP) => Ok(()),
        _ => Err(e),
    }
}

/// Names of staged files: [`STAGED_PREFIX`] and no more than a file name.
pub(crate) const STAGED_PREFIX: &str = "up-";

fn staged_name(name: &str) -> Result<&str, Error> {
    let plain = name.len() > STAGED_PREFIX.len()
        && name.starts_with(STAGED_PREFIX)
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    match plain {
        true => Ok(name),
        false => Err(Error::internal(format!("invalid staged file name {name:?}"))),
    }
}

fn unsupported(e: rustix::io::Errno) -> bool {
    matches!(
        e,
        rustix::io::Errno::OPNOTSUPP | rustix::io::Errno::ISDIR | rustix::io::Errno::INVAL
    )
}

/// `linkat` of an `O_TMPFILE` descriptor through `/proc/self/fd`, which needs no privilege
/// (unlike `AT_EMPTY_PATH`); the magic link is this process's own descriptor, and the new
/// name is created in `dir`, not looked up through a path.
fn link_unnamed(file: &File, dir: &std::os::fd::OwnedFd, name: &str) -> rustix::io::Result<()> {
    let from = format!("/proc/self/fd/{}", file.as_raw_fd());
    rustix::fs::linkat(rustix::fs::CWD, from.as_str(), dir, name, AtFlags::SYMLINK_FOLLOW)
}

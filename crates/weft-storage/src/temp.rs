//! Files being written that nobody can see yet.
//!
//! Where the file system supports it (Linux ≥ 3.11: ext4, xfs, btrfs, tmpfs), a write goes
//! to an unnamed `O_TMPFILE` inode in the directory it will live in, and commit links it
//! into place. A crash at any point leaves nothing behind (the kernel frees the unnamed
//! inode), no rename crosses directories (renames across directories serialise on a
//! file-system-wide lock), and no shared temporary directory becomes a hot spot. Elsewhere
//! it is a named file in the resource's `.weft-tmp`, renamed into place and removed at the
//! next start if a crash left it.

use crate::io_error;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use weft_fileio::{FileWriter, SyncBehind};
use weft_types::{Error, ErrorCode};

pub(crate) struct Temp {
    pub file: Arc<File>,
    /// Flushes behind the writers, so that a durable publish waits for little; `None` for
    /// scratch files, which are read back and thrown away.
    sync: Option<Arc<SyncBehind>>,
    /// `None`: unnamed (`O_TMPFILE`) in `dir`.
    named: Option<PathBuf>,
    dir: PathBuf,
}

impl Temp {
    /// A new temporary file of `size` bytes (0: grows as written) in `dir`, or in
    /// `fallback_dir` by name where `dir`'s file system has no `O_TMPFILE`. A `scratch` file
    /// is never published, so its bytes are not pushed to disk while it is written.
    pub fn create(dir: &Path, fallback_dir: &Path, size: u64, scratch: bool) -> Result<Temp, Error> {
        let (file, named, dir) = match open_unnamed(dir) {
            Ok(file) => (file, None, dir),
            Err(e) if unsupported(&e) => {
                let path = fallback_dir.join(uuid::Uuid::new_v4().simple().to_string());
                let file = with_dir(fallback_dir, || {
                    std::fs::OpenOptions::new()
                        .read(true)
                        .write(true)
                        .create_new(true)
                        .open(&path)
                })
                .map_err(|e| io_error(&format!("cannot create {}", path.display()), e))?;
                (file, Some(path), fallback_dir)
            }
            Err(e) => return Err(io_error(&format!("cannot create a file in {}", dir.display()), e)),
        };
        let file = Arc::new(file);
        let temp = Temp {
            sync: (!scratch).then(|| Arc::new(SyncBehind::new(file.clone()))),
            file,
            named,
            dir: dir.to_owned(),
        };
        if size > 0 {
            if let Err(e) = allocate(&temp.file, size) {
                temp.discard();
                let e_code = e.raw_os_error();
                let mut err = io_error(&format!("cannot size {}", temp.describe()), e);
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
        io_error(&format!("cannot write {}", self.describe()), e)
    }

    pub fn describe(&self) -> String {
        match &self.named {
            Some(p) => p.display().to_string(),
            None => format!("a new file in {}", self.dir.display()),
        }
    }

    /// Makes the file visible at `target` (on the same file system), durable first if asked.
    /// A file already at `target` is replaced atomically (staging areas overwrite; replicas
    /// always get fresh keys).
    pub fn publish(&self, target: &Path, durable: bool) -> Result<(), Error> {
        if durable {
            match &self.sync {
                Some(sync) => sync.finish(),
                None => self.file.sync_data(),
            }
            .map_err(|e| io_error(&format!("cannot sync {}", self.describe()), e))?;
        }
        let dir = target.parent().expect("a replica path has a parent");
        let r = with_dir(dir, || match &self.named {
            Some(p) => std::fs::rename(p, target),
            None => match link_unnamed(&self.file, target) {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    // linkat never replaces: link under a hidden name, then rename over.
                    let name = format!(".weft-{}.tmp", uuid::Uuid::new_v4().simple());
                    let aside = dir.join(name);
                    link_unnamed(&self.file, &aside)?;
                    std::fs::rename(&aside, target).inspect_err(|_| {
                        let _ = std::fs::remove_file(&aside);
                    })
                }
                other => other,
            },
        });
        r.map_err(|e| {
            io_error(
                &format!(
                    "cannot move {} into place at {}",
                    self.describe(),
                    target.display()
                ),
                e,
            )
        })?;
        if durable {
            // The new directory entry must survive a crash as much as the bytes.
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| io_error(&format!("cannot sync {}", dir.display()), e))?;
        }
        Ok(())
    }

    /// Throws the file away (an unnamed one vanishes when its last descriptor closes).
    pub fn discard(&self) {
        if let Some(p) = &self.named {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Sets the file's size to `size`, with its blocks allocated where the file system can:
/// a full disk fails here, before any byte is received, and direct writes into allocated
/// (unwritten) blocks run in parallel, where writes into holes are serialised by ext4.
fn allocate(file: &File, size: u64) -> std::io::Result<()> {
    // SAFETY: a valid descriptor; fallocate only changes the file's allocation.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, size as libc::off_t) };
    if rc == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) => file.set_len(size),
        _ => Err(e),
    }
}

fn open_unnamed(dir: &Path) -> std::io::Result<File> {
    with_dir(dir, || {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .mode(0o644)
            .custom_flags(libc::O_TMPFILE)
            .open(dir)
    })
}

/// Runs `op`, creating `dir` and trying once more if it did not exist.
fn with_dir<T>(dir: &Path, op: impl Fn() -> std::io::Result<T>) -> std::io::Result<T> {
    match op() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)?;
            op()
        }
        other => other,
    }
}

fn unsupported(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EOPNOTSUPP) | Some(libc::EISDIR) | Some(libc::EINVAL)
    )
}

/// `linkat` of an `O_TMPFILE` descriptor through `/proc/self/fd`, which needs no privilege
/// (unlike `AT_EMPTY_PATH`).
fn link_unnamed(file: &File, target: &Path) -> std::io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let from = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd())).expect("no NUL");
    let to = CString::new(target.as_os_str().as_bytes()).map_err(|_| std::io::ErrorKind::InvalidInput)?;
    // SAFETY: both strings are valid NUL-terminated paths for the duration of the call.
    let rc = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

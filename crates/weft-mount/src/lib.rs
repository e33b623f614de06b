//! `weft mount`: a zone's collection as a local file system (FUSE), for programs that can
//! only open files by path. A client like the CLI: everything goes through `weft-client`
//! with the user's token, so the zone decides every permission as it does for `weft put`.
//!
//! - [`fs::Fs`]: the operations over the zone (inodes, reads through a verified disk
//!   cache, writes spooled and stored at close), testable without a kernel;
//! - [`fuse`]: the adapter `fuser` drives;
//! - [`Mounted`]: a mount being served, and how it ends.

mod cache;
pub mod dirs;
pub mod errno;
pub mod fs;
mod fuse;
mod inodes;
mod journal;
mod reader;
mod writer;

pub use errno::Errno;
pub use fs::{Attr, Fs, Options};
pub use reader::PIECE;

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::oneshot;

/// A mount being served: its session runs on a thread of its own, the operations on the
/// Tokio runtime it was made on.
pub struct Mounted {
    fs: Arc<Fs>,
    mountpoint: PathBuf,
    ended: oneshot::Receiver<io::Result<()>>,
    /// Whether the mount holds itself busy, files waiting to go up.
    held: tokio::sync::watch::Receiver<bool>,
}

/// How to unmount.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unmount {
    /// Only if no file in it is open (`umount`).
    Now,
    /// At once from the namespace; files open now are still served, and written ones
    /// stored at their close, before the mount ends (`umount -l`).
    Detach,
}

impl Mounted {
    /// Mounts `fs` at `mountpoint`, `allow_other` letting other users than the mounting
    /// one in. Call inside a Tokio runtime.
    pub fn mount(fs: Arc<Fs>, mountpoint: &Path, name: &str, allow_other: bool) -> io::Result<Mounted> {
        let mut config = fuser::Config::default();
        config.mount_options = vec![
            fuser::MountOption::FSName(format!("weft:{name}")),
            fuser::MountOption::Subtype("weft".into()),
            fuser::MountOption::NoDev,
            fuser::MountOption::NoSuid,
            fuser::MountOption::NoAtime,
        ];
        if allow_other {
            config.acl = fuser::SessionACL::All;
        }
        let adapter = fuse::Adapter::new(fs.clone(), tokio::runtime::Handle::current());
        let session = fuser::Session::new(adapter, mountpoint, &config)?;
        let (tx, ended) = oneshot::channel();
        std::thread::Builder::new()
            .name("weft-mount".into())
            .spawn(move || {
                let _ = tx.send(session.run());
            })?;
        let held = fs.hold_while_pending(mountpoint.to_owned());
        Ok(Mounted {
            fs,
            mountpoint: mountpoint.to_owned(),
            ended,
            held,
        })
    }

    pub fn fs(&self) -> &Arc<Fs> {
        &self.fs
    }

    /// Waits until every file closed in the mount is uploaded and the mount no longer
    /// holds itself busy: then an unmount ends it.
    pub async fn drain(&mut self) {
        self.fs.drain().await;
        let _ = self.held.wait_for(|held| !*held).await;
    }

    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// Waits until the kernel ended the mount (an `umount`, or `unmount` here).
    pub async fn ended(&mut self) -> io::Result<()> {
        (&mut self.ended).await.unwrap_or_else(|_| {
            Err(io::Error::other(
                "the mount's session thread ended without a word",
            ))
        })
    }

    /// Unmounts; with [`Unmount::Now`], `EBUSY` while a file in the mount is open.
    pub fn unmount(&self, how: Unmount) -> io::Result<()> {
        unmount(&self.mountpoint, how)
    }
}

/// `umount2(2)` of `mountpoint`.
pub fn unmount(mountpoint: &Path, how: Unmount) -> io::Result<()> {
    let path = CString::new(mountpoint.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a mount point with a NUL byte"))?;
    let flags = match how {
        Unmount::Now => 0,
        Unmount::Detach => libc::MNT_DETACH,
    };
    // SAFETY: `path` is a valid NUL-terminated string that outlives the call.
    let rc = unsafe { libc::umount2(path.as_ptr(), flags) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether a weft mount is at `path` (as `/proc/self/mountinfo` writes paths: space, tab,
/// newline and backslash in octal; a weft mount's source is `weft:COLLECTION`).
pub fn is_mounted(path: &Path) -> bool {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let want: String = path
        .to_string_lossy()
        .chars()
        .map(|c| match c {
            ' ' => "\\040".to_owned(),
            '\t' => "\\011".to_owned(),
            '\n' => "\\012".to_owned(),
            '\\' => "\\134".to_owned(),
            c => c.to_string(),
        })
        .collect();
    info.lines().any(|l| {
        let mut fields = l.split(' ');
        fields.nth(4) == Some(want.as_str()) && l.contains(" - fuse weft:")
    })
}

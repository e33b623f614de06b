//! The kernel's side: `fuser` calls these on its session thread; each starts the
//! operation on the Tokio runtime and returns at once, the reply sent when it is done, so
//! that a slow upload never holds up a `stat` or a read of another file.

use crate::errno::{Errno, FsResult};
use crate::fs::{Attr, Fs};
use fuser::{
    FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags, KernelConfig,
    LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectoryPlus, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};
use std::ffi::OsStr;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

pub struct Adapter {
    fs: Arc<Fs>,
    rt: tokio::runtime::Handle,
    uid: u32,
    gid: u32,
}

fn errno(e: Errno) -> fuser::Errno {
    fuser::Errno::from_i32(e.0)
}

impl Adapter {
    pub fn new(fs: Arc<Fs>, rt: tokio::runtime::Handle) -> Adapter {
        // SAFETY: getuid and getgid cannot fail and touch no memory.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        Adapter { fs, rt, uid, gid }
    }

    fn spawn(&self, f: impl Future<Output = ()> + Send + 'static) {
        self.rt.spawn(f);
    }

    /// Runs `op` on the runtime and answers with its outcome.
    fn empty(&self, reply: ReplyEmpty, op: impl Future<Output = FsResult<()>> + Send + 'static) {
        self.spawn(async move {
            match op.await {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    fn entry(&self, reply: ReplyEntry, op: impl Future<Output = FsResult<Attr>> + Send + 'static) {
        let (ttl, uid, gid) = (self.fs.attr_ttl(), self.uid, self.gid);
        self.spawn(async move {
            match op.await {
                Ok(a) => reply.entry(&ttl, &file_attr(&a, uid, gid), Generation(0)),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    fn attr(&self, reply: ReplyAttr, op: impl Future<Output = FsResult<Attr>> + Send + 'static) {
        let (ttl, uid, gid) = (self.fs.attr_ttl(), self.uid, self.gid);
        self.spawn(async move {
            match op.await {
                Ok(a) => reply.attr(&ttl, &file_attr(&a, uid, gid)),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    fn opened(&self, reply: ReplyOpen, op: impl Future<Output = FsResult<u64>> + Send + 'static) {
        self.spawn(async move {
            match op.await {
                Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::empty()),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    fn xattr(
        &self,
        reply: ReplyXattr,
        size: u32,
        op: impl Future<Output = FsResult<Vec<u8>>> + Send + 'static,
    ) {
        self.spawn(async move {
            match op.await {
                Ok(v) => xattr_reply(reply, size, &v),
                Err(e) => reply.error(errno(e)),
            }
        });
    }
}

fn file_attr(a: &Attr, uid: u32, gid: u32) -> FileAttr {
    FileAttr {
        ino: INodeNo(a.ino),
        size: a.size,
        blocks: a.size.div_ceil(512),
        atime: a.mtime,
        mtime: a.mtime,
        ctime: a.ctime,
        crtime: a.ctime,
        kind: if a.dir {
            FileType::Directory
        } else {
            FileType::RegularFile
        },
        perm: a.perm,
        nlink: if a.dir { 2 } else { 1 },
        uid,
        gid,
        rdev: 0,
        blksize: 1 << 20,
        flags: 0,
    }
}

/// A name as weft keeps names (UTF-8), or `None`.
fn utf8(name: &OsStr) -> Option<String> {
    name.to_str().map(str::to_owned)
}

impl Filesystem for Adapter {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Each is asked for; a kernel without one works without it.
        for flag in [
            InitFlags::FUSE_DO_READDIRPLUS,
            InitFlags::FUSE_ATOMIC_O_TRUNC,
            InitFlags::FUSE_BIG_WRITES,
            InitFlags::FUSE_ASYNC_READ,
            InitFlags::FUSE_PARALLEL_DIROPS,
        ] {
            let _ = config.add_capabilities(flag);
        }
        let _ = config.set_max_write(1 << 20);
        let _ = config.set_max_readahead(1 << 20);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let Some(name) = utf8(name) else {
            return reply.error(fuser::Errno::ENOENT);
        };
        let fs = self.fs.clone();
        self.entry(reply, async move { fs.lookup(parent.0, &name).await });
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.fs.forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let fs = self.fs.clone();
        self.attr(reply, async move { fs.getattr(ino.0).await });
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let fs = self.fs.clone();
        self.attr(
            reply,
            async move { fs.setattr(ino.0, size, fh.map(|f| f.0)).await },
        );
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        let Some(name) = utf8(name) else {
            return reply.error(fuser::Errno::EINVAL);
        };
        let fs = self.fs.clone();
        self.entry(reply, async move { fs.mkdir(parent.0, &name).await });
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.remove(parent, name, false, reply);
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.remove(parent, name, true, reply);
    }

    fn symlink(&self, _req: &Request, _parent: INodeNo, _name: &OsStr, _target: &Path, reply: ReplyEntry) {
        // A zone keeps data objects and collections only.
        reply.error(fuser::Errno::EPERM);
    }

    fn link(&self, _req: &Request, _ino: INodeNo, _parent: INodeNo, _name: &OsStr, reply: ReplyEntry) {
        reply.error(fuser::Errno::EPERM);
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let (Some(name), Some(newname)) = (utf8(name), utf8(newname)) else {
            return reply.error(fuser::Errno::EINVAL);
        };
        if flags.contains(RenameFlags::RENAME_EXCHANGE) || flags.contains(RenameFlags::RENAME_WHITEOUT) {
            return reply.error(fuser::Errno::EINVAL);
        }
        let noreplace = flags.contains(RenameFlags::RENAME_NOREPLACE);
        let fs = self.fs.clone();
        self.empty(reply, async move {
            fs.rename(parent.0, &name, newparent.0, &newname, noreplace).await
        });
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let (fs, pid) = (self.fs.clone(), req.pid());
        self.opened(reply, async move { fs.open(ino.0, flags.0, pid).await });
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let fs = self.fs.clone();
        self.spawn(async move {
            match fs.read(fh.0, offset, size).await {
                Ok(data) => reply.data(&data),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    fn write(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let (fs, pid) = (self.fs.clone(), req.pid());
        // The kernel's buffer is lent for this call only.
        let data = data.to_vec();
        self.spawn(async move {
            match fs.write(fh.0, offset, &data, pid).await {
                Ok(n) => reply.written(n),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    fn flush(&self, req: &Request, _ino: INodeNo, fh: FileHandle, _lock_owner: LockOwner, reply: ReplyEmpty) {
        let (fs, pid) = (self.fs.clone(), req.pid());
        self.empty(reply, async move { fs.close(fh.0, pid).await });
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        let fs = self.fs.clone();
        self.spawn(async move {
            fs.release(fh.0).await;
            reply.ok();
        });
    }

    fn fsync(&self, _req: &Request, _ino: INodeNo, fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        let fs = self.fs.clone();
        self.empty(reply, async move { fs.fsync(fh.0).await });
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let fs = self.fs.clone();
        self.opened(reply, async move { fs.opendir(ino.0).await });
    }

    fn readdirplus(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        let (fs, uid, gid) = (self.fs.clone(), self.uid, self.gid);
        self.spawn(async move {
            let ttl = fs.attr_ttl();
            // `.` and `..`: the kernel takes no reference on either.
            let dot = Attr {
                ino: ino.0,
                dir: true,
                size: 0,
                mtime: SystemTime::UNIX_EPOCH,
                ctime: SystemTime::UNIX_EPOCH,
                perm: 0o755,
            };
            for (at, name) in [(0, "."), (1, "..")] {
                if offset <= at
                    && reply.add(ino, at + 1, name, &ttl, &file_attr(&dot, uid, gid), Generation(0))
                {
                    return reply.ok();
                }
            }
            let entries = match fs.readdir(fh.0, offset).await {
                Ok(e) => e,
                Err(e) => return reply.error(errno(e)),
            };
            for e in &entries {
                let a = fs.entry_attr(e);
                if reply.add(
                    INodeNo(a.ino),
                    e.next,
                    &e.name,
                    &ttl,
                    &file_attr(&a, uid, gid),
                    Generation(0),
                ) {
                    // Not taken: the kernel holds no reference to it.
                    fs.forget(a.ino, 1);
                    break;
                }
            }
            reply.ok();
        });
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.fs.releasedir(fh.0);
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let fs = self.fs.clone();
        self.spawn(async move {
            let s = fs.statfs().await;
            reply.statfs(s.blocks, s.free, s.free, 0, 0, s.block_size, 255, s.block_size);
        });
    }

    fn setxattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        _flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        let Some(name) = utf8(name) else {
            return reply.error(fuser::Errno::ENOTSUP);
        };
        let fs = self.fs.clone();
        let value = value.to_vec();
        self.empty(reply, async move { fs.setxattr(ino.0, &name, &value).await });
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        let Some(name) = utf8(name) else {
            return reply.error(fuser::Errno::NO_XATTR);
        };
        let fs = self.fs.clone();
        self.xattr(reply, size, async move { fs.getxattr(ino.0, &name).await });
    }

    fn listxattr(&self, _req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        let fs = self.fs.clone();
        self.xattr(reply, size, async move {
            let mut v = Vec::new();
            for n in fs.listxattr(ino.0).await? {
                v.extend_from_slice(n.as_bytes());
                v.push(0);
            }
            Ok(v)
        });
    }

    fn removexattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let Some(name) = utf8(name) else {
            return reply.error(fuser::Errno::NO_XATTR);
        };
        let fs = self.fs.clone();
        self.empty(reply, async move { fs.removexattr(ino.0, &name).await });
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        let Some(name) = utf8(name) else {
            return reply.error(fuser::Errno::EINVAL);
        };
        let (fs, uid, gid, pid) = (self.fs.clone(), self.uid, self.gid, req.pid());
        self.spawn(async move {
            match fs.create(parent.0, &name, pid).await {
                Ok((a, fh)) => reply.created(
                    &fs.attr_ttl(),
                    &file_attr(&a, uid, gid),
                    Generation(0),
                    FileHandle(fh),
                    FopenFlags::empty(),
                ),
                Err(e) => reply.error(errno(e)),
            }
        });
    }
}

impl Adapter {
    fn remove(&self, parent: INodeNo, name: &OsStr, dir: bool, reply: ReplyEmpty) {
        let Some(name) = utf8(name) else {
            return reply.error(fuser::Errno::ENOENT);
        };
        let fs = self.fs.clone();
        self.empty(reply, async move { fs.remove(parent.0, &name, dir).await });
    }
}

/// The xattr protocol: a size of 0 asks how large the value is.
fn xattr_reply(reply: ReplyXattr, size: u32, value: &[u8]) {
    if size == 0 {
        reply.size(value.len() as u32);
    } else if value.len() > size as usize {
        reply.error(fuser::Errno::ERANGE);
    } else {
        reply.data(value);
    }
}

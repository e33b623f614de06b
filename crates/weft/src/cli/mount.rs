//! `weft mount`: a collection as a local file system (FUSE), served by this process until
//! it is unmounted (`umount`, Ctrl-C, SIGTERM).

use super::output::{Failure, Result, EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_USAGE};
use super::Ctx;
use clap::Args;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_mount::{Fs, Mounted, Options, Unmount};

#[derive(Debug, Args)]
#[command(after_help = "\
Every file closed (or fsync'ed) in the mount is in the zone when close() returns; a failed
upload is an error (EIO, EDQUOT, EACCES) of that close. So `umount` needs no flush: when it
succeeds, everything written is stored.

Examples:
  weft mount ~/weft                      your home collection at ~/weft
  weft mount /lab/home/alice/run7 /mnt/run7 --cache-size 50G
  weft mount --daemon /lab/home/alice ~/weft && cp results.h5 ~/weft/ && umount ~/weft")]
pub struct MountArgs {
    /// The collection to mount (default: your home collection), then the mount point (an
    /// existing, empty directory).
    #[arg(value_name = "[ZONE_PATH] MOUNTPOINT", num_args = 1..=2, required = true)]
    paths: Vec<String>,
    /// Where the read cache and the files being written are kept (default: in the user's
    /// cache directory, one per mount).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// The bound of that cache (K, M, G, T: powers of 1024). Files being written count and
    /// are never evicted: a write that does not fit fails with ENOSPC.
    #[arg(long, value_name = "SIZE", default_value = "10G", value_parser = super::quota::parse_bytes)]
    cache_size: u64,
    /// Let other local users into the mount (they act as you towards the zone).
    #[arg(long)]
    allow_other: bool,
    /// Return from close() once the file is safe on local disk (a journal in the cache
    /// directory, fsync'ed) and upload behind. Files not uploaded when the mount stops are
    /// uploaded by the next mount with the same cache directory; `umount` refuses while
    /// files wait (`getfattr -n user.weft.pending MOUNTPOINT` names them); Ctrl-C or
    /// SIGTERM uploads them, then unmounts.
    #[arg(long)]
    write_back: bool,
    /// Return once mounted and serve in the background; its log goes to mount.log in the
    /// cache directory. Stop it with `umount MOUNTPOINT`.
    #[arg(long)]
    daemon: bool,
}

pub async fn mount(ctx: &Ctx, a: MountArgs) -> Result {
    let (zone_path, mountpoint) = match a.paths.as_slice() {
        [m] => (None, m),
        [z, m] => (Some(z), m),
        _ => unreachable!("clap takes one or two"),
    };
    let root = match zone_path {
        Some(p) => ctx.resolve(p).await?,
        None => ctx.home().await?.clone(),
    };
    detach_dead_mount(ctx, Path::new(mountpoint));
    let mountpoint = std::fs::canonicalize(mountpoint).map_err(|e| {
        Failure::usage(format!("mount point {mountpoint}: {e}")).hint("make it with mkdir first")
    })?;
    if !mountpoint.is_dir() {
        return Err(Failure::usage(format!(
            "mount point {}: not a directory",
            mountpoint.display()
        )));
    }
    let cache_dir = match a.cache_dir {
        Some(d) => d,
        None => default_cache_dir(ctx, root.as_str(), &mountpoint)?,
    };
    std::fs::create_dir_all(&cache_dir)
        .map_err(|e| Failure::usage(format!("cache directory {}: {e}", cache_dir.display())))?;
    if a.daemon {
        return daemonize(ctx, &mountpoint, &cache_dir);
    }
    let _lock = lock(&cache_dir)?;
    let mut options = Options::new(cache_dir.clone());
    options.cache_size = a.cache_size;
    options.write_back = a.write_back;
    let fs = Fs::new(ctx.client.clone(), root.clone(), options)
        .await
        .map_err(|e| Failure::new(EXIT_FAILURE, "mount", e))?;
    let mut mounted =
        Mounted::mount(Arc::new(fs), &mountpoint, root.as_str(), a.allow_other).map_err(|e| {
            Failure::new(
                EXIT_FAILURE,
                "mount",
                format!("mounting at {}: {e}", mountpoint.display()),
            )
            .hint("FUSE needs /dev/fuse, and root or fusermount3 (Debian: apt install fuse3)")
        })?;
    ctx.info(format!(
        "{root} is mounted at {}; stop with Ctrl-C or `umount {}`",
        mountpoint.display(),
        mountpoint.display()
    ));
    serve(ctx, &mut mounted).await
}

/// Serves until the kernel ends the mount; a signal unmounts it.
async fn serve(ctx: &Ctx, mounted: &mut Mounted) -> Result {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate()))
    else {
        return Err(Failure::new(EXIT_FAILURE, "mount", "cannot listen for signals"));
    };
    let ended = |r: std::io::Result<()>| {
        r.map_err(|e| Failure::new(EXIT_FAILURE, "mount", format!("the mount ended: {e}")))
    };
    tokio::select! {
        r = mounted.ended() => return ended(r),
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
    let pending = mounted.fs().pending();
    if !pending.is_empty() {
        ctx.info(format!(
            "weft: mount: uploading the {} files closed and not in the zone yet ({}{}); interrupt again to stop now (the next mount with this cache directory uploads them)",
            pending.len(),
            pending.iter().take(3).map(|p| p.to_string()).collect::<Vec<_>>().join(", "),
            if pending.len() > 3 { ", ..." } else { "" }
        ));
        tokio::select! {
            _ = mounted.drain() => {}
            _ = int.recv() => std::process::exit(EXIT_INTERRUPTED.into()),
            _ = term.recv() => std::process::exit(EXIT_INTERRUPTED.into()),
        }
    }
    match mounted.unmount(Unmount::Now) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
            // Programs still have files open in it: they keep them, and what they write
            // is stored at their close, before this process ends.
            ctx.info(format!(
                "weft: mount: files are open in {}: it is detached, and ends when they are closed; interrupt again to end it now (what they have not closed is lost)",
                mounted.mountpoint().display()
            ));
            mounted
                .unmount(Unmount::Detach)
                .map_err(|e| Failure::new(EXIT_FAILURE, "mount", format!("unmounting: {e}")))?;
        }
        Err(e) => return Err(Failure::new(EXIT_FAILURE, "mount", format!("unmounting: {e}"))),
    }
    tokio::select! {
        r = mounted.ended() => ended(r),
        _ = int.recv() => std::process::exit(EXIT_INTERRUPTED.into()),
        _ = term.recv() => std::process::exit(EXIT_INTERRUPTED.into()),
    }
}

/// A weft mount whose process was killed leaves its mount point unusable (`Transport
/// endpoint is not connected`): it is detached, so that the new mount can take its place
/// (and upload what its journal kept).
fn detach_dead_mount(ctx: &Ctx, mountpoint: &Path) {
    let dead = std::fs::metadata(mountpoint).is_err_and(|e| e.raw_os_error() == Some(libc::ENOTCONN));
    let Ok(path) = std::path::absolute(mountpoint) else {
        return;
    };
    if dead && weft_mount::is_mounted(&path) && weft_mount::unmount(&path, Unmount::Detach).is_ok() {
        ctx.info(format!(
            "weft: mount: {} was a mount whose process had ended: detached it",
            path.display()
        ));
    }
}

/// One cache directory per zone, collection and mount point.
fn default_cache_dir(ctx: &Ctx, root: &str, mountpoint: &Path) -> Result<PathBuf> {
    let base = dirs::cache_dir()
        .ok_or_else(|| Failure::usage("no cache directory (HOME unset?): say --cache-dir DIR"))?;
    let mut h = blake3::Hasher::new();
    for part in [
        ctx.client.zone_url().as_bytes(),
        root.as_bytes(),
        mountpoint.as_os_str().as_encoded_bytes(),
    ] {
        h.update(part);
        h.update(b"\0");
    }
    Ok(base.join("weft/mount").join(&h.finalize().to_hex()[..16]))
}

/// Holds the cache directory for this mount alone: two mounts sharing one would remove
/// each other's spooled writes.
fn lock(dir: &Path) -> Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    let path = dir.join("lock");
    let file =
        std::fs::File::create(&path).map_err(|e| Failure::usage(format!("{}: {e}", path.display())))?;
    // SAFETY: flock on a descriptor this function owns; no memory is passed.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(Failure::new(
            EXIT_USAGE,
            "mount",
            format!("the cache directory {} is in use by another mount", dir.display()),
        )
        .hint("give this mount its own --cache-dir"));
    }
    Ok(file)
}

/// Starts this command again without `--daemon`, in the background with its output in
/// the cache directory's `mount.log`, and returns once the mount is there (or the
/// background process has failed, with its log).
fn daemonize(ctx: &Ctx, mountpoint: &Path, cache_dir: &Path) -> Result {
    let log_path = cache_dir.join("mount.log");
    let log = std::fs::File::create(&log_path)
        .map_err(|e| Failure::usage(format!("{}: {e}", log_path.display())))?;
    let err_log = log
        .try_clone()
        .map_err(|e| Failure::usage(format!("{}: {e}", log_path.display())))?;
    let exe = std::env::current_exe().map_err(|e| Failure::new(EXIT_FAILURE, "mount", e.to_string()))?;
    let mut child = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1).filter(|a| a != "--daemon"))
        .stdin(std::process::Stdio::null())
        .stdout(log)
        .stderr(err_log)
        // Out of the terminal's process group: a Ctrl-C there is not for it.
        .process_group(0)
        .spawn()
        .map_err(|e| {
            Failure::new(
                EXIT_FAILURE,
                "mount",
                format!("starting the background mount: {e}"),
            )
        })?;
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if weft_mount::is_mounted(mountpoint) {
            ctx.info(format!(
                "mounted at {} (process {}, log {}); stop with `umount {}`",
                mountpoint.display(),
                child.id(),
                log_path.display(),
                mountpoint.display()
            ));
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            let mut text = String::new();
            let _ = std::fs::File::open(&log_path).and_then(|mut f| f.read_to_string(&mut text));
            return Err(Failure::new(
                EXIT_FAILURE,
                "mount",
                format!("the background mount ended ({status}): {}", text.trim()),
            ));
        }
        if Instant::now() > until {
            return Err(Failure::new(
                EXIT_FAILURE,
                "mount",
                format!("not mounted after a minute; see {}", log_path.display()),
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

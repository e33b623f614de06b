//! `weft mount`'s file-system logic without the kernel: `weft_mount::Fs` called as the
//! FUSE adapter calls it, against a real zone. What a kernel mount makes slow to reach is
//! tested here: listings across pages and seeks back, inodes the kernel forgets, a cache
//! over its bound.

use weft_client::Client;
use weft_mount::{Errno, Fs, Options};
use weft_testkit::data::pseudo_random;
use weft_testkit::zone::ZoneProcess;
use weft_types::LogicalPath;

const WEFT: &str = env!("CARGO_BIN_EXE_weft");
const ROOT: u64 = 1;

fn fs_of(z: &ZoneProcess, root: &str, cache: &std::path::Path, rt: &tokio::runtime::Runtime) -> Fs {
    let client = Client::new(z.url(), Some(z.admin_token().to_owned())).unwrap();
    let mut opts = Options::new(cache.to_owned());
    opts.cache_size = 64 << 20;
    rt.block_on(Fs::new(client, LogicalPath::parse(root).unwrap(), opts))
        .unwrap()
}

#[test]
fn a_listing_of_several_pages_reads_through_and_seeks_back() {
    let z = ZoneProcess::start(WEFT, "mls").unwrap();
    let dir = z.work().join("many");
    std::fs::create_dir_all(&dir).unwrap();
    // 2,500 names: three pages of the zone's listing (1,000 a page).
    for i in 0..2500 {
        std::fs::write(dir.join(format!("f{i:05}")), b"").unwrap();
    }
    z.weft(&[
        "put",
        "-r",
        "--quiet",
        dir.to_str().unwrap(),
        "/mls/home/admin/many",
    ])
    .ok();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let fs = fs_of(&z, "/mls/home/admin", tmp.path(), &rt);
    rt.block_on(async {
        let many = fs.lookup(ROOT, "many").await.unwrap();
        assert!(many.dir);
        let fh = fs.opendir(many.ino).await.unwrap();
        // As the kernel reads: from the offset after the last entry it took.
        let (mut names, mut offset) = (Vec::new(), 2);
        loop {
            let page = fs.readdir(fh, offset).await.unwrap();
            let Some(last) = page.last() else { break };
            offset = last.next;
            names.extend(page.iter().map(|e| e.name.clone()));
        }
        let want: Vec<String> = (0..2500).map(|i| format!("f{i:05}")).collect();
        assert_eq!(names, want);
        // seekdir back into the first page, and into the middle of the second.
        assert_eq!(fs.readdir(fh, 2 + 10).await.unwrap()[0].name, "f00010");
        assert_eq!(fs.readdir(fh, 2 + 1500).await.unwrap()[0].name, "f01500");
        assert!(fs.readdir(fh, 2 + 2500).await.unwrap().is_empty());
        fs.releasedir(fh);
        assert_eq!(fs.readdir(fh, 2).await.unwrap_err(), Errno::EBADF);
    });
}

#[test]
fn inodes_live_while_the_kernel_holds_them_and_follow_renames() {
    let z = ZoneProcess::start(WEFT, "mino").unwrap();
    z.weft(&["mkdir", "-p", "/mino/home/admin/a/b"]).ok();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let fs = fs_of(&z, "/mino/home/admin", tmp.path(), &rt);
    rt.block_on(async {
        let a = fs.lookup(ROOT, "a").await.unwrap();
        let b = fs.lookup(a.ino, "b").await.unwrap();
        let before = fs.inode_count();
        fs.rename(ROOT, "a", ROOT, "c", false).await.unwrap();
        // The inodes the kernel holds now name the moved paths: a file made in b lands
        // below c.
        let (_, fh) = fs.create(b.ino, "new", std::process::id()).await.unwrap();
        assert_eq!(fs.write(fh, 0, b"x", std::process::id()).await.unwrap(), 1);
        fs.close(fh, std::process::id()).await.unwrap();
        fs.release(fh).await;
        z.weft(&["stat", "/mino/home/admin/c/b/new"]).ok();
        // Forgotten as often as looked up, an inode is gone.
        fs.forget(b.ino, 1);
        fs.forget(a.ino, 1);
        // a and b gone, the new file's inode come: one fewer than before.
        assert_eq!(fs.inode_count(), before - 1);
        assert_eq!(fs.getattr(b.ino).await.unwrap_err(), Errno::ENOENT);
    });
}

#[test]
fn files_read_stay_cached_within_the_bound_and_writes_beyond_it_are_enospc() {
    let z = ZoneProcess::start(WEFT, "mcache").unwrap();
    let src = z.work().join("src");
    std::fs::create_dir_all(&src).unwrap();
    for i in 0..6u64 {
        std::fs::write(src.join(format!("f{i}")), pseudo_random(20 << 20, i)).unwrap();
    }
    z.weft(&[
        "put",
        "-r",
        "--quiet",
        src.to_str().unwrap(),
        "/mcache/home/admin/src",
    ])
    .ok();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let fs = fs_of(&z, "/mcache/home/admin/src", tmp.path(), &rt);
    let cached = || walkdir(&tmp.path().join("read"));
    rt.block_on(async {
        // Six files of 20 MiB read whole through a cache of 64 MiB: what is not open is
        // evicted, so the cache never holds more than its bound.
        for i in 0..6u64 {
            let f = fs.lookup(ROOT, &format!("f{i}")).await.unwrap();
            let fh = fs.open(f.ino, libc::O_RDONLY, 1).await.unwrap();
            let mut at = 0;
            while at < f.size {
                at += fs.read(fh, at, 1 << 20).await.unwrap().len() as u64;
            }
            fs.release(fh).await;
            assert!(cached() <= 64 << 20, "{} bytes cached", cached());
        }
        // A write that does not fit beside what is open for writing is ENOSPC.
        let (_, a) = fs.create(ROOT, "a", 1).await.unwrap();
        fs.write(a, 0, &vec![1u8; 40 << 20], 1).await.unwrap();
        let (_, b) = fs.create(ROOT, "b", 1).await.unwrap();
        assert_eq!(
            fs.write(b, 0, &vec![2u8; 40 << 20], 1).await.unwrap_err(),
            Errno::ENOSPC
        );
        fs.close(a, 1).await.unwrap();
        fs.release(a).await;
        // Stored, its room is free again.
        fs.write(b, 0, &vec![2u8; 40 << 20], 1).await.unwrap();
    });
}

/// Bytes the files below `dir` take on disk.
fn walkdir(dir: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.metadata().map_or(0, |m| m.blocks() * 512))
                .sum()
        })
        .unwrap_or(0)
}

#[test]
fn a_directory_read_through_has_its_next_small_files_fetched_ahead() {
    let z = ZoneProcess::start(WEFT, "mahead").unwrap();
    let src = z.work().join("small");
    std::fs::create_dir_all(&src).unwrap();
    for i in 0..40u64 {
        std::fs::write(src.join(format!("f{i:02}")), pseudo_random(64 << 10, i)).unwrap();
    }
    z.weft(&[
        "put",
        "-r",
        "--quiet",
        src.to_str().unwrap(),
        "/mahead/home/admin/small",
    ])
    .ok();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let fs = fs_of(&z, "/mahead/home/admin/small", tmp.path(), &rt);
    rt.block_on(async {
        // As `find -exec cat` does: the directory listed, then its files opened in turn.
        let fh = fs.opendir(ROOT).await.unwrap();
        assert_eq!(fs.readdir(fh, 2).await.unwrap().len(), 40);
        let f = fs.lookup(ROOT, "f05").await.unwrap();
        let h = fs.open(f.ino, libc::O_RDONLY, 1).await.unwrap();
        assert_eq!(fs.read(h, 0, 1 << 20).await.unwrap(), pseudo_random(64 << 10, 5));
        fs.release(h).await;
        // The one opened and the 16 listed after it.
        assert_eq!(fs.cached_files(), 17);
        // What was fetched ahead is what the next opens read, verified as any read.
        for i in 6..22u64 {
            let f = fs.lookup(ROOT, &format!("f{i:02}")).await.unwrap();
            let h = fs.open(f.ino, libc::O_RDONLY, 1).await.unwrap();
            assert_eq!(fs.read(h, 0, 1 << 20).await.unwrap(), pseudo_random(64 << 10, i));
            fs.release(h).await;
        }
        assert_eq!(
            fs.cached_files(),
            17 + 16,
            "each open fetches the files after it ahead"
        );
    });
}

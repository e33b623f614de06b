//! `weft mount` with the kernel: a real FUSE mount of a zone's collection, driven by the
//! tools users drive it with (cp, rsync, tar, find, dd, python, git), every byte compared
//! with what the zone then holds; the errors programs see; a zone killed under a close.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use weft_testkit::cli::wait_for;
use weft_testkit::data::{assert_same_tree, b3, files_below, flip_byte, pseudo_random, replica_file};
use weft_testkit::toxiproxy::Toxiproxy;
use weft_testkit::zone::ZoneProcess;

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

/// `weft mount COLLECTION DIR` running as a child, unmounted (lazily) and stopped when
/// dropped if the test did not unmount it.
struct Mount {
    child: Option<Child>,
    dir: PathBuf,
    log: PathBuf,
    _tmp: tempfile::TempDir,
}

impl Mount {
    #[track_caller]
    fn start(z: &ZoneProcess, token: &str, collection: &str) -> Mount {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, cache) = (tmp.path().join("mnt"), tmp.path().join("cache"));
        std::fs::create_dir(&dir).unwrap();
        Mount::start_at(z, z.url(), token, collection, &dir, &cache, &[], tmp)
    }

    /// `weft mount COLLECTION DIR --cache-dir CACHE EXTRA` (`tmp` kept while it runs).
    #[track_caller]
    #[allow(clippy::too_many_arguments)]
    fn start_at(
        z: &ZoneProcess,
        url: &str,
        token: &str,
        collection: &str,
        dir: &Path,
        cache: &Path,
        extra: &[&str],
        tmp: tempfile::TempDir,
    ) -> Mount {
        let log = tmp.path().join(format!("mount-{}.log", std::process::id()));
        let log = (1..)
            .map(|i| log.with_extension(format!("{i}.log")))
            .find(|l| !l.exists())
            .unwrap();
        let child = z
            .command()
            .env("WEFT_URL", url)
            .env("WEFT_TOKEN", token)
            .env("WEFT_LOG", "info")
            .args(["mount", collection])
            .arg(dir)
            .arg("--cache-dir")
            .arg(cache)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut m = Mount {
            child: Some(child),
            dir: dir.to_owned(),
            log,
            _tmp: tmp,
        };
        wait_for("the mount", || {
            if let Some(status) = m.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("weft mount ended ({status}): {}", m.log());
            }
            // What the mount says once served (a dead mount there before is in mountinfo too).
            m.log().contains(" is mounted at ") && weft_mount::is_mounted(&m.dir)
        });
        m
    }

    fn at(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `umount DIR`, then the mount process's exit code.
    #[track_caller]
    fn unmount(mut self) -> i32 {
        sh(&format!("umount {}", self.dir.display()));
        let status = self.child.take().unwrap().wait().unwrap();
        assert!(!weft_mount::is_mounted(&self.dir));
        status.code().unwrap_or(-1)
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The zone behind a toxiproxy whose link towards it carries `kb_s` KB/s (the toxic
/// `bandwidth`): the runtime its calls block on, the proxy (kept while it lives) and the
/// URL to reach the zone through.
fn slow_link(z: &ZoneProcess, kb_s: u64) -> (tokio::runtime::Runtime, Toxiproxy, String) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let toxi = Toxiproxy::start().expect("toxiproxy (install with .ci/install-tools.sh)");
    let upstream = z.url().trim_start_matches("http://").to_owned();
    let listen = rt.block_on(toxi.create_proxy("zone", &upstream)).unwrap();
    rt.block_on(toxi.add_toxic_on("zone", "bandwidth", "upstream", serde_json::json!({"rate": kb_s})))
        .unwrap();
    (rt, toxi, format!("http://{listen}"))
}

/// Runs `script` with `sh -c`, failing with its output unless it succeeds.
#[track_caller]
fn sh(script: &str) -> String {
    let out = Command::new("sh").args(["-c", script]).output().unwrap();
    assert!(
        out.status.success(),
        "{script}: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A tree of small files in nested directories and one file of five pieces.
fn source_tree(root: &Path) {
    for i in 0..40usize {
        let dir = root.join(format!("d{}/e{}", i % 3, i % 2));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("f{i}.dat")),
            pseudo_random(i * 997 + 1, i as u64),
        )
        .unwrap();
    }
    std::fs::write(
        root.join("big.bin"),
        pseudo_random(5 * weft_mount::PIECE as usize - 12_345, 99),
    )
    .unwrap();
    std::fs::write(root.join("empty"), b"").unwrap();
}

/// What the zone holds below `collection`, fetched with `weft get -r` into `into`.
#[track_caller]
fn zone_tree(z: &ZoneProcess, collection: &str, into: &Path) -> PathBuf {
    std::fs::create_dir_all(into).unwrap();
    z.weft(&["get", "-r", collection, into.to_str().unwrap()]).ok();
    into.join(collection.rsplit('/').next().unwrap())
}

#[test]
fn ordinary_tools_work_in_the_mount_and_the_zone_has_every_byte() {
    let z = ZoneProcess::start(WEFT, "mnt").unwrap();
    let home = "/mnt/home/admin";
    let m = Mount::start(&z, z.admin_token(), home);
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    source_tree(&src);
    let (s, d) = (src.display(), m.dir.display());

    sh(&format!("cp -r {s} {d}/cp"));
    sh(&format!("rsync -a {s}/ {d}/rsync/"));
    sh(&format!(
        "mkdir {d}/tar && tar cf - -C {s} . | tar xf - -C {d}/tar"
    ));
    sh(&format!(
        "python3 -c 'import shutil; shutil.copytree(\"{s}\", \"{d}/py\")'"
    ));
    for copy in ["cp", "rsync", "tar", "py"] {
        assert_same_tree(&src, &m.at(copy));
    }
    let orig = tmp.path().join("orig");
    sh(&format!("cp -a {s} {}", orig.display()));
    let found = sh(&format!("find {d}/cp -type f | wc -l"));
    assert_eq!(found.trim().parse::<usize>().unwrap(), files_below(&src).len());
    // tar reading back out of the mount gives the tree it was given.
    sh(&format!(
        "mkdir {}/untar && tar cf - -C {d}/tar . | tar xf - -C {}/untar",
        tmp.path().display(),
        tmp.path().display()
    ));
    assert_same_tree(&src, &tmp.path().join("untar"));

    // A write inside an existing file (the file is fetched first) and one past its end.
    let big = src.join("big.bin");
    sh(&format!(
        "dd if=/dev/zero of={d}/cp/big.bin bs=4096 seek=1000 count=256 conv=notrunc status=none"
    ));
    sh(&format!(
        "dd if=/dev/zero of={s}/big.bin bs=4096 seek=1000 count=256 conv=notrunc status=none"
    ));
    sh(&format!(
        "printf tail >> {d}/cp/empty && printf tail >> {s}/empty"
    ));
    assert_eq!(
        b3(&std::fs::read(m.at("cp/big.bin")).unwrap()),
        b3(&std::fs::read(&big).unwrap())
    );

    // Replacing a file by renaming another onto it, as editors and `os.replace` do.
    sh(&format!(
        "python3 -c 'import os\nfor v in (\"one\", \"two\"):\n    open(\"{d}/cp/r.tmp\", \"w\").write(v)\n    os.replace(\"{d}/cp/r.tmp\", \"{d}/cp/r.txt\")'"
    ));
    std::fs::write(src.join("r.txt"), "two").unwrap();

    // git: many small files, renames onto lock files, an index written in place.
    let repo = tmp.path().join("repo");
    sh(&format!(
        "git init -q {r} && cd {r} && for i in 1 2 3; do echo $i > f$i; done && git add . && git -c user.email=a@b -c user.name=n commit -qm one && git clone -q {r} {d}/repo && git -C {d}/repo fsck --strict",
        r = repo.display()
    ));
    assert_eq!(sh(&format!("git -C {d}/repo status --porcelain")), "");
    assert_eq!(std::fs::read_to_string(m.at("repo/f2")).unwrap(), "2\n");

    // `df` of the mount is the space of the zone's default resource.
    let size = |dir: &Path| sh(&format!("df --output=size -B4096 {} | tail -1", dir.display()));
    assert_eq!(size(&m.dir), size(z.data_dir()));

    assert_eq!(m.unmount(), 0, "a clean stop");
    // Everything closed was in the zone when close() returned: after the unmount, the
    // zone's copy is the source, byte for byte.
    let got = zone_tree(&z, &format!("{home}/cp"), &tmp.path().join("zone"));
    assert_same_tree(&src, &got);
    let rs = zone_tree(&z, &format!("{home}/rsync"), &tmp.path().join("zone-rsync"));
    assert_same_tree(&orig, &rs);
    let verify = z
        .weft(&["checksum", "--verify", &format!("{home}/cp/big.bin")])
        .ok();
    assert!(verify.stdout.contains(": ok"), "{}", verify.stdout);
}

/// The raw OS error of `r`, which must have failed.
#[track_caller]
fn errno<T: std::fmt::Debug>(r: std::io::Result<T>) -> i32 {
    r.expect_err("should have failed")
        .raw_os_error()
        .expect("an OS error")
}

#[test]
fn programs_see_errnos_they_understand_and_xattrs_are_metadata() {
    let z = ZoneProcess::start(WEFT, "mer").unwrap();
    let bob = z.user_with_token("bob");
    z.weft(&["mkdir", "/mer/home/admin/shared"]).ok();
    let src = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(src.path(), b"read me").unwrap();
    z.weft(&[
        "put",
        src.path().to_str().unwrap(),
        "/mer/home/admin/shared/ro.txt",
    ])
    .ok();
    z.weft(&["acl", "set", "-r", "/mer/home/admin/shared", "bob", "read"])
        .ok();
    z.weft(&["quota", "set", "bob", "--bytes", "1M"]).ok();

    let home = Mount::start(&z, &bob, "/mer/home/bob");
    std::fs::create_dir(home.at("d")).unwrap();
    std::fs::write(home.at("d/f"), b"x").unwrap();
    assert_eq!(errno(std::fs::read(home.at("missing"))), libc::ENOENT);
    assert_eq!(errno(std::fs::create_dir(home.at("d"))), libc::EEXIST);
    assert_eq!(errno(std::fs::remove_dir(home.at("d"))), libc::ENOTEMPTY);
    assert_eq!(errno(std::fs::remove_file(home.at("d"))), libc::EISDIR);
    assert_eq!(errno(std::fs::remove_dir(home.at("d/f"))), libc::ENOTDIR);
    // rename(2) as the kernel's own file systems answer it.
    assert_eq!(
        errno(std::fs::rename(home.at("d"), home.at("d/e"))),
        libc::EINVAL,
        "into itself"
    );
    std::fs::create_dir(home.at("e")).unwrap();
    assert_eq!(
        errno(std::fs::rename(home.at("e"), home.at("d/f"))),
        libc::ENOTDIR
    );
    assert_eq!(errno(std::fs::rename(home.at("d/f"), home.at("e"))), libc::EISDIR);
    assert_eq!(
        errno(std::fs::rename(home.at("e"), home.at("d"))),
        libc::ENOTEMPTY
    );

    // Hostile names: a control character or an over-long name is refused at create and
    // nothing reaches the zone; markup is an ordinary name.
    assert_eq!(errno(std::fs::write(home.at("a\nb"), b"x")), libc::EINVAL);
    assert_eq!(
        errno(std::fs::write(home.at(&"n".repeat(256)), b"x")),
        libc::ENAMETOOLONG
    );
    assert_eq!(errno(std::fs::create_dir(home.at("tab\there"))), libc::EINVAL);
    std::fs::write(home.at("<script>alert(1)"), b"x").unwrap();
    let listed = z.weft_as(&bob, &["ls", "/mer/home/bob"]).ok().stdout;
    assert!(
        listed.contains("<script>alert(1)") && !listed.contains("tab"),
        "{listed}"
    );
    // An extended attribute's value must be text (it becomes a metadata value).
    let refused = sh(&format!(
        "python3 -c 'import os\ntry:\n    os.setxattr(\"{f}\", \"user.bin\", bytes([0xff, 0xfe]))\nexcept OSError as e:\n    print(e.errno)'",
        f = home.at("d/f").display()
    ));
    assert_eq!(refused.trim(), libc::EINVAL.to_string());

    // Over the quota: the close fails, and nothing of the file is in the zone.
    use std::io::Write;
    let mut f = std::fs::File::create(home.at("big")).unwrap();
    f.write_all(&pseudo_random(2 << 20, 1)).unwrap();
    assert_eq!(errno(f.sync_all()), libc::EDQUOT);
    drop(f);
    z.weft(&["stat", "/mer/home/bob/big"]).fails(3, "not_found");

    // Extended attributes `user.*` are the object's metadata.
    sh(&format!(
        "python3 -c 'import os; os.setxattr(\"{f}\", \"user.sample\", b\"S-17\")'",
        f = home.at("d/f").display()
    ));
    let meta = z.weft(&["meta", "ls", "/mer/home/bob/d/f"]).ok();
    assert!(
        meta.stdout.contains("sample") && meta.stdout.contains("S-17"),
        "{}",
        meta.stdout
    );
    let sum = z.weft(&["stat", "--json", "/mer/home/bob/d/f"]).ok().json()["checksum"].clone();
    let shown = sh(&format!(
        "python3 -c 'import os,sys; sys.stdout.write(os.getxattr(\"{f}\", \"user.weft.checksum\").decode())'",
        f = home.at("d/f").display()
    ));
    assert_eq!(serde_json::Value::String(shown), sum);
    let listed = sh(&format!(
        "python3 -c 'import os; print(sorted(os.listxattr(\"{f}\")))'",
        f = home.at("d/f").display()
    ));
    assert!(
        listed.contains("user.sample") && listed.contains("user.weft.replicas"),
        "{listed}"
    );
    let refused = sh(&format!(
        "python3 -c 'import os\ntry:\n    os.setxattr(\"{f}\", \"user.weft.checksum\", b\"x\")\nexcept OSError as e:\n    print(e.errno)'",
        f = home.at("d/f").display()
    ));
    assert_eq!(
        refused.trim(),
        libc::EPERM.to_string(),
        "the zone's checksum is read-only"
    );

    // Read-only access: reads work, writes are refused by the zone.
    let shared = Mount::start(&z, &bob, "/mer/home/admin/shared");
    assert_eq!(std::fs::read(shared.at("ro.txt")).unwrap(), b"read me");
    // The modes show what the zone lets bob do (`stat` says it: `access`).
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: PathBuf| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(
        (mode(shared.at("ro.txt")), mode(shared.dir.clone())),
        (0o444, 0o555)
    );
    assert_eq!((mode(home.at("d/f")), mode(home.at("d"))), (0o644, 0o755));
    let seen = z
        .weft_as(&bob, &["stat", "--json", "/mer/home/admin/shared/ro.txt"])
        .ok()
        .json();
    assert_eq!(seen["access"], "read");
    assert_eq!(errno(std::fs::create_dir(shared.at("no"))), libc::EACCES);
    assert_eq!(errno(std::fs::remove_file(shared.at("ro.txt"))), libc::EACCES);
    let mut f = std::fs::File::create(shared.at("new")).unwrap();
    f.write_all(b"refused").unwrap();
    assert_eq!(errno(f.sync_all()), libc::EACCES);
    drop(f);
    z.weft(&["stat", "/mer/home/admin/shared/new"])
        .fails(3, "not_found");
}

#[test]
fn a_close_while_the_zone_is_down_fails_with_eio_and_the_mount_recovers() {
    use std::io::Write;
    let mut z = ZoneProcess::start(WEFT, "mdown").unwrap();
    let m = Mount::start(&z, z.admin_token(), "/mdown/home/admin");
    let mut f = std::fs::File::create(m.at("lost")).unwrap();
    f.write_all(&pseudo_random(6 << 20, 3)).unwrap();
    z.kill9();
    // The client's retries run out: the program is told its data is not stored.
    assert_eq!(errno(f.sync_all()), libc::EIO);
    drop(f);
    z.restart().unwrap();
    // Never a partial object: the file is not there at all.
    z.weft(&["stat", "/mdown/home/admin/lost"]).fails(3, "not_found");
    // The mount stayed up and works again.
    let data = pseudo_random(6 << 20, 4);
    std::fs::write(m.at("kept"), &data).unwrap();
    assert_eq!(b3(&std::fs::read(m.at("kept")).unwrap()), b3(&data));
    let sum = z.weft(&["stat", "--json", "/mdown/home/admin/kept"]).ok().json()["checksum"].clone();
    assert_eq!(sum, serde_json::Value::String(b3(&data)));
    assert_eq!(m.unmount(), 0);
}

#[test]
fn two_mounts_of_one_collection_see_what_the_other_closed() {
    let z = ZoneProcess::start(WEFT, "mtwo").unwrap();
    let a = Mount::start(&z, z.admin_token(), "/mtwo/home/admin");
    let b = Mount::start(&z, z.admin_token(), "/mtwo/home/admin");
    for (i, text) in ["one", "two", "three, longer", "4"].iter().enumerate() {
        std::fs::write(a.at("f"), text).unwrap();
        // Close-to-open: an open after the other's close reads what it closed.
        assert_eq!(std::fs::read_to_string(b.at("f")).unwrap(), *text, "version {i}");
    }
    std::fs::create_dir(b.at("dir")).unwrap();
    std::fs::write(b.at("dir/g"), "from b").unwrap();
    assert_eq!(std::fs::read_to_string(a.at("dir/g")).unwrap(), "from b");
    std::fs::remove_file(a.at("dir/g")).unwrap();
    wait_for("b to see the removal", || !b.at("dir/g").exists());
}

#[test]
fn the_readme_mount_example_runs_as_written() {
    let block = weft_testkit::cli::readme_block("A collection as a file system: `weft mount`");
    let z = ZoneProcess::start(WEFT, "weft").unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("results/sub")).unwrap();
    std::fs::write(home.path().join("results/a.csv"), "x,y\n1,2\n").unwrap();
    std::fs::write(home.path().join("results/sub/b.bin"), pseudo_random(300_000, 5)).unwrap();
    // The block as written, with `weft` this build and HOME a fresh directory.
    let out = Command::new("bash")
        .args(["-euc", block])
        .current_dir(home.path())
        .env("HOME", home.path())
        .env(
            "PATH",
            format!(
                "{}:{}",
                Path::new(WEFT).parent().unwrap().display(),
                std::env::var("PATH").unwrap()
            ),
        )
        .env("WEFT_URL", z.url())
        .env("WEFT_TOKEN", z.admin_token())
        .env("XDG_CACHE_HOME", home.path().join(".cache"))
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(said.contains("a.csv"), "ls -l through the mount: {said}");
    assert!(
        !weft_mount::is_mounted(&home.path().join("weft")),
        "umount ended it"
    );
    let got = zone_tree(&z, "/weft/home/admin/run-7", &home.path().join("back"));
    assert_same_tree(&home.path().join("results"), &got);
}

#[test]
fn write_back_keeps_closed_files_through_a_killed_mount_and_a_slow_zone() {
    let z = ZoneProcess::start(WEFT, "mwb").unwrap();
    // Uploads crawl through a link of 100 KB/s; names and listings are small and pass.
    let (rt, toxi, url) = slow_link(&z, 100);
    let tmp = tempfile::tempdir().unwrap();
    let (dir, cache) = (tmp.path().join("mnt"), tmp.path().join("cache"));
    std::fs::create_dir(&dir).unwrap();
    let home = "/mwb/home/admin";
    let start = || {
        let flags = ["--write-back"];
        Mount::start_at(
            &z,
            &url,
            z.admin_token(),
            home,
            &dir,
            &cache,
            &flags,
            tempfile::tempdir().unwrap(),
        )
    };
    let mut m = start();
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).unwrap();
    for i in 0..20usize {
        std::fs::write(src.join(format!("f{i}")), pseudo_random(i * 3001 + 7, i as u64)).unwrap();
    }
    std::fs::write(src.join("big"), pseudo_random(9 << 20, 77)).unwrap();
    // A close returns once the file is safe on local disk, long before the upload ends.
    sh(&format!("cp -r {}/. {}/", src.display(), dir.display()));
    let pending = sh(&format!(
        "python3 -c 'import os,sys; sys.stdout.write(os.getxattr(\"{}\", \"user.weft.pending\").decode())'",
        dir.display()
    ));
    assert!(pending.lines().any(|l| l == format!("{home}/big")), "{pending}");
    // `umount` refuses while files wait: nothing ends the mount before they are in.
    let out = Command::new("umount").arg(&dir).output().unwrap();
    assert!(!out.status.success(), "umount must refuse with files waiting");
    assert!(String::from_utf8_lossy(&out.stderr).contains("busy"), "{out:?}");

    // The mount killed with files waiting: they are in its journal, and the next mount
    // with the same cache directory (the dead mount detached) takes them up.
    let mut child = m.child.take().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let mut m2 = start();
    assert!(m2.log().contains("mount whose process had ended"), "{}", m2.log());
    // Stopped while the link still crawls, it finishes the uploads rather than leave.
    let pid = m2.child.as_ref().unwrap().id().to_string();
    sh(&format!("kill -TERM {pid}"));
    wait_for("the mount to say it uploads first", || {
        m2.log().contains("files closed and not in the zone yet")
    });
    assert!(
        m2.child.as_mut().unwrap().try_wait().unwrap().is_none(),
        "it waits for the uploads"
    );
    rt.block_on(toxi.remove_toxic("zone", "bandwidth")).unwrap();
    let status = m2.child.take().unwrap().wait().unwrap();
    assert_eq!(status.code(), Some(0), "{}", m2.log());
    assert!(!weft_mount::is_mounted(&dir));
    let got = zone_tree(&z, home, &tmp.path().join("zone"));
    assert_same_tree(&src, &got);
    drop(m);
}

#[test]
fn a_write_that_does_not_fit_the_cache_is_enospc_and_evicts_nothing_dirty() {
    use std::io::Write;
    let z = ZoneProcess::start(WEFT, "mfull").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (dir, cache) = (tmp.path().join("mnt"), tmp.path().join("cache"));
    std::fs::create_dir(&dir).unwrap();
    let m = Mount::start_at(
        &z,
        z.url(),
        z.admin_token(),
        "/mfull/home/admin",
        &dir,
        &cache,
        &["--cache-size", "1M"],
        tempfile::tempdir().unwrap(),
    );
    let mut a = std::fs::File::create(m.at("a")).unwrap();
    a.write_all(&pseudo_random(700_000, 1)).unwrap();
    // A second file open at once does not fit beside the first.
    let mut b = std::fs::File::create(m.at("b")).unwrap();
    let full = b.write_all(&pseudo_random(700_000, 2)).and_then(|()| b.flush());
    assert_eq!(errno(full), libc::ENOSPC);
    drop(b);
    a.sync_all().unwrap();
    drop(a);
    let sum = z.weft(&["stat", "--json", "/mfull/home/admin/a"]).ok().json()["checksum"].clone();
    assert_eq!(sum, serde_json::Value::String(b3(&pseudo_random(700_000, 1))));
    // Closed, the first file's bytes are free again: the next one fits.
    std::fs::write(m.at("c"), pseudo_random(900_000, 3)).unwrap();
    assert_eq!(
        b3(&std::fs::read(m.at("c")).unwrap()),
        b3(&pseudo_random(900_000, 3))
    );
}

#[test]
fn a_child_closing_an_inherited_descriptor_stores_nothing_half_written() {
    use std::io::Write;
    let z = ZoneProcess::start(WEFT, "mfork").unwrap();
    let m = Mount::start(&z, z.admin_token(), "/mfork/home/admin");
    let mut f = std::fs::File::create(m.at("half")).unwrap();
    f.write_all(&pseudo_random(1 << 20, 1)).unwrap();
    // Every fork+exec of this process closes a copy of the descriptor in the child (it
    // is close-on-exec): the kernel sends the mount a flush for each.
    for _ in 0..3 {
        assert!(Command::new("true").status().unwrap().success());
    }
    z.weft(&["stat", "/mfork/home/admin/half"]).fails(3, "not_found");
    f.write_all(&pseudo_random(1 << 20, 2)).unwrap();
    drop(f);
    let mut whole = pseudo_random(1 << 20, 1);
    whole.extend(pseudo_random(1 << 20, 2));
    let sum = z.weft(&["stat", "--json", "/mfork/home/admin/half"]).ok().json()["checksum"].clone();
    assert_eq!(sum, serde_json::Value::String(b3(&whole)));
}

#[test]
fn hdf5_and_netcdf_files_are_written_and_changed_in_place() {
    let z = ZoneProcess::start(WEFT, "mh5").unwrap();
    let m = Mount::start(&z, z.admin_token(), "/mh5/home/admin");
    let python = weft_testkit::tools_dir().join("pysdk/bin/python");
    let script = r#"
import sys, h5py, numpy as np, xarray as xr
d = sys.argv[1]
with h5py.File(f"{d}/run.h5", "w") as f:
    f.create_dataset("frames", data=np.arange(1_000_000, dtype="f8").reshape(1000, 1000), chunks=(100, 1000))
# HDF5 in place ("r+"): a slab rewritten, an attribute and a dataset added.
with h5py.File(f"{d}/run.h5", "r+") as f:
    f["frames"][500:510, :] = -1.0
    f["frames"].attrs["pixel_size"] = 0.83
    f.create_dataset("dark", data=np.ones((64, 64)))
with h5py.File(f"{d}/run.h5", "r") as f:
    a = f["frames"][...]
    assert a[505, 3] == -1.0 and a[499, 0] == 499000.0 and a[999, 999] == 999999.0
    assert f["frames"].attrs["pixel_size"] == 0.83 and f["dark"].shape == (64, 64)
ds = xr.Dataset({"t": (("x", "y"), np.random.default_rng(1).random((200, 300)))}, attrs={"site": "lrz"})
ds.to_netcdf(f"{d}/t.nc", engine="h5netcdf")
back = xr.open_dataset(f"{d}/t.nc", engine="h5netcdf").load()
assert back.attrs["site"] == "lrz" and (back["t"] == ds["t"]).all()
print("ok")
"#;
    let out = Command::new(python)
        .args(["-c", script])
        .arg(&m.dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // What the zone holds is what the programs wrote: its checksum re-read and verified.
    for f in ["run.h5", "t.nc"] {
        let local = std::fs::read(m.at(f)).unwrap();
        let sum = z
            .weft(&["stat", "--json", &format!("/mh5/home/admin/{f}")])
            .ok()
            .json()["checksum"]
            .clone();
        assert_eq!(sum, serde_json::Value::String(b3(&local)), "{f}");
        let verified = z
            .weft(&["checksum", "--verify", &format!("/mh5/home/admin/{f}")])
            .ok();
        assert!(verified.stdout.contains(": ok"), "{}", verified.stdout);
    }
}

#[test]
fn reads_are_verified_and_a_rotten_replica_is_eio_not_wrong_bytes() {
    let z = ZoneProcess::start(WEFT, "mrot").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // A file of several pieces, read through, and one of a single piece.
    let (big, small) = (
        pseudo_random(3 * weft_mount::PIECE as usize + 777, 4),
        pseudo_random(40_000, 5),
    );
    for (name, bytes) in [("big", &big), ("small", &small)] {
        std::fs::write(tmp.path().join(name), bytes).unwrap();
        z.weft(&[
            "put",
            tmp.path().join(name).to_str().unwrap(),
            &format!("/mrot/home/admin/{name}"),
        ])
        .ok();
        flip_byte(&replica_file(z.data_dir(), bytes), bytes.len() as u64 / 2);
    }
    let m = Mount::start(&z, z.admin_token(), "/mrot/home/admin");
    assert_eq!(
        errno(std::fs::read(m.at("big"))),
        libc::EIO,
        "a whole read ends in EIO"
    );
    assert_eq!(
        errno(std::fs::read(m.at("small"))),
        libc::EIO,
        "checked before its first byte"
    );
    // Still wrong on the next open: nothing of it was kept.
    assert_eq!(errno(std::fs::read(m.at("big"))), libc::EIO);
    assert!(
        m.log().contains("do not hash to the object's checksum"),
        "{}",
        m.log()
    );
}

#[test]
fn a_permission_revoked_while_a_file_is_open_fails_its_close_and_stores_nothing() {
    use std::io::Write;
    let z = ZoneProcess::start(WEFT, "mrev").unwrap();
    let bob = z.user_with_token("bob");
    z.weft(&["mkdir", "/mrev/home/admin/team"]).ok();
    z.weft(&["acl", "set", "/mrev/home/admin/team", "bob", "write"])
        .ok();
    let m = Mount::start(&z, &bob, "/mrev/home/admin/team");
    let mut f = std::fs::File::create(m.at("draft")).unwrap();
    f.write_all(b"written while allowed").unwrap();
    z.weft(&["acl", "set", "/mrev/home/admin/team", "bob", "none"])
        .ok();
    assert_eq!(errno(f.sync_all()), libc::EACCES);
    drop(f);
    z.weft(&["stat", "/mrev/home/admin/team/draft"])
        .fails(3, "not_found");
    let listing = std::fs::read_dir(m.at(".")).unwrap().next().expect("an outcome");
    assert_eq!(errno(listing), libc::EACCES);
}

#[test]
fn the_zone_killed_during_a_close_gives_eio_or_the_whole_object_never_a_part() {
    use std::io::Write;
    let mut z = ZoneProcess::start(WEFT, "mkill").unwrap();
    // The upload crawls (2 MB/s) so that the zone dies in its middle.
    let (_rt, _toxi, url) = slow_link(&z, 2000);
    let tmp = tempfile::tempdir().unwrap();
    let (dir, cache) = (tmp.path().join("mnt"), tmp.path().join("cache"));
    std::fs::create_dir(&dir).unwrap();
    let m = Mount::start_at(
        &z,
        &url,
        z.admin_token(),
        "/mkill/home/admin",
        &dir,
        &cache,
        &[],
        tempfile::tempdir().unwrap(),
    );
    let data = pseudo_random(24 << 20, 8);
    let (path, bytes) = (m.at("big"), data.clone());
    let writer = std::thread::spawn(move || {
        let mut f = std::fs::File::create(path)?;
        f.write_all(&bytes)?;
        f.sync_all()
    });
    // Bytes of the upload have reached the zone's temporary files.
    let tmp_dirs = || {
        let resources = z.data_dir().join("resources");
        std::fs::read_dir(resources)
            .into_iter()
            .flatten()
            .flatten()
            .flat_map(|r| {
                std::fs::read_dir(r.path().join(".weft-tmp"))
                    .into_iter()
                    .flatten()
                    .flatten()
            })
            .any(|f| f.metadata().is_ok_and(|m| m.len() > 0))
    };
    wait_for("the upload to be under way", tmp_dirs);
    z.kill9();
    z.restart().unwrap();
    match writer.join().unwrap() {
        // The client's retries reached the restarted zone: the whole file is there.
        Ok(()) => {
            let sum = z.weft(&["stat", "--json", "/mkill/home/admin/big"]).ok().json()["checksum"].clone();
            assert_eq!(sum, serde_json::Value::String(b3(&data)));
        }
        // Or the program was told, and nothing of the file is visible.
        Err(e) => {
            assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
            z.weft(&["stat", "/mkill/home/admin/big"]).fails(3, "not_found");
        }
    }
}

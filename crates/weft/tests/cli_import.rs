//! `weft resource import`: a directory already on a resource's file system becomes data
//! objects without a copy, as an HPC centre imports a project; a rescan registers only what
//! is new or changed; links out of the resource, special files and names in use are refused
//! and named; the checksums pending after the import are filled in by the scrubber or by the
//! first replication.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::{Duration, Instant};
use weft_testkit::cli::readme_block;
use weft_testkit::data::{b3, pseudo_random};
use weft_testkit::zone::ZoneProcess;

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// The files below `dir`, relative, sorted.
fn files_below(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                todo.push(e.path());
            } else {
                out.push(e.path().strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

fn get(z: &ZoneProcess, path: &str) -> Vec<u8> {
    let out = z.work().join("got");
    let _ = std::fs::remove_file(&out);
    z.weft(&["get", path, out.to_str().unwrap()]).ok();
    std::fs::read(out).unwrap()
}

/// `weft resource import hpc --path projects/run1 --into run1 EXTRA`.
fn import_run1(z: &ZoneProcess, extra: &[&str]) -> weft_testkit::cli::Run {
    let mut args = vec![
        "resource",
        "import",
        "hpc",
        "--path",
        "projects/run1",
        "--into",
        "run1",
    ];
    args.extend_from_slice(extra);
    z.weft(&args)
}

fn checksum_of(z: &ZoneProcess, path: &str) -> serde_json::Value {
    z.weft(&["stat", "--json", path]).ok().json()["checksum"].clone()
}

#[test]
fn a_project_directory_is_imported_in_place_and_a_rescan_registers_only_what_changed() {
    // A scrub interval of 10 s: the scrubber looks every second, pending checksums first.
    let z = ZoneProcess::options(WEFT, "testz")
        .args(["--scrub-interval", "10"])
        .start()
        .unwrap();
    let root = z.work().join("hpc");
    z.weft(&[
        "resource",
        "add",
        "hpc",
        "--kind",
        "fs",
        "--root",
        root.to_str().unwrap(),
    ])
    .ok();
    let run = root.join("projects/run1");
    let big = pseudo_random(3 << 20, 7);
    write(&run.join("a.txt"), b"first");
    write(&run.join("out/b.bin"), &big);
    write(&run.join("out/deep/c.dat"), b"");
    let outside = z.work().join("secret");
    write(&outside.join("key"), b"not for weft");
    symlink(outside.join("key"), run.join("escape")).unwrap();
    symlink(&outside, run.join("out/linkdir")).unwrap();
    // A name a logical path cannot carry, and a pipe.
    let not_utf8 = run.join(std::ffi::OsStr::from_bytes(b"out/bad\xff.dat"));
    write(&not_utf8, b"x");
    let pipe = run.join("out/pipe");
    assert!(std::process::Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .unwrap()
        .success());

    let r = import_run1(&z, &["--json"]);
    assert_eq!(r.code, 1, "refusals make the exit code 1: {r:?}");
    let report = r.json();
    assert_eq!(
        (
            report["registered"].as_u64(),
            report["updated"].as_u64(),
            report["refused"].as_u64()
        ),
        (Some(3), Some(0), Some(4)),
        "{report}"
    );
    assert_eq!(report["bytes"], (big.len() + 5) as u64);
    let mut refused: Vec<String> = report["refusals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| format!("{} {}", f["path"].as_str().unwrap(), f["why"].as_str().unwrap()))
        .collect();
    refused.sort();
    assert!(
        refused[0].starts_with("projects/run1/escape a symbolic link"),
        "{refused:?}"
    );
    assert!(
        refused[1].starts_with("projects/run1/out/bad\u{fffd}.dat its name is not UTF-8"),
        "{refused:?}"
    );
    assert!(
        refused[2].starts_with("projects/run1/out/linkdir a symbolic link"),
        "{refused:?}"
    );
    assert!(
        refused[3].starts_with("projects/run1/out/pipe not a regular file"),
        "{refused:?}"
    );
    std::fs::remove_file(not_utf8).unwrap();
    std::fs::remove_file(pipe).unwrap();
    let listed = z.weft(&["find", "run1"]).ok().stdout;
    assert!(listed.contains("b.bin") && !listed.contains("escape"), "{listed}");

    // Ordinary objects, with the bytes where they were: nothing was copied.
    assert_eq!(get(&z, "run1/out/b.bin"), big);
    assert_eq!(get(&z, "run1/a.txt"), b"first");
    assert_eq!(get(&z, "run1/out/deep/c.dat"), b"");
    assert_eq!(
        files_below(&root),
        [
            "projects/run1/a.txt",
            "projects/run1/escape",
            "projects/run1/out/b.bin",
            "projects/run1/out/deep/c.dat",
            "projects/run1/out/linkdir"
        ]
    );
    // The scrubber reads the pending checksums soon after.
    let until = Instant::now() + Duration::from_secs(60);
    while checksum_of(&z, "run1/out/b.bin") != b3(&big) {
        assert!(Instant::now() < until, "the checksum stayed pending: {}", z.log());
        std::thread::sleep(Duration::from_millis(200));
    }

    // A rescan with nothing changed registers nothing.
    let again = import_run1(&z, &["--json"]).json();
    assert_eq!(
        (again["registered"].as_u64(), again["unchanged"].as_u64()),
        (Some(0), Some(3)),
        "{again}"
    );

    // New and changed files are registered; a moved object stays known; a name in use is
    // refused, the object there untouched.
    std::fs::remove_file(run.join("escape")).unwrap();
    std::fs::remove_file(run.join("out/linkdir")).unwrap();
    write(&run.join("a.txt"), b"second, longer");
    write(&run.join("new.txt"), b"new");
    z.weft(&["mv", "run1/out/deep/c.dat", "run1/c-moved.dat"]).ok();
    let mine = z.work().join("mine.txt");
    std::fs::write(&mine, b"put by a user").unwrap();
    z.weft(&["put", mine.to_str().unwrap(), "run1/taken.txt"]).ok();
    write(&run.join("taken.txt"), b"an instrument's file");
    let r = import_run1(&z, &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.contains("1 new, 1 updated, 2 unchanged, 1 refused"),
        "{r:?}"
    );
    assert!(
        r.stderr.contains(
            "not imported: projects/run1/taken.txt: /testz/home/admin/run1/taken.txt exists already"
        ),
        "{r:?}"
    );
    assert!(r.stderr.contains("(import_refused)"), "{r:?}");
    assert_eq!(get(&z, "run1/a.txt"), b"second, longer");
    assert_eq!(get(&z, "run1/new.txt"), b"new");
    assert_eq!(get(&z, "run1/taken.txt"), b"put by a user");
    assert!(z.weft(&["stat", "run1/out/deep/c.dat"]).code == 3);
    let until = Instant::now() + Duration::from_secs(60);
    while checksum_of(&z, "run1/a.txt") != b3(b"second, longer") {
        assert!(
            Instant::now() < until,
            "the changed file's checksum stayed old or pending"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // Removing an imported object removes its file, as for any object (iRODS' `irm`).
    z.weft(&["rm", "run1/new.txt"]).ok();
    assert!(!run.join("new.txt").exists());

    // --watch keeps rescanning until interrupted; a refusal it met is named once.
    let mut watch = z
        .command()
        .env("WEFT_URL", z.url())
        .env("WEFT_TOKEN", z.admin_token())
        .args([
            "resource",
            "import",
            "hpc",
            "--path",
            "projects/run1",
            "--into",
            "run1",
            "--watch",
            "--every",
            "1",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    write(&run.join("later/d.txt"), b"arrived later");
    let until = Instant::now() + Duration::from_secs(60);
    while z.weft(&["stat", "run1/later/d.txt"]).code != 0 {
        assert!(Instant::now() < until, "the watch never registered the new file");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::process::Command::new("kill")
        .args(["-INT", &watch.id().to_string()])
        .status()
        .unwrap();
    let status = watch.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(watch.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{status:?}: {err}");
    assert_eq!(
        err.matches("not imported: projects/run1/taken.txt").count(),
        1,
        "{err}"
    );
    assert_eq!(get(&z, "run1/later/d.txt"), b"arrived later");
}

#[test]
fn only_an_administrator_imports_and_only_below_the_resource_root() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let root = z.work().join("hpc");
    let other = z.work().join("tape");
    for (name, dir) in [("hpc", &root), ("tape", &other)] {
        z.weft(&[
            "resource",
            "add",
            name,
            "--kind",
            "fs",
            "--root",
            dir.to_str().unwrap(),
        ])
        .ok();
    }
    let file = pseudo_random(100_000, 3);
    write(&root.join("projects/p/f.bin"), &file);
    symlink(z.work(), root.join("projects/out")).unwrap();

    let alice = z.user_with_token("alice");
    z.weft_as(
        &alice,
        &[
            "resource",
            "import",
            "hpc",
            "--path",
            "projects/p",
            "--into",
            "/testz/home/alice/p",
        ],
    )
    .fails(5, "forbidden");
    let import = |path: &str| z.weft(&["resource", "import", "hpc", "--path", path, "--into", "p"]);
    for bad in [
        "../hpc",
        "/etc",
        "data",
        "data/ab",
        "packs",
        ".weft-tmp",
        "projects/../..",
    ] {
        import(bad).fails(1, "invalid_argument");
    }
    import("projects/out").fails(5, "forbidden");
    import("projects/missing").fails(3, "not_found");
    z.weft(&[
        "resource",
        "import",
        "nowhere",
        "--path",
        "projects/p",
        "--into",
        "p",
    ])
    .fails(1, "unknown_resource");
    assert!(z.weft(&["ls", "p"]).stdout.trim().is_empty());
    assert!(files_below(&z.work()).iter().all(|f| !f.starts_with("hpc/data/")));

    // Imported by the administrator into alice's home, the object is hers.
    z.weft(&[
        "resource",
        "import",
        "hpc",
        "--path",
        "projects/p",
        "--into",
        "/testz/home/alice/p",
    ])
    .ok();
    assert_eq!(
        z.weft_as(&alice, &["stat", "--json", "p/f.bin"]).ok().json()["owner"],
        "alice"
    );
    // Without a scrubber pass, a replication reads the file whole and records its checksum.
    assert!(checksum_of(&z, "/testz/home/alice/p/f.bin").is_null());
    z.weft_as(&alice, &["replicate", "p/f.bin", "--to", "testz:tape"])
        .ok();
    assert_eq!(checksum_of(&z, "/testz/home/alice/p/f.bin"), b3(&file));
    assert_eq!(z.weft_as(&alice, &["checksum", "--verify", "p/f.bin"]).code, 0);
}

#[test]
fn the_readme_import_example_runs_as_written() {
    let block = readme_block("Files already on a resource: `weft resource import`");
    let z = ZoneProcess::start(WEFT, "weft").unwrap();
    z.user_with_token("alice");
    let lustre = z.work().join("lustre");
    let file = pseudo_random(50_000, 9);
    write(&lustre.join("weft/projects/climate-42/t2m/2026.nc"), &file);
    let mut lines = block.lines();
    for expect in ["weft resource add ", "weft resource import "] {
        let line = lines.next().unwrap();
        assert!(line.starts_with(expect), "{line}");
        let args: Vec<String> = line
            .split_whitespace()
            .skip(1)
            .map(|w| w.replace("/lustre", lustre.to_str().unwrap()))
            .collect();
        z.weft(&args.iter().map(String::as_str).collect::<Vec<_>>()).ok();
    }
    let stat = z
        .weft(&["stat", "--json", "/weft/home/alice/climate-42/t2m/2026.nc"])
        .ok()
        .json();
    assert_eq!(
        (stat["owner"].as_str(), stat["size"].as_u64()),
        (Some("alice"), Some(50_000))
    );
    assert_eq!(get(&z, "/weft/home/alice/climate-42/t2m/2026.nc"), file);
    let watch = lines.next().unwrap();
    assert!(watch.contains("--watch --every 300"), "{watch}");
}

//! Staging areas: transfers between a zone's namespace and external directories and
//! buckets the administrator declared — a tree staged in from `file://`, out again, to and
//! from a real MinIO bucket — and everything that must be refused before a byte moves.

mod common;

use common::{b3, checksum, code, code_of, pseudo_random, run_transfer as run, start_named, TestZone};
use serde_json::{json, Value};
use std::path::Path;
use weft_testkit::minio::Minio;

/// A tree on disk: a large file (moved as pieces), a small one, one in a subdirectory.
fn make_tree(dir: &Path) -> Vec<(&'static str, Vec<u8>)> {
    let files = vec![
        ("big.bin", pseudo_random(40 << 20, 7)),
        ("notes.txt", b"staged in from the cluster\n".to_vec()),
        ("run1/out.nc", pseudo_random(300_000, 8)),
    ];
    for (rel, data) in &files {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, data).unwrap();
    }
    files
}

async fn add_area(zone: &TestZone, body: Value) -> reqwest::Response {
    zone.post("staging", &zone.admin_token)
        .json(&body)
        .send()
        .await
        .unwrap()
}

async fn transfer_count(zone: &TestZone, token: &str) -> usize {
    zone.get_json("transfers", token).await.as_array().unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trees_stage_in_and_out_of_allowed_directories() {
    let z = start_named("hpc").await;
    let alice = z.user("alice").await;
    let disk = tempfile::tempdir().unwrap();
    let scratch = disk.path().join("scratch");
    let input = scratch.join("alice/in");
    let files = make_tree(&input);

    let r = add_area(
        &z,
        json!({"name": "scratch", "url": format!("file://{}", scratch.display())}),
    )
    .await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let areas = z.get_json("staging", &alice).await;
    assert_eq!(
        areas[0]["name"], "scratch",
        "users see where staging is allowed: {areas}"
    );
    assert_eq!(areas[0]["kind"], "fs");

    // Stage in: the tree lands under alice's home with checksums of the disk bytes.
    let src = format!("file://{}", input.display());
    let t = run(
        &z,
        &alice,
        json!({"sources": [src], "destination": "/hpc/home/alice", "recursive": true}),
    )
    .await;
    assert_eq!(t["state"], "succeeded", "{t}");
    assert_eq!(t["files_done"], 3);
    for (rel, data) in &files {
        assert_eq!(
            checksum(&z, &format!("/hpc/home/alice/in/{rel}")).await,
            b3(data),
            "{rel}"
        );
    }

    // Stage out, re-reading what was written: the bytes on disk are the same.
    let out = scratch.join("alice/out");
    std::fs::create_dir_all(&out).unwrap();
    let dst = format!("file://{}", out.display());
    let t = run(
        &z,
        &alice,
        json!({"sources": ["/hpc/home/alice/in"], "destination": dst, "recursive": true, "verify": "strong"}),
    )
    .await;
    assert_eq!(t["state"], "succeeded", "{t}");
    for (rel, data) in &files {
        assert!(
            std::fs::read(out.join("in").join(rel)).unwrap() == *data,
            "{rel} differs on disk"
        );
    }

    // Sync: files of a staging area carry no checksum, so equal sizes are hashed; one
    // changed object moves, and replaces the file on disk.
    let changed = b"changed in the zone\n".repeat(3);
    let notes_len = files[1].1.len();
    let same_size = &changed[..notes_len];
    let r = z
        .put("data/hpc/home/alice/in/notes.txt?overwrite=true", &alice)
        .body(same_size.to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let t = run(
        &z,
        &alice,
        json!({"sources": ["/hpc/home/alice/in"], "destination": dst, "recursive": true, "sync": true}),
    )
    .await;
    assert_eq!(
        (t["files_done"].as_u64(), t["files_skipped"].as_u64()),
        (Some(1), Some(2)),
        "{t}"
    );
    assert_eq!(std::fs::read(out.join("in/notes.txt")).unwrap(), same_size);

    // A dry run from the area lists what would move.
    let plan: Value = z
        .post("transfers/plan", &alice)
        .json(&json!({"sources": [src], "destination": "/hpc/home/alice", "recursive": true, "sync": true}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(plan["files_to_move"], 1, "only notes.txt differs: {plan}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staging_outside_allowed_areas_is_refused_before_any_byte_moves() {
    let z = start_named("hpc").await;
    let alice = z.user("alice").await;
    let r = z
        .post("groups", &z.admin_token)
        .json(&json!({"name": "hpc-users"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let disk = tempfile::tempdir().unwrap();
    let (open, project) = (disk.path().join("open"), disk.path().join("project"));
    std::fs::create_dir_all(&open).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(open.join("a.txt"), b"alpha").unwrap();
    std::fs::write(project.join("p.txt"), b"secret project").unwrap();
    std::os::unix::fs::symlink("/etc", open.join("etc-link")).unwrap();
    assert_eq!(
        z.put_bytes("/hpc/home/alice/x.txt", b"x", &alice).await.status(),
        201
    );

    // Declaring areas: administrators only; bad declarations change nothing.
    let file_url = |p: &Path| format!("file://{}", p.display());
    let before = z.get_json("staging", &z.admin_token).await;
    let r = z
        .post("staging", &alice)
        .json(&json!({"name": "mine", "url": file_url(&open)}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (403, "forbidden".into()));
    for (body, want) in [
        (
            json!({"name": "Bad Name", "url": file_url(&open)}),
            (400, "invalid_name"),
        ),
        (
            json!({"name": "rel", "url": "file://relative/dir"}),
            (400, "invalid_argument"),
        ),
        (
            json!({"name": "logical", "url": "/hpc/home"}),
            (400, "invalid_argument"),
        ),
        (
            json!({"name": "keys", "url": file_url(&open), "access_key": "k"}),
            (400, "invalid_argument"),
        ),
        (
            json!({"name": "nos3", "url": "s3://bucket/p"}),
            (400, "invalid_argument"),
        ),
        (
            json!({"name": "gone", "url": file_url(&disk.path().join("missing"))}),
            (400, "invalid_argument"),
        ),
        (
            json!({"name": "who", "url": file_url(&open), "allow": ["nobody"]}),
            (404, "not_found"),
        ),
    ] {
        let r = add_area(&z, body.clone()).await;
        assert_eq!(code(r).await, (want.0, want.1.to_owned()), "{body}");
    }
    assert_eq!(z.get_json("staging", &z.admin_token).await, before);

    let r = add_area(&z, json!({"name": "open", "url": file_url(&open)})).await;
    assert_eq!(r.status(), 201);
    let r = add_area(&z, json!({"name": "again", "url": file_url(&open)})).await;
    assert_eq!(code(r).await, (409, "already_exists".into()));
    let r = add_area(
        &z,
        json!({"name": "project", "url": file_url(&project), "allow": ["hpc-users"]}),
    )
    .await;
    assert_eq!(r.status(), 201);

    // Refused at submission, each with its cause; nothing is queued.
    let start = |src: String, dst: String| {
        let (z, alice) = (&z, &alice);
        async move {
            let r = z
                .post("transfers", alice)
                .json(&json!({"sources": [src], "destination": dst, "recursive": true}))
                .send()
                .await
                .unwrap();
            code_of(r).await
        }
    };
    let home = "/hpc/home/alice".to_owned();
    let (s, c, m) = start("file:///etc/passwd".into(), home.clone()).await;
    assert_eq!((s, c.as_str()), (403, "forbidden"), "{m}");
    assert!(m.contains("allows no staging at file:///etc/passwd"), "{m}");
    assert!(m.contains(&file_url(&open)), "names what is allowed: {m}");
    let (s, c, m) = start("/hpc/home/alice/x.txt".into(), "file:///tmp/elsewhere".into()).await;
    assert_eq!((s, c.as_str()), (403, "forbidden"), "{m}");
    let (s, c, m) = start(file_url(&project.join("p.txt")), home.clone()).await;
    assert_eq!((s, c.as_str()), (403, "forbidden"), "{m}");
    assert!(m.contains("not open to alice"), "{m}");
    let (s, c, m) = start(
        format!("{}/passwd", file_url(&open.join("etc-link"))),
        home.clone(),
    )
    .await;
    assert_eq!((s, c.as_str()), (403, "forbidden"), "{m}");
    assert!(m.contains("symbolic link"), "{m}");
    let (s, c, _) = start(file_url(&open.join("missing.txt")), home.clone()).await;
    assert_eq!((s, c.as_str()), (404, "not_found"));
    assert_eq!(transfer_count(&z, &alice).await, 0);

    // Links are not followed when listing either: the tree holds a.txt only.
    let t = run(
        &z,
        &alice,
        json!({"sources": [file_url(&open)], "destination": home, "recursive": true}),
    )
    .await;
    assert_eq!(t["state"], "succeeded", "{t}");
    assert_eq!(t["files_total"], 1, "{t}");

    // Membership opens the project area; removing the area closes it again.
    let r = z
        .put("groups/hpc-users/members/alice", &z.admin_token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let t = run(
        &z,
        &alice,
        json!({"sources": [file_url(&project.join("p.txt"))], "destination": "/hpc/home/alice/p.txt"}),
    )
    .await;
    assert_eq!(t["state"], "succeeded", "{t}");
    assert_eq!(checksum(&z, "/hpc/home/alice/p.txt").await, b3(b"secret project"));
    assert_eq!(
        z.delete("staging/project", &alice).send().await.unwrap().status(),
        403
    );
    assert_eq!(
        z.delete("staging/project", &z.admin_token)
            .send()
            .await
            .unwrap()
            .status(),
        204
    );
    let (s, _, _) = start(file_url(&project.join("p.txt")), "/hpc/home/alice/p2.txt".into()).await;
    assert_eq!(s, 403);
    assert_eq!(
        z.delete("staging/project", &z.admin_token)
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buckets_stage_with_credentials_held_by_the_zone() {
    let minio = Minio::start().expect("MinIO must start (run .ci/install-tools.sh)");
    minio.create_bucket("stage").await.unwrap();
    let z = start_named("hpc").await;
    let alice = z.user("alice").await;
    let area = |name: &str, secret: &str, check: bool| {
        json!({"name": name, "url": "s3://stage/projects", "endpoint": minio.endpoint(),
               "region": minio.region(), "access_key": minio.access_key(), "secret_key": secret,
               "check": check})
    };

    // Wrong credentials: refused when declared, with the cause.
    let r = add_area(&z, area("bad", "not-the-secret", true)).await;
    let (status, code, message) = code_of(r).await;
    assert_eq!((status, code.as_str()), (400, "invalid_argument"), "{message}");
    assert!(message.contains("does not work"), "{message}");

    let r = add_area(&z, area("s3stage", minio.secret_key(), true)).await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let listed = z.get_json("staging", &alice).await.to_string();
    assert!(
        !listed.contains(minio.secret_key()),
        "credentials never listed: {listed}"
    );
    assert!(listed.contains(&minio.endpoint()), "{listed}");

    // Out to the bucket and back in: the bytes survive both ways.
    assert_eq!(
        z.post("mkdir/hpc/home/alice/set", &alice)
            .send()
            .await
            .unwrap()
            .status(),
        201
    );
    let big = pseudo_random(40 << 20, 9);
    let small = b"a small staged object".to_vec();
    let r = z
        .put("data/hpc/home/alice/set/big.bin", &alice)
        .body(big.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(
        z.put_bytes("/hpc/home/alice/set/small.txt", &small, &alice)
            .await
            .status(),
        201
    );
    let t = run(
        &z,
        &alice,
        json!({"sources": ["/hpc/home/alice/set"], "destination": "s3://stage/projects/run7", "recursive": true, "verify": "strong"}),
    )
    .await;
    assert_eq!(t["state"], "succeeded", "{t}");
    let t = run(
        &z,
        &alice,
        json!({"sources": ["s3://stage/projects/run7"], "destination": "/hpc/home/alice/back", "recursive": true}),
    )
    .await;
    assert_eq!(t["state"], "succeeded", "{t}");
    assert_eq!(checksum(&z, "/hpc/home/alice/back/big.bin").await, b3(&big));
    assert_eq!(checksum(&z, "/hpc/home/alice/back/small.txt").await, b3(&small));

    // Credentials that stopped working (declared without a check, as a rotated key would
    // be): refused at submission, naming the cause; nothing queued.
    let mut stale = area("rotated", "rotated-secret", false);
    stale["url"] = json!("s3://stage/other");
    assert_eq!(add_area(&z, stale).await.status(), 201);
    let before = transfer_count(&z, &alice).await;
    let r = z
        .post("transfers", &alice)
        .json(&json!({"sources": ["s3://stage/other/x"], "destination": "/hpc/home/alice"}))
        .send()
        .await
        .unwrap();
    let (status, code, message) = code_of(r).await;
    assert_eq!((status, code.as_str()), (403, "forbidden"), "{message}");
    assert!(message.contains("s3://stage/other"), "{message}");
    assert_eq!(transfer_count(&z, &alice).await, before);
}

/// A user who can write in a staging area swaps a directory of it for a symbolic link to
/// the zone's data directory (`renameat2(RENAME_EXCHANGE)`, over and over) while transfers
/// read from it and write into it, hoping the zone reads its own `admin.token` for them or
/// overwrites it with theirs. The zone resolves every name beneath the area's descriptor
/// with links refused: a transfer fails `forbidden` naming the link, or moves the real
/// files; the zone's files are never read or written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_swapped_for_a_link_never_leads_the_zone_out_of_the_area() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;

    let z = start_named("hpc").await;
    let mallory = z.user("mallory").await;
    let area = tempfile::tempdir().unwrap();
    let r = add_area(
        &z,
        json!({"name": "scratch", "url": format!("file://{}", area.path().display())}),
    )
    .await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());

    // The names the zone keeps in its data directory, in a real directory of the area
    // (stage in) and as objects to stage out.
    let token_before = std::fs::read(z.data_dir.join("admin.token")).unwrap();
    let decoy = |name: &str| format!("mallory's {name}\n").into_bytes();
    for side in ["in", "out"] {
        let real = area.path().join(side).join("real");
        std::fs::create_dir_all(&real).unwrap();
        std::os::unix::fs::symlink(&z.data_dir, area.path().join(side).join("link")).unwrap();
        if side == "in" {
            for name in ["admin.token", "catalog.db"] {
                std::fs::write(real.join(name), decoy(name)).unwrap();
            }
        }
    }
    let r = z
        .post("mkdir/hpc/home/mallory/out", &mallory)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    for name in ["admin.token", "catalog.db"] {
        let r = z
            .put_bytes(&format!("/hpc/home/mallory/out/{name}"), &decoy(name), &mallory)
            .await;
        assert_eq!(r.status(), 201);
    }

    let names_before = dir_names(&z.data_dir);
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let swappers: Vec<_> = ["in", "out"]
        .into_iter()
        .map(|side| {
            let (real, link) = (
                area.path().join(side).join("real"),
                area.path().join(side).join("link"),
            );
            let (stop, swaps) = (stop.clone(), swaps.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    rustix::fs::renameat_with(
                        rustix::fs::CWD,
                        &real,
                        rustix::fs::CWD,
                        &link,
                        rustix::fs::RenameFlags::EXCHANGE,
                    )
                    .expect("renameat2(RENAME_EXCHANGE)");
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();

    let real_in = format!("file://{}/in/real", area.path().display());
    let real_out = format!("file://{}/out/real", area.path().display());
    let (mut refused, mut moved) = (0, 0);
    for round in 0..12 {
        for body in [
            json!({"sources": [real_in], "destination": format!("/hpc/home/mallory/in{round}"), "recursive": true}),
            json!({"sources": ["/hpc/home/mallory/out"], "destination": real_out, "recursive": true}),
        ] {
            let r = z.post("transfers", &mallory).json(&body).send().await.unwrap();
            if r.status() != 201 {
                let (status, code, message) = code_of(r).await;
                assert_eq!((status, code.as_str()), (403, "forbidden"), "{message}");
                assert!(message.contains("symbolic link"), "{message}");
                refused += 1;
                continue;
            }
            let id = r.json::<Value>().await.unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned();
            let t = common::wait_transfer(&z, &mallory, &id).await;
            let files = z.get_json(&format!("transfers/{id}/files"), &mallory).await;
            for f in files.as_array().unwrap() {
                match f["state"].as_str().unwrap() {
                    "done" => moved += 1,
                    "failed" => {
                        let error = f["error"].as_str().unwrap_or_default();
                        assert!(error.contains("symbolic link"), "{f} of {t}");
                        refused += 1;
                    }
                    other => panic!("file in state {other}: {f} of {t}"),
                }
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    for s in swappers {
        s.join().unwrap();
    }
    assert!(
        swaps.load(Ordering::Relaxed) > 100 && refused > 0,
        "the race ran ({} swaps) and links were met ({refused} refusals, {moved} files moved)",
        swaps.load(Ordering::Relaxed)
    );

    // Nothing of the zone's was read: every staged-in object is mallory's decoy.
    let objects = z.snapshot_of("/hpc/home/mallory").await.1;
    for path in objects.iter().filter(|p| p.contains("/in")) {
        let name = path.rsplit('/').next().unwrap();
        let r = z.get(&format!("data{path}"), &mallory).send().await.unwrap();
        assert_eq!(
            r.bytes().await.unwrap(),
            decoy(name),
            "{path} holds what the zone keeps"
        );
    }
    // Nothing of the zone's was written: its token and its files are as they were.
    assert_eq!(
        std::fs::read(z.data_dir.join("admin.token")).unwrap(),
        token_before
    );
    let sqlite = std::fs::read(z.data_dir.join("catalog.db")).unwrap();
    assert!(
        sqlite.starts_with(b"SQLite format 3\0"),
        "catalog.db was overwritten"
    );
    let new: Vec<_> = dir_names(&z.data_dir)
        .into_iter()
        .filter(|n| !names_before.contains(n) && !n.starts_with("catalog.db-"))
        .collect();
    assert!(new.is_empty(), "the data directory gained {new:?}");
    assert_eq!(z.get_json("whoami", &z.admin_token).await["user"], "admin");

    // With the real directories in place the same transfers move the decoys.
    for side in ["in", "out"] {
        let dir = area.path().join(side);
        if std::fs::symlink_metadata(dir.join("real")).unwrap().is_symlink() {
            std::fs::rename(dir.join("real"), dir.join("tmp")).unwrap();
            std::fs::rename(dir.join("link"), dir.join("real")).unwrap();
            std::fs::rename(dir.join("tmp"), dir.join("link")).unwrap();
        }
    }
    let t = run(
        &z,
        &mallory,
        json!({"sources": [real_in], "destination": "/hpc/home/mallory/calm", "recursive": true}),
    )
    .await;
    assert_eq!(t["state"], "succeeded", "{t}");
    let t = run(
        &z,
        &mallory,
        json!({"sources": ["/hpc/home/mallory/out"], "destination": real_out, "recursive": true}),
    )
    .await;
    assert_eq!(t["state"], "succeeded", "{t}");
    let out = area.path().join("out/real/out/admin.token");
    assert_eq!(std::fs::read(out).unwrap(), decoy("admin.token"));
}

fn dir_names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

//! Several `weft serve` processes of one zone on one PostgreSQL catalog: they start at once
//! on an empty catalog, each takes any request, and what one was told the others know.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use weft_testkit::cli::{clean_command, run};
use weft_testkit::free_port;
use weft_testkit::postgres::Postgres;
use weft_testkit::zone::{ZoneOptions, ZoneProcess};

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

/// nginx, stopped when the test ends as its master process is meant to be (SIGTERM: it
/// ends its workers too; SIGKILL would leave them running).
struct Stopped(Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the pid of a child this guard owns and has not reaped.
        unsafe { libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl std::ops::Deref for Stopped {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Stopped {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

/// A server of zone `z` on `catalog`, to start.
fn server(catalog: &str) -> ZoneOptions {
    ZoneProcess::options(WEFT, "z").args([
        "--catalog",
        catalog,
        // A pass every 2 s, so that the tests see the scrubber run.
        "--scrub-interval",
        "20",
    ])
}

/// Whether the server on `port` answers its health check with 200.
fn healthy(port: u16) -> bool {
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let req = "GET /api/v1/health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n";
    let mut answer = String::new();
    s.write_all(req.as_bytes()).is_ok()
        && s.read_to_string(&mut answer).is_ok()
        && answer.starts_with("HTTP/1.1 200")
}

/// Three servers started at the same moment on an empty catalog all come up: the zone is
/// set up once (one administrator, whose token one of them writes and all accept), and a
/// user one server creates can work through every other.
#[test]
fn servers_starting_at_once_on_an_empty_catalog_all_start() {
    let pg = Postgres::start().unwrap();
    let catalog = pg.create_database("z").unwrap();
    let root = tempfile::tempdir().unwrap();
    let dirs: Vec<_> = (0..3).map(|i| root.path().join(format!("server-{i}"))).collect();
    // The zone's key file, made once and copied to every server, as an operator does.
    run(Command::new(WEFT).args(["key", "rotate", "--data-dir"]).arg({
        std::fs::create_dir(&dirs[0]).unwrap();
        &dirs[0]
    }))
    .ok();
    for d in &dirs[1..] {
        std::fs::create_dir(d).unwrap();
        std::fs::copy(dirs[0].join("secret.key"), d.join("secret.key")).unwrap();
    }
    // All three at once, none waiting for another.
    let catalog = catalog.as_str();
    let servers: Vec<ZoneProcess> = std::thread::scope(|s| {
        let starts: Vec<_> = dirs
            .iter()
            .map(|d| s.spawn(move || server(catalog).data_dir(d).token_optional().start()))
            .collect();
        starts.into_iter().map(|t| t.join().unwrap().unwrap()).collect()
    });
    let ports: Vec<u16> = servers.iter().map(ZoneProcess::port).collect();

    let tokens: Vec<&str> = servers
        .iter()
        .map(ZoneProcess::admin_token)
        .filter(|t| !t.is_empty())
        .collect();
    assert_eq!(tokens.len(), 1, "one server set the zone up");
    let admin = tokens[0];
    let weft = |port: u16, token: &str, args: &[&str]| {
        let mut cmd = clean_command(WEFT, root.path(), root.path());
        cmd.env("WEFT_URL", format!("http://127.0.0.1:{port}"))
            .env("WEFT_TOKEN", token);
        run(cmd.args(args))
    };
    let created = weft(ports[0], admin, &["token", "create", "--user", "admin"]).ok();
    drop(created);
    weft(ports[1], admin, &["user", "add", "carol"]).ok();
    let carol = weft(ports[2], admin, &["token", "create", "--user", "carol"]).ok();
    let carol = carol.stdout.lines().last().unwrap().trim().to_owned();
    std::fs::write(root.path().join("hello.txt"), b"hello from server 0").unwrap();
    weft(ports[0], &carol, &["put", "hello.txt", "hello.txt"]).ok();
    weft(ports[2], &carol, &["get", "hello.txt", "back.txt"]).ok();
    assert_eq!(
        std::fs::read(root.path().join("back.txt")).unwrap(),
        b"hello from server 0"
    );
    let listed = weft(ports[1], &carol, &["ls"]).ok();
    assert!(listed.stdout.contains("hello.txt"), "{}", listed.stdout);
}

/// The README's production layout, run as written (docs/deploy/nginx.conf, with this
/// test's ports): two servers of one zone behind nginx. Data goes in and out through it,
/// the request id nginx makes reaches the zone, and when the server nginx sends this
/// client to is killed, the zone keeps serving through the other.
#[test]
fn a_zone_behind_nginx_keeps_serving_when_a_server_dies() {
    let nginx_bin = weft_testkit::tools_dir().join("bin/nginx");
    assert!(
        nginx_bin.exists(),
        "nginx not found at {}: run .ci/install-tools.sh",
        nginx_bin.display()
    );
    let Servers {
        _pg,
        root,
        ports,
        mut servers,
        admin,
        ..
    } = servers(2);

    // nginx with the documented configuration, pointed at these servers.
    let conf_text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/deploy/nginx.conf"
    ))
    .unwrap();
    let front = free_port();
    let nx = root.path().join("nginx");
    std::fs::create_dir(&nx).unwrap();
    let conf_text = conf_text
        .replace("server server1.example:8640", &format!("server 127.0.0.1:{}", ports[0]))
        .replace("server server2.example:8640", &format!("server 127.0.0.1:{}", ports[1]))
        .replace("listen 8640;", &format!("listen 127.0.0.1:{front};"))
        .replace("worker_processes auto;", &format!("worker_processes 1;\npid {0}/nginx.pid;\nerror_log {0}/error.log;", nx.display()))
        .replace(
            "http {",
            &format!(
                "http {{\n    access_log {0}/access.log;\n    client_body_temp_path {0}/body;\n    proxy_temp_path {0}/proxy;\n    fastcgi_temp_path {0}/fastcgi;\n    uwsgi_temp_path {0}/uwsgi;\n    scgi_temp_path {0}/scgi;",
                nx.display()
            ),
        );
    assert!(
        conf_text.contains(&format!("127.0.0.1:{front}"))
            && conf_text.contains(&format!("127.0.0.1:{}", ports[1]))
    );
    let conf = nx.join("nginx.conf");
    std::fs::write(&conf, conf_text).unwrap();
    let mut nginx = Command::new(&nginx_bin)
        .arg("-p")
        .arg(&nx)
        .arg("-c")
        .arg(&conf)
        .args(["-e", "stderr", "-g", "daemon off;"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(nx.join("stderr.log")).unwrap())
        .spawn()
        .map(Stopped)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !healthy(front) {
        assert!(
            nginx.try_wait().unwrap().is_none(),
            "nginx exited: {}",
            std::fs::read_to_string(nx.join("stderr.log")).unwrap()
        );
        assert!(Instant::now() < deadline, "nginx never answered");
        std::thread::sleep(Duration::from_millis(100));
    }

    let weft = |args: &[&str]| {
        let mut cmd = clean_command(WEFT, root.path(), root.path());
        cmd.env("WEFT_URL", format!("http://127.0.0.1:{front}"))
            .env("WEFT_TOKEN", &admin);
        run(cmd.args(args))
    };
    let big: Vec<u8> = (0..(40u32 << 20) + 5).map(|i| (i % 251) as u8).collect();
    std::fs::write(root.path().join("big.bin"), &big).unwrap();
    std::fs::write(root.path().join("small.txt"), b"through nginx").unwrap();
    weft(&["put", "big.bin", "big.bin"]).ok();
    weft(&["put", "small.txt", "small.txt"]).ok();
    weft(&["get", "big.bin", "big.back"]).ok();
    assert!(std::fs::read(root.path().join("big.back")).unwrap() == big);

    // nginx's request id reaches the zone and comes back.
    let mut s = std::net::TcpStream::connect(("127.0.0.1", front)).unwrap();
    s.write_all(b"GET /api/v1/health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let id = answer
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("x-request-id: ")
                .map(str::to_owned)
        })
        .unwrap_or_else(|| panic!("no request id: {answer}"));
    assert_eq!(id.trim().len(), 32, "{answer}");

    // Kill the server that took this client's puts; the other serves on.
    let puts = |port: u16| {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(
            s,
            "GET /metrics HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {admin}\r\nconnection: close\r\n\r\n"
        )
        .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        text.lines()
            .any(|l| l.starts_with("weft_http_requests_total{") && l.contains("route=\"/api/v1/uploads\""))
    };
    let busy = if puts(ports[0]) { 0 } else { 1 };
    assert!(puts(ports[busy]), "one server took the upload");
    servers[busy].kill9();
    weft(&["get", "small.txt", "small.back"]).ok();
    assert_eq!(
        std::fs::read(root.path().join("small.back")).unwrap(),
        b"through nginx"
    );
    std::fs::write(root.path().join("after.txt"), b"one server down").unwrap();
    weft(&["put", "after.txt", "after.txt"]).ok();
    let listed = weft(&["ls"]).ok();
    assert!(
        listed.stdout.contains("after.txt") && listed.stdout.contains("big.bin"),
        "{}",
        listed.stdout
    );
}

/// Servers of zone `z` on one PostgreSQL catalog, as an operator sets them up: the first
/// sets the zone up, the others get its key file and admin token
/// ([`ZoneProcess::another_server`]). `root` is the clients' working directory.
struct Servers {
    _pg: Postgres,
    root: tempfile::TempDir,
    ports: Vec<u16>,
    servers: Vec<ZoneProcess>,
    admin: String,
}

fn servers(n: usize) -> Servers {
    let pg = Postgres::start().unwrap();
    let catalog = pg.create_database("z").unwrap();
    let root = tempfile::tempdir().unwrap();
    let mut servers = vec![server(&catalog).start().unwrap()];
    for _ in 1..n {
        let next = servers[0].another_server().unwrap().start().unwrap();
        servers.push(next);
    }
    let ports = servers.iter().map(ZoneProcess::port).collect();
    let admin = servers[0].admin_token().to_owned();
    Servers {
        _pg: pg,
        root,
        ports,
        servers,
        admin,
    }
}

/// Two servers of one zone racing for the same leases under load for 60 s: transfers submitted to
/// both in turn, as fast as four clients can, while both servers' queues look at every
/// open transfer. Each transfer runs exactly once, on one server.
#[test]
fn two_servers_racing_for_leases_run_each_transfer_once() {
    let Servers {
        _pg,
        root,
        ports,
        servers,
        admin,
    } = servers(2);
    let weft = |port: u16, args: &[&str]| {
        let mut cmd = clean_command(WEFT, root.path(), root.path());
        cmd.env("WEFT_URL", format!("http://127.0.0.1:{port}"))
            .env("WEFT_TOKEN", &admin);
        run(cmd.args(args))
    };
    std::fs::write(root.path().join("seed.txt"), b"copied again and again").unwrap();
    weft(ports[0], &["put", "seed.txt", "seed.txt"]).ok();
    weft(ports[0], &["mkdir", "copies"]).ok();

    // 60 s of four clients submitting small transfers, alternating servers.
    let until = Instant::now() + Duration::from_secs(60);
    let ids: Vec<String> = std::thread::scope(|s| {
        let clients: Vec<_> = (0..4)
            .map(|c| {
                let weft = &weft;
                let ports = &ports;
                s.spawn(move || {
                    let mut ids = Vec::new();
                    let mut n = 0;
                    while Instant::now() < until {
                        let port = ports[(c + n) % 2];
                        let dest = format!("copies/c{c}-{n}");
                        let out = weft(port, &["transfer", "start", "seed.txt", &dest, "--json"])
                            .ok()
                            .json();
                        ids.push(out["id"].as_str().unwrap().to_owned());
                        n += 1;
                    }
                    ids
                })
            })
            .collect();
        clients.into_iter().flat_map(|c| c.join().unwrap()).collect()
    });
    assert!(ids.len() >= 20, "only {} transfers", ids.len());
    for id in &ids {
        let out = weft(ports[1], &["transfer", "wait", id]);
        assert_eq!(out.code, 0, "transfer {id}: {}{}", out.stdout, out.stderr);
    }
    // Every run is logged by the server that runs it: each transfer ran once, in all.
    let logs: String = servers.iter().map(ZoneProcess::log).collect();
    for id in &ids {
        let runs = logs
            .lines()
            .filter(|l| l.contains("transfer run begins") && l.contains(id.as_str()))
            .count();
        assert_eq!(runs, 1, "transfer {id} ran {runs} times");
    }
    let listed = weft(ports[1], &["ls", "copies"]).ok();
    assert_eq!(listed.stdout.lines().count(), ids.len(), "{}", listed.stdout);
}

/// Two servers of one zone racing to fill one quota: 40 puts of 64 KiB at once, half
/// through each, against a quota of ten. Each server's check before the bytes sees too
/// little of the other's; the registering transactions count one after the other, so
/// exactly ten are stored, each answered 201, and every other put is refused whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_racing_to_fill_one_quota_never_pass_it() {
    const SIZE: usize = 64 << 10;
    let Servers {
        _pg,
        ports,
        servers: _servers,
        admin,
        ..
    } = servers(2);
    let http = reqwest::Client::new();
    let api = |port: u16, rest: &str| format!("http://127.0.0.1:{port}/api/v1/{rest}");
    let r = http
        .put(api(ports[0], "quotas"))
        .bearer_auth(&admin)
        .json(&serde_json::json!({"principal": "admin", "max_bytes": 10 * SIZE}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let puts = (0..40).map(|i| {
        let (http, admin) = (http.clone(), admin.clone());
        let url = api(ports[i % 2], &format!("data/z/home/admin/f{i:02}"));
        async move {
            let r = http
                .put(url)
                .bearer_auth(admin)
                .body(vec![i as u8; SIZE])
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            (status, r.text().await.unwrap())
        }
    });
    let answers = futures::future::join_all(puts).await;
    let created = answers.iter().filter(|(s, _)| *s == 201).count();
    for (status, body) in &answers {
        assert!(
            *status == 201 || (*status == 403 && body.contains("quota_exceeded")),
            "{status}: {body}"
        );
    }
    let listed: serde_json::Value = http
        .get(api(ports[1], "list/z/home/admin"))
        .bearer_auth(&admin)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let stored = listed["items"].as_array().unwrap();
    let names: Vec<&str> = stored.iter().map(|e| e["name"].as_str().unwrap()).collect();
    let bytes: u64 = stored.iter().map(|e| e["size"].as_u64().unwrap()).sum();
    assert_eq!(bytes, 10 * SIZE as u64, "stored: {names:?}");
    assert_eq!((stored.len(), created), (10, 10), "stored: {names:?}");
}

/// Three servers of one zone on one PostgreSQL and one MinIO. Trees are put through all
/// three at once and listed through the others; a 1 GiB upload onto the MinIO resource
/// sends its pieces to each server in turn, goes on through the other two when one is
/// killed with SIGKILL half-way, completes through a third, and reads back whole through
/// the first, with nothing left open in the bucket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_servers_on_postgresql_and_minio_share_every_upload() {
    use serde_json::{json, Value};
    let minio = weft_testkit::minio::Minio::start().expect("MinIO must start (run .ci/install-tools.sh)");
    minio.create_bucket("weft").await.unwrap();
    let Servers {
        _pg,
        root,
        ports,
        mut servers,
        admin,
        ..
    } = servers(3);
    let http = reqwest::Client::new();
    let api = |port: u16, rest: &str| format!("http://127.0.0.1:{port}/api/v1/{rest}");
    let r = http
        .post(api(ports[0], "resources"))
        .bearer_auth(&admin)
        .json(
            &json!({"name": "objstore", "kind": "s3", "tier": "object", "settings": {
            "endpoint": minio.endpoint(), "bucket": "weft", "prefix": "zone-z",
            "access_key": minio.access_key(), "secret_key": minio.secret_key()}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());

    // A tree through each server at once, each listed through another.
    let weft = |port: u16, args: &[&str]| {
        let mut cmd = clean_command(WEFT, root.path(), root.path());
        cmd.env("WEFT_URL", format!("http://127.0.0.1:{port}"))
            .env("WEFT_TOKEN", &admin);
        run(cmd.args(args))
    };
    for i in 0..3 {
        let dir = root.path().join(format!("tree-{i}"));
        std::fs::create_dir(&dir).unwrap();
        for j in 0..40 {
            let data = weft_testkit::data::pseudo_random(64 << 10, (i * 100 + j) as u64);
            std::fs::write(dir.join(format!("f{j}.bin")), data).unwrap();
        }
    }
    std::thread::scope(|s| {
        for (i, port) in ports.iter().enumerate() {
            let weft = &weft;
            s.spawn(move || {
                let tree = format!("tree-{i}");
                weft(*port, &["put", "-r", &tree, &tree]).ok();
            });
        }
    });
    for i in 0..3 {
        let listed = weft(ports[(i + 1) % 3], &["ls", &format!("tree-{i}")]).ok();
        assert_eq!(listed.stdout.lines().count(), 40, "{}", listed.stdout);
    }

    // 1 GiB in 32 pieces onto MinIO, each piece to the next server still up.
    const SIZE: u64 = 1 << 30;
    const PIECE: u64 = 32 << 20;
    let up: Value = http
        .post(api(ports[0], "uploads"))
        .bearer_auth(&admin)
        .json(
            &json!({"path": "/z/home/admin/big", "size": SIZE, "piece_size": PIECE, "resource": "objstore"}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = up["id"].as_str().unwrap_or_else(|| panic!("{up}")).to_owned();
    let pieces = up["pieces"].as_u64().unwrap();
    assert_eq!(pieces, SIZE / PIECE);
    let piece = |i: u64| weft_testkit::data::pseudo_random(PIECE as usize, 1000 + i);
    let mut whole = blake3::Hasher::new();
    let mut alive = vec![0, 1, 2];
    for i in 0..pieces {
        if i == pieces / 2 {
            servers[1].kill9();
            alive = vec![0, 2];
        }
        let data = piece(i);
        whole.update(&data);
        let port = ports[alive[i as usize % alive.len()]];
        let r = http
            .put(api(port, &format!("uploads/{id}/{i}")))
            .bearer_auth(&admin)
            .body(data)
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.status(),
            200,
            "piece {i} at {port}: {}",
            r.text().await.unwrap()
        );
    }
    let want = format!("blake3:{}", whole.finalize().to_hex());
    let r = http
        .post(api(ports[2], &format!("uploads/{id}/complete")))
        .bearer_auth(&admin)
        .json(&json!({"checksum": want}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());

    // Read through the first server: the checksum, and bytes across a piece boundary.
    let stat: Value = http
        .get(api(ports[0], "stat/z/home/admin/big"))
        .bearer_auth(&admin)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stat["checksum"], want, "{stat}");
    assert_eq!(stat["size"], SIZE, "{stat}");
    let at = 17 * PIECE - 100;
    let r = http
        .get(api(ports[0], "data/z/home/admin/big"))
        .bearer_auth(&admin)
        .header("range", format!("bytes={at}-{}", at + 199))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 206);
    let mut expect = piece(16)[PIECE as usize - 100..].to_vec();
    expect.extend_from_slice(&piece(17)[..100]);
    assert!(r.bytes().await.unwrap().as_ref() == expect.as_slice());
    // The pieces were parts of one multipart upload, now complete: none is left open.
    let open = minio
        .request(reqwest::Method::GET, "/weft?uploads", Vec::new())
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!open.contains("<Upload>"), "{open}");
}

/// A webhook receiver on 127.0.0.1: the path of each object it is told about, in order.
fn hook_receiver() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let mut conn = std::io::BufReader::new(conn);
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if std::io::BufRead::read_line(&mut conn, &mut line).unwrap_or(0) == 0 {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
                if line == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0u8; len];
            if conn.read_exact(&mut body).is_err() {
                continue;
            }
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&body) {
                if let Some(p) = v["path"].as_str() {
                    kept.lock().unwrap().push(p.to_owned());
                }
            }
            let _ = conn
                .get_mut()
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        }
    });
    (url, seen)
}

/// Three servers of one zone up: a policy rule's webhook is called once for each object,
/// whichever server it was put through, and every zone-wide worker (policies, scrubber,
/// orphan sweep, upload sweeper) runs on exactly one server, the others standing by.
#[test]
fn policy_tasks_and_zone_workers_run_once_with_three_servers() {
    let Servers {
        _pg,
        root,
        ports,
        servers: _servers,
        admin,
        ..
    } = servers(3);
    let weft = |port: u16, args: &[&str]| {
        let mut cmd = clean_command(WEFT, root.path(), root.path());
        cmd.env("WEFT_URL", format!("http://127.0.0.1:{port}"))
            .env("WEFT_TOKEN", &admin);
        run(cmd.args(args))
    };
    let (hook, seen) = hook_receiver();
    std::fs::write(
        root.path().join("policy.toml"),
        format!(
            "[[rule]]\nname = \"tell\"\non = \"created\"\n[rule.if]\npath = \"/z/home/admin/in/**\"\n[rule.do]\nwebhook = \"{hook}\"\n"
        ),
    )
    .unwrap();
    weft(ports[0], &["policy", "apply", "policy.toml"]).ok();
    weft(ports[1], &["mkdir", "in"]).ok();
    const OBJECTS: usize = 30;
    for i in 0..OBJECTS {
        let name = format!("f{i}.txt");
        std::fs::write(root.path().join(&name), format!("object {i}")).unwrap();
        weft(ports[i % 3], &["put", &name, &format!("in/{name}")]).ok();
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen.lock().unwrap().len() < OBJECTS {
        assert!(
            Instant::now() < deadline,
            "only {} of {OBJECTS} webhook calls",
            seen.lock().unwrap().len()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Long enough for a second call of any task to arrive, were there one.
    std::thread::sleep(Duration::from_secs(3));
    let mut paths = seen.lock().unwrap().clone();
    paths.sort();
    let calls = paths.len();
    paths.dedup();
    assert_eq!((calls, paths.len()), (OBJECTS, OBJECTS), "{paths:?}");

    // Each zone-wide worker has run on one server by now or soon, and on that one only.
    let workers = ["policies", "scrubber", "orphans", "upload-sweeper", "throughput"];
    let ran_on = |worker: &str| -> Vec<usize> {
        ports
            .iter()
            .enumerate()
            .filter(|(_, p)| {
                let s = weft(**p, &["zone", "status", "--json"]).ok().json();
                let w = s["workers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|w| w["name"] == worker)
                    .unwrap_or_else(|| panic!("no worker {worker}: {s}"))
                    .clone();
                w["runs"].as_u64().unwrap() > 0
            })
            .map(|(i, _)| i)
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    for worker in workers {
        loop {
            let servers = ran_on(worker);
            assert!(servers.len() <= 1, "{worker} ran on servers {servers:?}");
            if servers.len() == 1 {
                break;
            }
            assert!(Instant::now() < deadline, "{worker} ran on no server");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// A server of a zone started without the zone's key file is refused, naming the key the
/// catalog holds its secrets under and where the file goes, and makes no key of its own:
/// before anything is sealed (the catalog names the zone's key from the first start on) and
/// after a peer zone's secret is. With a copy of the first server's file it starts and
/// opens that secret.
#[test]
fn a_server_without_the_zones_key_file_is_refused_and_makes_none() {
    let pg = Postgres::start().unwrap();
    let catalog = pg.create_database("z").unwrap();
    let root = tempfile::tempdir().unwrap();
    // The first server of a new zone makes the key.
    let first = server(&catalog).start().unwrap();
    let hex = std::fs::read_to_string(first.data_dir().join("secret.key")).unwrap();
    let bytes: Vec<u8> = (0..32)
        .map(|i| u8::from_str_radix(&hex.trim()[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let key = weft_catalog::SealKey::new(bytes.try_into().unwrap());
    // The second server's data directory: no key file, and no admin token (that is the
    // first one's).
    let b = root.path().join("server-b");
    let key_file = b.join("secret.key");
    std::fs::create_dir(&b).unwrap();
    let refused = || {
        let err = server(&catalog)
            .data_dir(&b)
            .token_optional()
            .start()
            .expect_err("a server without the zone's key file started");
        let log = format!("{err:#}");
        assert!(
            log.contains("weft serve exited") && !log.contains("exited (exit status: 0)"),
            "{log}"
        );
        let named = log.contains(key.id()) && log.contains(&key_file.display().to_string());
        assert!(named, "names the key and the file: {log}");
        assert!(!key_file.exists(), "made a key of its own: {log}");
    };
    refused();

    std::fs::write(first.work().join("peer.secret"), "7".repeat(64)).unwrap();
    let add = [
        "zone",
        "add",
        "peer",
        "http://127.0.0.1:9",
        "--secret-file",
        "peer.secret",
    ];
    first.weft(&add).ok();
    refused();

    std::fs::copy(first.data_dir().join("secret.key"), &key_file).unwrap();
    let second = server(&catalog).data_dir(&b).token_optional().start().unwrap();
    let zones = second
        .weft_as(first.admin_token(), &["zone", "ls", "--json"])
        .ok();
    assert!(zones.stdout.contains("\"peer\""), "{}", zones.stdout);
}

//! Several `weft serve` processes of one zone on one PostgreSQL catalog: they start at once
//! on an empty catalog, each takes any request, and what one was told the others know.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use weft_testkit::cli::{clean_command, run};
use weft_testkit::free_port;
use weft_testkit::postgres::Postgres;

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

/// `weft serve` of zone `z` on `port` with the data directory `dir` and `catalog`.
fn serve(port: u16, dir: &Path, catalog: &str) -> Child {
    let log = std::fs::File::create(dir.with_extension("log")).unwrap();
    Command::new(WEFT)
        .args([
            "serve",
            "--zone",
            "z",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--catalog",
            catalog,
        ])
        .arg("--data-dir")
        .arg(dir)
        .env_remove("WEFT_URL")
        .env_remove("WEFT_TOKEN")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap()
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
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let mut children: Vec<Child> = ports
        .iter()
        .zip(&dirs)
        .map(|(p, d)| serve(*p, d, &catalog))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ports.iter().all(|p| healthy(*p)) {
        for (c, d) in children.iter_mut().zip(&dirs) {
            if let Some(status) = c.try_wait().unwrap() {
                panic!(
                    "{} exited ({status}): {}",
                    d.display(),
                    std::fs::read_to_string(d.with_extension("log")).unwrap()
                );
            }
        }
        assert!(Instant::now() < deadline, "not every server came up");
        std::thread::sleep(Duration::from_millis(100));
    }

    let tokens: Vec<String> = dirs
        .iter()
        .filter_map(|d| std::fs::read_to_string(d.join("admin.token")).ok())
        .collect();
    assert_eq!(tokens.len(), 1, "one server set the zone up");
    let admin = tokens[0].trim();
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

    for c in &mut children {
        c.kill().unwrap();
        c.wait().unwrap();
    }
}

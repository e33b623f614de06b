//! `weft serve` settings: flags, `WEFT_*` variables and the TOML file, in that order; the
//! first start's admin token; a bad file is refused with a message naming it.

use std::process::Command;
use weft_testkit::zone::{Settings, ZoneProcess};

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

fn weft() -> Command {
    Command::new(WEFT)
}

#[test]
fn config_file_environment_and_flags() {
    let dir = tempfile::tempdir().unwrap();
    let fast = dir.path().join("fast");
    let data = dir.path().join("data");
    let config = dir.path().join("weft.toml");
    std::fs::write(
        &config,
        format!(
            r#"
zone = "fromfile"
listen = "127.0.0.1:1"          # overridden by WEFT_LISTEN
data_dir = "{data}"

[[resources]]
name = "fast"
kind = "fs"
tier = "ssd"
default = true
settings = {{ root = "{fast}" }}

[[staging]]
name = "scratch"
url = "file://{scratch}"
allow = ["admin"]
"#,
            data = data.display(),
            fast = fast.display(),
            scratch = dir.path().display()
        ),
    )
    .unwrap();
    // WEFT_LISTEN and WEFT_ZONE, the data directory from the file.
    let mut z = ZoneProcess::options(WEFT, "fromenv")
        .settings(Settings::Environment)
        .data_dir(&data)
        .arg("--config")
        .arg(&config)
        .start()
        .unwrap();
    let health = Command::new("curl")
        .args(["-sf", &format!("{}/api/v1/health", z.url())])
        .output()
        .unwrap();
    assert!(health.status.success(), "{health:?}");
    let health: serde_json::Value = serde_json::from_slice(&health.stdout).unwrap();
    assert_eq!(health["zone"], "fromenv", "the variable wins over the file");

    let token_file = data.join("admin.token");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let token = std::fs::read_to_string(&token_file).unwrap().trim().to_owned();
    assert_eq!(token, z.admin_token());
    let text = z.log();
    assert!(
        text.contains("admin.token") && text.contains("first start"),
        "the log says where the token is: {text}"
    );

    // The file's resource exists and is the default: a put lands under its root.
    let src = dir.path().join("x.txt");
    std::fs::write(&src, b"x").unwrap();
    let src = src.to_str().unwrap();
    z.weft(&["put", "--quiet", src, "/fromenv/home/admin/x.txt"]).ok();
    let stat = z.weft(&["stat", "--json", "/fromenv/home/admin/x.txt"]).json();
    assert_eq!(stat["replicas"][0]["resource"], "fast");
    assert!(fast.join("data").exists());

    // The file's staging area is declared: the admin stages x.txt in from it.
    let areas = z.weft(&["staging", "ls", "--json"]).json();
    assert_eq!(areas[0]["name"], "scratch", "{areas}");
    assert_eq!(areas[0]["allow"], serde_json::json!(["admin"]));
    z.weft(&[
        "transfer",
        "start",
        "--wait",
        "--quiet",
        &format!("file://{src}"),
        "/fromenv/home/admin/staged.txt",
    ])
    .ok();
    z.kill9();

    // A second start is not a first start: no new token, the old one still works. The
    // flags --listen and --zone win over the file.
    z.set_settings(Settings::Flags);
    z.restart().unwrap();
    assert_eq!(std::fs::read_to_string(&token_file).unwrap().trim(), token);
}

#[test]
fn bad_config_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("bad.toml");
    std::fs::write(&config, "zone = \"x\"\nlisten_typo = 1\n").unwrap();
    let out = weft().args(["serve", "--config"]).arg(&config).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml") && err.contains("listen_typo"), "{err}");

    // A staging area that cannot be one stops the start, naming it.
    std::fs::write(
        &config,
        "zone = \"x\"\n[[staging]]\nname = \"logical\"\nurl = \"/x/home\"\n",
    )
    .unwrap();
    let out = weft()
        .args(["serve", "--config"])
        .arg(&config)
        .arg("--data-dir")
        .arg(dir.path().join("d"))
        .args(["--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[[staging]] logical"), "{err}");

    // A Handle registry needs the public URL its handles point at, and a usable prefix.
    for (pid, named) in [
        (
            "[pid]\nprefix = \"21.T1\"\n[pid.handle]\nurl = \"http://127.0.0.1:1\"\nadmin = \"300:0.NA/21.T1\"\npassword_file = \"/dev/null\"\n",
            "landing_url",
        ),
        ("[pid]\nprefix = \"has space\"\n", "[pid] prefix"),
        ("[pid]\nlanding_url = \"ftp://x\"\n", "landing_url"),
    ] {
        std::fs::write(&config, format!("zone = \"x\"\n{pid}")).unwrap();
        let out = weft()
            .args(["serve", "--config"])
            .arg(&config)
            .arg("--data-dir")
            .arg(dir.path().join("d"))
            .args(["--listen", "127.0.0.1:0"])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(named), "{pid}: {err}");
    }

    // A scrub interval of zero would re-read everything without pause.
    std::fs::write(&config, "zone = \"x\"\nscrub_interval = 0\n").unwrap();
    let out = weft().args(["serve", "--config"]).arg(&config).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("scrub_interval"), "{err}");
    let out = weft()
        .args(["serve", "--scrub-interval", "0", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = weft()
        .args(["serve", "--zone", "Not A Zone", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--zone"));
}

/// A SQLite catalog serves one server: a second `weft serve` on the same catalog is
/// refused with a message that says what to do, and the first one keeps serving. Once the
/// first is gone (even killed), a new server starts on it.
#[test]
fn a_second_server_on_one_sqlite_catalog_is_refused() {
    let mut z = ZoneProcess::start(WEFT, "solo").unwrap();
    let catalog = format!("sqlite://{}", z.data_dir().join("catalog.db").display());
    let elsewhere = tempfile::tempdir().unwrap();
    let out = weft()
        .args([
            "serve",
            "--zone",
            "solo",
            "--listen",
            "127.0.0.1:0",
            "--catalog",
            &catalog,
        ])
        .arg("--data-dir")
        .arg(elsewhere.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("in use by another `weft serve`") && err.contains("postgres://"),
        "{err}"
    );
    z.weft(&["ls"]).ok();

    z.kill9();
    z.restart().unwrap();
    z.weft(&["ls"]).ok();
}

/// `--log-format json`: one JSON object per line. A request's id (taken from
/// `x-request-id` when usable, else made) comes back in the answer and follows the request
/// into the log of the zone and of the peer it relays to; an id that could smuggle
/// anything into a log is replaced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_follow_a_request_id_to_the_peer() {
    let start = |name: &str| {
        ZoneProcess::options(WEFT, name)
            .args(["--log-format", "json"])
            .env("RUST_LOG", "info,weft_api=debug")
            .start()
            .unwrap()
    };
    let (lrz, it4i) = (start("lrz"), start("it4i"));
    let secret = lrz.work().join("shared.secret");
    std::fs::write(&secret, "9c1e5f0c2a9e7d4b1c3e8a6f0d2b4c6e8a0f1d3b5c7e9a1f3d5b7\n").unwrap();
    let secret = secret.to_str().unwrap();
    lrz.weft(&["zone", "add", "it4i", it4i.url(), "--secret-file", secret])
        .ok();
    it4i.weft(&["zone", "add", "lrz", lrz.url(), "--secret-file", secret])
        .ok();

    let http = reqwest::Client::new();
    let list = |id: &str| {
        http.get(format!("{}/api/v1/list/it4i/home", lrz.url()))
            .bearer_auth(lrz.admin_token())
            .header("x-request-id", id)
            .send()
    };
    let r = list("trace-me-42").await.unwrap();
    assert_eq!(r.headers()["x-request-id"], "trace-me-42");
    let status = r.status();
    // Relayed: the peer answers as it would (its admin is not lrz's), whatever it is.
    assert!(status.is_success() || status.is_client_error(), "{status}");
    for zone in [&lrz, &it4i] {
        let log = zone.log();
        let line = log
            .lines()
            .find(|l| l.contains("trace-me-42"))
            .unwrap_or_else(|| panic!("{} logged nothing of the request:\n{log}", zone.name()));
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert_eq!(v["span"]["id"], "trace-me-42", "{line}");
    }
    for hostile in ["a\"}{\"level\":\"ERROR", &"x".repeat(300)] {
        let r = list(hostile).await.unwrap();
        let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
        assert!(id != hostile && id.len() == 32, "{id}");
    }
    // Every line of the log is one JSON object.
    for line in lrz.log().lines().filter(|l| !l.trim().is_empty()) {
        assert!(serde_json::from_str::<serde_json::Value>(line).is_ok(), "{line}");
    }
}

/// A data directory however spelled (a leading `//`, as `$ROOT/$DIR` gives with an
/// absolute `$DIR`; a space, `?`, `#`, `%`) holds the zone's one catalog: every
/// connection opens the file sqlx opens. The small files' registrations (on the
/// committer's own connection) and the lookups of later requests then agree, and survive
/// a restart.
#[test]
fn any_spelling_of_the_data_directory_holds_one_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("zone a?b#c%41d");
    let spelled = std::path::PathBuf::from(format!("/{}", real.display()));
    assert!(spelled.to_str().unwrap().starts_with("//"));
    let mut z = ZoneProcess::options(WEFT, "odd")
        .data_dir(&spelled)
        .start()
        .unwrap();
    let w = z.work();
    std::fs::create_dir(w.join("tree")).unwrap();
    for i in 0..20 {
        std::fs::write(w.join(format!("tree/f{i:02}")), format!("file {i}")).unwrap();
    }
    z.weft(&["put", "-r", "-q", "tree", "up"]).ok();
    assert_eq!(z.weft(&["ls", "up"]).ok().lines().len(), 20);
    z.kill9();
    z.restart().unwrap();
    z.weft(&["get", "-r", "up", "down"]).ok();
    weft_testkit::data::assert_same_tree(&w.join("tree"), &w.join("down"));
    let catalogs: Vec<_> = walk(dir.path())
        .into_iter()
        .chain(walk(z.dir()))
        .filter(|p| p.file_name().is_some_and(|n| n == "catalog.db"))
        .collect();
    assert_eq!(
        catalogs,
        vec![real.join("catalog.db")],
        "one catalog, in the data directory"
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

//! Identity and access through the CLI against a real zone: login, tokens, users, groups,
//! ACLs, and the exit codes and messages of 401 and 403.

use std::os::unix::fs::PermissionsExt;
use weft_testkit::cli::run;
use weft_testkit::zone::ZoneProcess;

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

#[test]
fn unauthenticated_and_forbidden() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let r = z
        .weft_as("weft_not-a-real-token", &["ls"])
        .fails(4, "unauthenticated");
    assert!(
        r.stderr.contains("weft: error: not authenticated"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("set WEFT_TOKEN or run `weft login URL --token T`"),
        "{}",
        r.stderr
    );

    // No token at all: the zone is known but says who are you.
    let mut cmd = z.command();
    let r = run(cmd.env("WEFT_URL", z.url()).arg("whoami")).fails(4, "unauthenticated");
    assert!(r.stderr.contains("weft login"), "{}", r.stderr);

    let bob = z.user_with_token("bob");
    let r = z
        .weft_as(&bob, &["ls", "/testz/home/admin"])
        .fails(5, "forbidden");
    assert!(
        r.stderr.contains("weft: error: permission denied"),
        "{}",
        r.stderr
    );
    z.weft_as(&bob, &["user", "add", "mallory"]).fails(5, "forbidden");
    z.weft_as(&bob, &["token", "create", "--user", "admin"])
        .fails(5, "forbidden");
}

#[test]
fn users_groups_and_tokens() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    z.weft(&["user", "add", "alice"]).ok();
    z.weft(&["user", "add", "--admin", "carol"]).ok();
    z.weft(&["user", "add", "alice"]).fails(6, "already_exists");
    let users = z.weft(&["user", "ls", "--json"]).ok().json();
    let names: Vec<&str> = users
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"alice") && names.contains(&"carol") && names.contains(&"admin"),
        "{names:?}"
    );
    assert!(z.weft(&["user", "ls"]).ok().lines().contains(&"carol (admin)"));

    z.weft(&["group", "add", "lab"]).ok();
    z.weft(&["group", "member", "add", "lab", "alice"]).ok();
    assert_eq!(z.weft(&["group", "member", "ls", "lab"]).ok().lines(), ["alice"]);
    assert!(z.weft(&["group", "ls"]).ok().lines().contains(&"lab"));

    // The token alone is on stdout, on its last (only) line, and it works.
    let created = z
        .weft(&[
            "token", "create", "--user", "alice", "--label", "ci", "--ttl", "3600",
        ])
        .ok();
    assert_eq!(created.lines().len(), 1, "stdout: {}", created.stdout);
    let token = created.lines()[0].to_owned();
    assert!(created.stderr.contains("alice"), "{}", created.stderr);
    let me = z.weft_as(&token, &["whoami", "--json"]).ok().json();
    assert_eq!(me["user"], "alice");
    assert_eq!(me["home"], "/testz/home/alice");
    assert_eq!(me["groups"], serde_json::json!(["lab"]));
    // A user's own relative paths resolve in their own home.
    z.weft_as(&token, &["mkdir", "mine"]).ok();
    z.weft(&["stat", "/testz/home/alice/mine"]).ok();
    // Quiet: nothing but the token anywhere.
    let quiet = z.weft(&["-q", "token", "create"]).ok();
    assert_eq!(quiet.lines().len(), 1);
    assert_eq!(quiet.stderr, "");

    // Listed without secrets; alice sees hers, the administrator everyone's; deleting
    // one makes it fail at once.
    let listed = z.weft(&["token", "ls", "--json"]).ok().json();
    let of_alice: Vec<&serde_json::Value> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["user"] == "alice")
        .collect();
    assert_eq!(of_alice.len(), 1, "{listed}");
    assert_eq!(of_alice[0]["label"], "ci");
    assert!(of_alice[0]["expires"].is_i64());
    assert!(!listed.to_string().contains(&token), "no secret is listed");
    let mine = z.weft_as(&token, &["token", "ls"]).ok();
    assert_eq!(mine.lines().len(), 1, "{}", mine.stdout);
    assert!(
        mine.stdout.contains("alice") && mine.stdout.contains("ci"),
        "{}",
        mine.stdout
    );
    let id = of_alice[0]["id"].as_i64().unwrap().to_string();
    let admins = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["user"] == "admin")
        .unwrap();
    z.weft_as(&token, &["token", "rm", &admins["id"].to_string()])
        .fails(3, "not_found");
    z.weft(&["token", "rm", &id]).ok();
    z.weft_as(&token, &["whoami"]).fails(4, "unauthenticated");
    z.weft(&["token", "rm", &id]).fails(3, "not_found");
    let bad = z.weft(&["token", "rm", "x1"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("invalid value 'x1'"), "{}", bad.stderr);

    z.weft(&["group", "member", "rm", "lab", "alice"]).ok();
    assert!(z.weft(&["group", "member", "ls", "lab"]).ok().stdout.is_empty());
    z.weft(&["group", "rm", "lab"]).ok();
    z.weft(&["group", "rm", "lab"]).fails(3, "not_found");
    z.weft(&["user", "rm", "carol"]).ok();
    assert!(!z.weft(&["user", "ls"]).ok().stdout.contains("carol"));
}

#[test]
fn acls_grant_and_revoke() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let bob = z.user_with_token("bob");
    z.weft(&["mkdir", "shared"]).ok();
    std::fs::write(z.work().join("doc.txt"), b"for bob").unwrap();
    z.weft(&["put", "doc.txt", "shared"]).ok();

    z.weft_as(&bob, &["get", "/testz/home/admin/shared/doc.txt", "b1.txt"])
        .fails(5, "forbidden");
    z.weft(&["acl", "set", "-r", "shared", "bob", "read"]).ok();
    z.weft_as(&bob, &["get", "/testz/home/admin/shared/doc.txt", "b1.txt"])
        .ok();
    assert_eq!(std::fs::read(z.work().join("b1.txt")).unwrap(), b"for bob");
    let acl = z.weft(&["acl", "ls", "--json", "shared"]).ok().json();
    assert!(
        acl.as_array()
            .unwrap()
            .iter()
            .any(|e| e["principal"] == "bob" && e["permission"] == "read"),
        "{acl}"
    );
    assert!(z
        .weft(&["acl", "ls", "shared"])
        .ok()
        .stdout
        .contains("bob (user)"));
    // read is not write.
    z.weft_as(&bob, &["put", "b1.txt", "/testz/home/admin/shared/from-bob.txt"])
        .fails(5, "forbidden");

    z.weft(&["acl", "set", "-r", "shared", "bob", "none"]).ok();
    z.weft_as(&bob, &["get", "/testz/home/admin/shared/doc.txt", "b2.txt"])
        .fails(5, "forbidden");
    assert_eq!(z.weft(&["acl", "set", "shared", "bob", "admin-ish"]).code, 2);
}

#[test]
fn login_checks_the_token_and_saves_it_privately() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let config = z.config_home().join("weft").join("config.toml");

    let r = run(z.command().args(["login", z.url(), "--token", "weft_wrong"])).fails(4, "unauthenticated");
    assert!(
        !config.exists(),
        "a rejected token must not be saved: {}",
        r.stderr
    );

    run(z.command().args(["login", z.url(), "--token", z.admin_token()])).ok();
    let mode = std::fs::metadata(&config).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // Later commands need neither WEFT_URL nor WEFT_TOKEN.
    let me = run(z.command().args(["whoami", "--json"])).ok().json();
    assert_eq!(me["user"], "admin");
    // WEFT_TOKEN wins over the file.
    let bob = z.user_with_token("bob");
    let me = run(z.command().env("WEFT_TOKEN", &bob).args(["whoami", "--json"]))
        .ok()
        .json();
    assert_eq!(me["user"], "bob");
    // The saved token is not sent to another zone named by WEFT_URL.
    let other = ZoneProcess::start(WEFT, "testz").unwrap();
    run(z.command().env("WEFT_URL", other.url()).arg("whoami")).fails(4, "unauthenticated");
}

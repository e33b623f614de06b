//! `weft audit` against a real zone: every change is recorded with who made it, from
//! where, under which request id; only administrators read it; filters and pages work.

use serde_json::Value;
use weft_testkit::zone::ZoneProcess;

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

fn actions(entries: &Value) -> Vec<(String, String, String)> {
    entries
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["actor"].as_str().unwrap().to_owned(),
                e["action"].as_str().unwrap().to_owned(),
                e["path"].as_str().unwrap_or("-").to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_change_is_audited_for_administrators() {
    let z = ZoneProcess::start(WEFT, "az").unwrap();
    let alice = z.user_with_token("alice");
    let home = "/az/home/alice";
    std::fs::write(z.work().join("a.txt"), b"audited\n").unwrap();
    z.weft_as(&alice, &["mkdir", "proj"]).ok();
    z.weft_as(&alice, &["put", "a.txt", "proj/a.txt"]).ok();
    z.weft_as(&alice, &["meta", "add", "proj/a.txt", "run", "7"]).ok();
    z.weft_as(&alice, &["mv", "proj/a.txt", "proj/b.txt"]).ok();
    z.weft_as(&alice, &["acl", "set", "proj", "admin", "read"]).ok();
    // A change refused changes nothing, so records nothing.
    z.weft_as(&alice, &["mkdir", "proj"]).fails(6, "already_exists");
    // A request id sent by the client is the one recorded.
    let r = reqwest::Client::new()
        .delete(format!("{}/api/v1/nodes{home}/proj/b.txt", z.url()))
        .bearer_auth(&alice)
        .header("x-request-id", "audit-test-rm-1")
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());

    // Only administrators read it.
    z.weft_as(&alice, &["audit"]).fails(5, "forbidden");

    let all = z
        .weft(&["audit", "--all", "--json", "--user", "alice"])
        .ok()
        .json();
    let seen = actions(&all);
    let want: Vec<(String, String, String)> = [
        ("rm", "/proj/b.txt"),
        ("acl", "/proj"),
        ("mv", "/proj/a.txt"),
        ("meta", "/proj/a.txt"),
        ("put", "/proj/a.txt"),
        ("mkdir", "/proj"),
    ]
    .iter()
    .map(|(a, p)| ("alice".to_owned(), (*a).to_owned(), format!("{home}{p}")))
    .collect();
    assert_eq!(seen, want, "{all:#}");
    let rm = &all[0];
    assert_eq!(rm["request_id"], "audit-test-rm-1", "{rm}");
    assert_eq!(rm["origin"], "127.0.0.1", "{rm}");
    let mv = &all[2];
    assert!(
        mv["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("{home}/proj/b.txt")),
        "{mv}"
    );

    // By path (below it), by time, in pages.
    let below = z
        .weft(&["audit", "--all", "--json", &format!("{home}/proj/a.txt")])
        .ok()
        .json();
    assert_eq!(
        actions(&below)
            .iter()
            .map(|(_, a, _)| a.as_str())
            .collect::<Vec<_>>(),
        ["mv", "meta", "put"]
    );
    let later = z
        .weft(&["audit", "--json", "--user", "alice", "--since", "2099-01-01"])
        .ok()
        .json();
    assert!(later["items"].as_array().unwrap().is_empty(), "{later}");
    let recent = z
        .weft(&["audit", "--json", "--user", "alice", "--since", "1h"])
        .ok()
        .json();
    assert_eq!(recent["items"].as_array().unwrap().len(), 6);
    let first = z
        .weft(&["audit", "--json", "--user", "alice", "--limit", "4"])
        .ok()
        .json();
    assert_eq!(first["items"].as_array().unwrap().len(), 4);
    let cursor = first["next_cursor"].as_str().unwrap().to_owned();
    let second = z
        .weft(&[
            "audit", "--json", "--user", "alice", "--limit", "4", "--cursor", &cursor,
        ])
        .ok()
        .json();
    let rest: Vec<_> = actions(&second["items"]).into_iter().map(|(_, a, _)| a).collect();
    assert_eq!(rest, ["put", "mkdir"]);
    assert!(second["next_cursor"].is_null(), "{second}");

    // The administrator's own changes, the user and token made for alice among them.
    let admin = z
        .weft(&["audit", "--all", "--json", "--user", "admin"])
        .ok()
        .json();
    let kinds: Vec<String> = actions(&admin).into_iter().map(|(_, a, _)| a).collect();
    assert!(
        kinds.contains(&"user".to_owned()) && kinds.contains(&"token".to_owned()),
        "{admin:#}"
    );
    let text = serde_json::to_string(&admin).unwrap();
    assert!(!text.contains(&alice), "a token never appears in the audit log");

    // A tree put in bulk is one entry per collection and registration group (the puts
    // the committer took together), naming its objects; each object finds its entry by
    // its own path.
    let tree = z.work().join("tree");
    std::fs::create_dir(&tree).unwrap();
    for i in 0..4 {
        std::fs::write(tree.join(format!("f{i}.dat")), format!("data {i}")).unwrap();
    }
    z.weft_as(&alice, &["put", "-r", "tree", "bulk"]).ok();
    // The names an entry is about: a group's items, or a lone object's own name.
    let named = |e: &Value| -> Vec<String> {
        match e["items"].as_array() {
            Some(items) => items.iter().map(|n| n.as_str().unwrap().to_owned()).collect(),
            None => vec![e["path"].as_str().unwrap().rsplit('/').next().unwrap().to_owned()],
        }
    };
    let one = z
        .weft(&["audit", "--json", &format!("{home}/bulk/f2.dat")])
        .ok()
        .json();
    let puts: Vec<&Value> = one["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "put")
        .collect();
    assert_eq!(puts.len(), 1, "{one:#}");
    assert!(named(puts[0]).contains(&"f2.dat".to_owned()), "{one:#}");
    let all = z.weft(&["audit", "--json", &format!("{home}/bulk")]).ok().json();
    let mut names: Vec<String> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "put")
        .flat_map(named)
        .collect();
    names.sort();
    assert_eq!(names, ["f0.dat", "f1.dat", "f2.dat", "f3.dat"], "{all:#}");

    // The human form: one line per change.
    let human = z.weft(&["audit", "--user", "alice", "--limit", "3"]).ok();
    let lines: Vec<&str> = human.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", human.stdout);
    assert!(
        lines.iter().any(|l| l.contains(" put ") && l.contains(" bytes")),
        "{}",
        human.stdout
    );
}

/// Text with a newline (a forged second entry) and terminal commands (clear the screen,
/// retitle the window), as a catalog from before they were refused may hold.
const RAW: &str = "tidy\n2026-01-01 00:00:00  admin  forged\x1b[2J\x1b]0;owned\x07";

#[test]
fn replicas_are_audited_and_control_characters_refused_or_escaped() {
    let z = ZoneProcess::start(WEFT, "ay").unwrap();
    let tape = z.work().join("tape");
    let root = tape.to_str().unwrap();
    z.weft(&["resource", "add", "tape", "--kind", "fs", "--root", root])
        .ok();
    let alice = z.user_with_token("alice");
    let path = "/ay/home/alice/a.txt";
    std::fs::write(z.work().join("a.txt"), b"replicated\n").unwrap();
    z.weft_as(&alice, &["put", "a.txt", "."]).ok();

    // A replicate is recorded at its path, and so are the copy it made (by its run, as
    // alice) and the trim.
    z.weft_as(&alice, &["replicate", "a.txt", "--to", "ay:tape"]).ok();
    z.weft_as(&alice, &["trim", "a.txt", "--from", "ay:tape"]).ok();
    let log = z.weft(&["audit", "--json", path]).ok().json();
    let seen: Vec<(String, String, String)> = actions(&log["items"]);
    let want: Vec<(String, String, String)> = ["replica", "replica", "replicate", "put"]
        .iter()
        .map(|a| ("alice".to_owned(), (*a).to_owned(), path.to_owned()))
        .collect();
    assert_eq!(seen, want, "{log:#}");
    let details: Vec<&str> = log["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["detail"].as_str().unwrap())
        .collect();
    assert!(details[0].starts_with("remove from tape"), "{log:#}");
    assert!(details[1].starts_with("add on tape"), "{log:#}");
    assert!(details[2].ends_with("to ay:tape"), "{log:#}");
    assert!(
        log["items"][1]["origin"]
            .as_str()
            .unwrap()
            .starts_with("transfer "),
        "{log:#}"
    );
    let human = z.weft(&["audit", path]).ok().stdout;
    assert!(
        human
            .lines()
            .any(|l| l.contains(" replicate ") && l.contains(path)),
        "{human}"
    );

    // Refused through the CLI, whatever the door (the catalog checks).
    for bad in ["two\nlines", "esc\x1b[2J", "c1\u{9b}31m", "del\u{7f}"] {
        z.weft_as(&alice, &["meta", "add", "a.txt", "note", bad])
            .fails(1, "invalid_argument");
        z.weft_as(&alice, &["meta", "add", "a.txt", bad, "v"])
            .fails(1, "invalid_argument");
        z.weft_as(&alice, &["token", "create", "--label", bad])
            .fails(1, "invalid_argument");
    }
    z.weft_as(&alice, &["token", "create", "--label", "tab\there"])
        .fails(1, "invalid_argument");
    z.weft_as(&alice, &["token", "create", "--label", &"x".repeat(257)])
        .fails(1, "invalid_argument");
    // A tab stays allowed in a value, and a label of the limit's length is fine.
    z.weft_as(&alice, &["meta", "add", "a.txt", "cols", "a\tb"]).ok();
    z.weft_as(&alice, &["token", "create", "--label", &"x".repeat(256)])
        .ok();

    // What got in raw before is printed escaped.
    let catalog = rusqlite::Connection::open(z.data_dir().join("catalog.db")).unwrap();
    catalog.busy_timeout(std::time::Duration::from_secs(30)).unwrap();
    catalog
        .execute(
            "INSERT INTO avus (node_id, attr, value, unit) \
             SELECT id, 'raw', ?1, '' FROM nodes WHERE path = ?2",
            rusqlite::params![RAW, path],
        )
        .unwrap();
    catalog
        .execute(
            "INSERT INTO audit (action, at, actor, origin, path, detail) \
             VALUES ('meta', strftime('%s', 'now') * 1000, 'alice', '127.0.0.1', ?1, ?2)",
            rusqlite::params![path, format!("add raw={RAW}")],
        )
        .unwrap();
    catalog
        .execute(
            "UPDATE tokens SET label = ?1 WHERE id = (SELECT max(id) FROM tokens)",
            rusqlite::params![RAW],
        )
        .unwrap();
    let escaped = "tidy\\n2026-01-01 00:00:00  admin  forged\\u{1b}[2J\\u{1b}]0;owned\\u{7}";
    let printed = [
        z.weft(&["audit", "--limit", "1"]).ok().stdout,
        z.weft_as(&alice, &["meta", "ls", "a.txt"]).ok().stdout,
        z.weft_as(&alice, &["token", "ls"]).ok().stdout,
    ];
    for out in &printed {
        assert!(out.contains(escaped), "{out}");
        assert!(!out.contains('\x1b') && !out.contains('\x07'), "{out:?}");
        assert!(!out.lines().any(|l| l.starts_with("2026-01-01")), "{out}");
    }
    assert_eq!(printed[0].lines().count(), 1, "{}", printed[0]);
    // The tab of a value is shown escaped too, keeping the columns.
    assert!(printed[1].contains("a\\tb"), "{}", printed[1]);
    // JSON carries the text as it is stored; JSON escapes it itself.
    let json = z.weft(&["audit", "--json", "--limit", "1"]).ok();
    assert!(!json.stdout.contains('\x1b'), "{:?}", json.stdout);
    assert_eq!(json.json()["items"][0]["detail"], format!("add raw={RAW}"));
}

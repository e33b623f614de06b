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

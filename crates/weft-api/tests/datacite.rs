//! DataCite metadata: `datacite.*` attributes checked as they are set, and
//! `GET /export/datacite/{path}` validated against the DataCite kernel-4.3 JSON schema by
//! the schema's own validator (inveniosoftware's `datacite` package, installed by
//! `.ci/install-tools.sh`), which also turns it into DataCite XML.

mod common;

use common::{code_of, start_named, TestZone};
use serde_json::{json, Value};
use std::process::Command;

async fn meta(
    zone: &TestZone,
    token: &str,
    path: &str,
    op: &str,
    attr: &str,
    value: &str,
    unit: &str,
) -> reqwest::Response {
    zone.post(&format!("meta{path}"), token)
        .json(&json!({"op": op, "attr": attr, "value": value, "unit": unit}))
        .send()
        .await
        .unwrap()
}

/// Runs the DataCite schema's validator on `doc`: Ok(the DataCite XML) or Err(why not).
fn validate(doc: &Value) -> Result<String, String> {
    let python = weft_testkit::tools_dir().join("py/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run .ci/install-tools.sh (scripts/test does)",
        python.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("doc.json");
    std::fs::write(&file, serde_json::to_vec(doc).unwrap()).unwrap();
    let out = Command::new(python)
        .arg("-c")
        .arg(
            "import json, sys\n\
             from datacite import schema43\n\
             doc = json.load(open(sys.argv[1]))\n\
             schema43.validator.validate(doc)\n\
             print(schema43.tostring(doc))",
        )
        .arg(&file)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datacite_fields_are_checked_and_exported_as_valid_datacite() {
    let z = start_named("lrz").await;
    let alice = z.user("alice").await;
    let r = z.post("mkdir/lrz/home/alice/run42", &alice).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let r = z
        .put_bytes("/lrz/home/alice/run42/out.nc", b"netcdf bytes", &alice)
        .await;
    assert_eq!(r.status(), 201);
    let coll = "/lrz/home/alice/run42";

    // Nothing to export yet: the mandatory fields are named.
    let (status, code, message) = code_of(
        z.get(&format!("export/datacite{coll}"), &alice)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, code.as_str()), (400, "invalid_argument"));
    for f in [
        "datacite.title",
        "datacite.creator",
        "datacite.publisher",
        "datacite.publicationYear",
        "datacite.resourceTypeGeneral",
    ] {
        assert!(message.contains(f), "{message}");
    }

    let fields = [
        ("add", "datacite.title", "Krios run 42", ""),
        ("add", "datacite.title", "Apoferritin at 1.2 Å", ""),
        (
            "add",
            "datacite.creator",
            "Doe, Jane",
            "https://orcid.org/0000-0002-1825-0097",
        ),
        ("add", "datacite.creator", "LRZ CryoEM facility", ""),
        ("set", "datacite.publisher", "Leibniz Supercomputing Centre", ""),
        ("set", "datacite.publicationYear", "2026", ""),
        ("set", "datacite.resourceTypeGeneral", "Dataset", ""),
        ("add", "datacite.subject", "cryo-electron microscopy", ""),
        (
            "add",
            "datacite.description",
            "Movies and motion-corrected micrographs.",
            "",
        ),
        (
            "add",
            "datacite.rights",
            "CC-BY-4.0",
            "https://creativecommons.org/licenses/by/4.0/",
        ),
        ("set", "datacite.language", "en", ""),
        ("set", "datacite.version", "1.0", ""),
    ];
    for (op, attr, value, unit) in fields {
        let r = meta(&z, &alice, coll, op, attr, value, unit).await;
        assert_eq!(r.status(), 204, "{attr}: {}", r.text().await.unwrap());
    }
    // Malformed fields are refused and change nothing.
    let before = z.get_json(&format!("meta{coll}"), &alice).await;
    let bad = [
        ("set", "datacite.publicationYear", "twenty", "", "four digits"),
        ("set", "datacite.resourceTypeGeneral", "dataset", "", "Dataset"),
        ("add", "datacite.publisher", "IT4I", "", "meta set"),
        ("add", "datacite.colour", "blue", "", "not a DataCite field"),
        ("add", "datacite.creator", "Roe, Richard", "orcid 1234", "ORCID"),
        ("set", "datacite.language", "English", "", "language tag"),
    ];
    for (op, attr, value, unit, why) in bad {
        let (status, code, message) = code_of(meta(&z, &alice, coll, op, attr, value, unit).await).await;
        assert_eq!(
            (status, code.as_str()),
            (400, "invalid_argument"),
            "{attr}={value}: {message}"
        );
        assert!(message.contains(why), "{attr}={value}: {message}");
    }
    assert_eq!(z.get_json(&format!("meta{coll}"), &alice).await, before);

    // The identifier is the PID.
    let (status, _, message) = code_of(
        z.get(&format!("export/datacite{coll}"), &alice)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400);
    assert!(message.contains("weft pid mint"), "{message}");
    let r = z
        .post("pids", &alice)
        .json(&json!({"path": coll}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let pid = r.json::<Value>().await.unwrap()["pid"]
        .as_str()
        .unwrap()
        .to_owned();

    let r = z
        .get(&format!("export/datacite{coll}"), &alice)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let doc: Value = r.json().await.unwrap();
    assert_eq!(
        doc["identifiers"],
        json!([{"identifier": pid, "identifierType": "Handle"}])
    );
    assert_eq!(
        doc["titles"],
        json!([{"title": "Apoferritin at 1.2 Å"}, {"title": "Krios run 42"}])
    );
    assert_eq!(
        doc["creators"][0]["nameIdentifiers"][0]["nameIdentifier"],
        "https://orcid.org/0000-0002-1825-0097"
    );
    assert_eq!(
        doc["types"],
        json!({"resourceTypeGeneral": "Dataset", "resourceType": "Dataset"})
    );
    let xml = validate(&doc).unwrap_or_else(|e| panic!("not valid DataCite: {e}\n{doc:#}"));
    assert!(xml.contains("Krios run 42") && xml.contains(&pid), "{xml}");
    // The validator does check: without the publisher the same document is refused.
    let mut broken = doc.clone();
    broken.as_object_mut().unwrap().remove("publisher");
    let why = validate(&broken).expect_err("a document without publisher must not validate");
    assert!(why.contains("publisher"), "{why}");

    // Reading needs read permission.
    let bob = z.user("bob").await;
    let (status, code, _) = code_of(
        z.get(&format!("export/datacite{coll}"), &bob)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, code.as_str()), (403, "forbidden"));
}

//! The conformance cases of the catalog's staging area.

use super::*;

conformance!(staging_areas,);

async fn staging_areas(c: &SqlCatalog) {
    let area = |name: &str, allow: &[&str]| StagingArea {
        name: StagingName::parse(name).unwrap(),
        kind: ResourceKind::Fs,
        url: format!("file:///scratch/{name}"),
        settings: format!(r#"{{"root":"/scratch/{name}"}}"#).parse().unwrap(),
        allow: allow.iter().map(|p| PrincipalName::parse(p).unwrap()).collect(),
        created: 0,
    };
    c.add_staging(&area("scratch", &[])).await.unwrap();
    c.add_staging(&area("proj", &["alice", "hpc-users"]))
        .await
        .unwrap();
    assert_eq!(
        code(c.add_staging(&area("scratch", &["bob"])).await),
        ErrorCode::AlreadyExists
    );
    let list = c.list_staging().await.unwrap();
    let got: Vec<_> = list
        .iter()
        .map(|a| {
            (
                a.name.as_str(),
                a.url.as_str(),
                a.settings.as_str(),
                a.allow.len(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("proj", "file:///scratch/proj", r#"{"root":"/scratch/proj"}"#, 2),
            (
                "scratch",
                "file:///scratch/scratch",
                r#"{"root":"/scratch/scratch"}"#,
                0
            )
        ]
    );
    assert_eq!(list[0].allow[1].as_str(), "hpc-users");
    c.delete_staging(&StagingName::parse("proj").unwrap())
        .await
        .unwrap();
    assert_eq!(
        code(c.delete_staging(&StagingName::parse("proj").unwrap()).await),
        ErrorCode::NotFound
    );
    assert_eq!(c.list_staging().await.unwrap().len(), 1);
}

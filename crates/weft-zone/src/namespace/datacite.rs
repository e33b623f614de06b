//! DataCite metadata (kernel 4.3) of collections and data objects, kept as ordinary
//! metadata under `datacite.*` attributes and checked when set, so that `weft meta` is the
//! one way to write it and `weft export datacite` the one way to read it as DataCite JSON.
//! The identifier is the node's PID.

use super::Namespace;
use crate::Caller;
use serde_json::{json, Map, Value};
use weft_catalog::Avu;
use weft_types::{Error, ErrorCode, LogicalPath, NodeKind, Permission};

pub const PREFIX: &str = "datacite.";

/// DataCite 4.3 `resourceTypeGeneral` values.
const RESOURCE_TYPES: &[&str] = &[
    "Audiovisual",
    "Collection",
    "DataPaper",
    "Dataset",
    "Event",
    "Image",
    "InteractiveResource",
    "Model",
    "PhysicalObject",
    "Service",
    "Software",
    "Sound",
    "Text",
    "Workflow",
    "Other",
];

struct Field {
    name: &'static str,
    /// Several values (`weft meta add`), or one (`weft meta set`).
    many: bool,
    required: bool,
    check: fn(&str, &str) -> Result<(), String>,
}

const FIELDS: &[Field] = &[
    Field {
        name: "title",
        many: true,
        required: true,
        check: any,
    },
    Field {
        name: "creator",
        many: true,
        required: true,
        check: creator,
    },
    Field {
        name: "publisher",
        many: false,
        required: true,
        check: any,
    },
    Field {
        name: "publicationYear",
        many: false,
        required: true,
        check: year,
    },
    Field {
        name: "resourceTypeGeneral",
        many: false,
        required: true,
        check: resource_type,
    },
    Field {
        name: "resourceType",
        many: false,
        required: false,
        check: any,
    },
    Field {
        name: "subject",
        many: true,
        required: false,
        check: any,
    },
    Field {
        name: "description",
        many: true,
        required: false,
        check: any,
    },
    Field {
        name: "rights",
        many: true,
        required: false,
        check: rights,
    },
    Field {
        name: "language",
        many: false,
        required: false,
        check: language,
    },
    Field {
        name: "version",
        many: false,
        required: false,
        check: any,
    },
];

fn any(value: &str, _unit: &str) -> Result<(), String> {
    if value.trim().is_empty() {
        return Err("is empty".into());
    }
    Ok(())
}

/// The unit, if any, is the creator's ORCID iD as a URL.
fn creator(value: &str, unit: &str) -> Result<(), String> {
    any(value, unit)?;
    if unit.is_empty() {
        return Ok(());
    }
    let id = unit.strip_prefix("https://orcid.org/").unwrap_or("");
    let groups: Vec<&str> = id.split('-').collect();
    let ok = groups.len() == 4
        && groups.iter().enumerate().all(|(i, g)| {
            g.len() == 4
                && g.chars()
                    .enumerate()
                    .all(|(j, c)| c.is_ascii_digit() || (i == 3 && j == 3 && c == 'X'))
        });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "unit {unit:?} is not an ORCID iD; write https://orcid.org/0000-0002-1825-0097 or leave the unit empty"
        ))
    }
}

fn year(value: &str, _unit: &str) -> Result<(), String> {
    if value.len() == 4 && value.chars().all(|c| c.is_ascii_digit()) {
        Ok(())
    } else {
        Err(format!("{value:?} is not a year of four digits, e.g. 2026"))
    }
}

fn resource_type(value: &str, _unit: &str) -> Result<(), String> {
    if RESOURCE_TYPES.contains(&value) {
        Ok(())
    } else {
        Err(format!("{value:?} is not one of {}", RESOURCE_TYPES.join(", ")))
    }
}

/// The unit, if any, is the URI of the licence.
fn rights(value: &str, unit: &str) -> Result<(), String> {
    any(value, unit)?;
    if unit.is_empty() || unit.starts_with("https://") || unit.starts_with("http://") {
        Ok(())
    } else {
        Err(format!("unit {unit:?} is not the licence's URI (https://...)"))
    }
}

/// IETF BCP 47 in its common shape: `en`, `de-AT`, `zh-Hant`.
fn language(value: &str, _unit: &str) -> Result<(), String> {
    let mut parts = value.split('-');
    let primary = parts.next().unwrap_or("");
    let ok = (2..=3).contains(&primary.len())
        && primary.chars().all(|c| c.is_ascii_lowercase())
        && parts.all(|p| (1..=8).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphanumeric()));
    if ok {
        Ok(())
    } else {
        Err(format!("{value:?} is not a language tag such as en or de-AT"))
    }
}

fn field(attr: &str) -> Result<Option<&'static Field>, Error> {
    let Some(name) = attr.strip_prefix(PREFIX) else {
        return Ok(None);
    };
    FIELDS.iter().find(|f| f.name == name).map(Some).ok_or_else(|| {
        let known: Vec<String> = FIELDS.iter().map(|f| format!("{PREFIX}{}", f.name)).collect();
        Error::invalid(format!(
            "{attr} is not a DataCite field weft knows; use one of {}",
            known.join(", ")
        ))
    })
}

/// Checks a DataCite attribute about to be added (`add`) or set. Errors: `invalid_argument`
/// naming the field and what it takes.
pub(crate) fn check(avu: &Avu, add: bool, existing: &[Avu]) -> Result<(), Error> {
    let Some(f) = field(&avu.attr)? else {
        return Ok(());
    };
    (f.check)(&avu.value, &avu.unit).map_err(|why| Error::invalid(format!("{}: {why}", avu.attr)))?;
    if add && !f.many && existing.iter().any(|a| a.attr == avu.attr) {
        return Err(Error::invalid(format!(
            "{} takes one value and has one; replace it with `weft meta set`",
            avu.attr
        )));
    }
    Ok(())
}

impl Namespace<'_> {
    /// The DataCite (kernel 4.3) JSON of a collection or data object, from its `datacite.*`
    /// metadata and its PID. Needs `read`. Errors: `invalid_argument` naming the mandatory
    /// fields missing, or the missing PID.
    pub async fn export_datacite(self, caller: &Caller, path: &LogicalPath) -> Result<Value, Error> {
        let node = self.node_as(caller, path, Permission::Read).await?;
        let avus = self.zone.catalog.list_avus(node.id).await?;
        let missing: Vec<String> = FIELDS
            .iter()
            .filter(|f| f.required && !avus.iter().any(|a| a.attr.strip_prefix(PREFIX) == Some(f.name)))
            .map(|f| format!("{PREFIX}{}", f.name))
            .collect();
        if !missing.is_empty() {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                format!(
                    "{path} lacks the mandatory DataCite field(s) {}; set them with `weft meta set {path} {} VALUE`",
                    missing.join(", "),
                    missing[0]
                ),
            ));
        }
        let pid = self.pid_of(node.id).await?.ok_or_else(|| {
            Error::invalid(format!(
                "{path} has no PID to identify it; mint one with `weft pid mint {path}`"
            ))
        })?;
        let values = |name: &str| -> Vec<&Avu> {
            avus.iter()
                .filter(|a| a.attr.strip_prefix(PREFIX) == Some(name))
                .collect()
        };
        let one = |name: &str| values(name).first().map(|a| a.value.clone());
        let general = one("resourceTypeGeneral").unwrap_or_default();
        let mut doc = Map::new();
        doc.insert(
            "identifiers".into(),
            json!([{"identifier": pid, "identifierType": "Handle"}]),
        );
        doc.insert(
            "creators".into(),
            Value::Array(values("creator").iter().map(|a| creator_json(a)).collect()),
        );
        doc.insert(
            "titles".into(),
            Value::Array(
                values("title")
                    .iter()
                    .map(|a| json!({"title": a.value}))
                    .collect(),
            ),
        );
        doc.insert("publisher".into(), json!(one("publisher")));
        doc.insert("publicationYear".into(), json!(one("publicationYear")));
        doc.insert(
            "types".into(),
            json!({"resourceTypeGeneral": general, "resourceType": one("resourceType").unwrap_or(general.clone())}),
        );
        let list = |name: &str, key: &str| -> Vec<Value> {
            values(name).iter().map(|a| json!({ key: a.value })).collect()
        };
        let subjects = list("subject", "subject");
        if !subjects.is_empty() {
            doc.insert("subjects".into(), Value::Array(subjects));
        }
        let descriptions: Vec<Value> = values("description")
            .iter()
            .map(|a| json!({"description": a.value, "descriptionType": "Abstract"}))
            .collect();
        if !descriptions.is_empty() {
            doc.insert("descriptions".into(), Value::Array(descriptions));
        }
        let rights: Vec<Value> = values("rights")
            .iter()
            .map(|a| match a.unit.as_str() {
                "" => json!({"rights": a.value}),
                uri => json!({"rights": a.value, "rightsUri": uri}),
            })
            .collect();
        if !rights.is_empty() {
            doc.insert("rightsList".into(), Value::Array(rights));
        }
        for name in ["language", "version"] {
            if let Some(v) = one(name) {
                doc.insert(name.into(), json!(v));
            }
        }
        if node.kind == NodeKind::Object {
            doc.insert("sizes".into(), json!([format!("{} bytes", node.size)]));
        }
        doc.insert(
            "schemaVersion".into(),
            json!("http://datacite.org/schema/kernel-4"),
        );
        Ok(Value::Object(doc))
    }
}

fn creator_json(a: &Avu) -> Value {
    let mut c = json!({"name": a.value});
    if !a.unit.is_empty() {
        c["nameIdentifiers"] = json!([{
            "nameIdentifier": a.unit,
            "nameIdentifierScheme": "ORCID",
            "schemeUri": "https://orcid.org"
        }]);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn avu(attr: &str, value: &str, unit: &str) -> Avu {
        Avu {
            attr: attr.into(),
            value: value.into(),
            unit: unit.into(),
        }
    }

    #[test]
    fn fields_are_checked() {
        let ok = [
            avu("datacite.title", "Krios run 42", ""),
            avu(
                "datacite.creator",
                "Doe, Jane",
                "https://orcid.org/0000-0002-1825-009X",
            ),
            avu("datacite.publicationYear", "2026", ""),
            avu("datacite.resourceTypeGeneral", "Dataset", ""),
            avu("datacite.language", "de-AT", ""),
            avu(
                "datacite.rights",
                "CC-BY-4.0",
                "https://creativecommons.org/licenses/by/4.0/",
            ),
            avu("other", "anything", ""),
        ];
        for a in &ok {
            check(a, true, &[]).unwrap_or_else(|e| panic!("{a:?}: {e}"));
        }
        let bad = [
            (avu("datacite.colour", "red", ""), "not a DataCite field"),
            (avu("datacite.publicationYear", "26", ""), "four digits"),
            (avu("datacite.resourceTypeGeneral", "dataset", ""), "not one of"),
            (avu("datacite.creator", "Doe", "0000-0002"), "ORCID"),
            (avu("datacite.title", " ", ""), "empty"),
            (avu("datacite.language", "English", ""), "language tag"),
            (avu("datacite.rights", "CC0", "cc0"), "URI"),
        ];
        for (a, why) in &bad {
            let e = check(a, true, &[]).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument);
            assert!(e.message.contains(why), "{a:?}: {}", e.message);
        }
        let had = [avu("datacite.publisher", "LRZ", "")];
        let e = check(&avu("datacite.publisher", "IT4I", ""), true, &had).unwrap_err();
        assert!(e.message.contains("meta set"), "{}", e.message);
        check(&avu("datacite.publisher", "IT4I", ""), false, &had).unwrap();
        check(
            &avu("datacite.title", "Second title", ""),
            true,
            &[avu("datacite.title", "First", "")],
        )
        .unwrap();
    }
}

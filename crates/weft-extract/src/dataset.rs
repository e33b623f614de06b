//! Dataset sidecars (`dataset.yaml`, `dataset.json`): what the people who made a dataset
//! say of it, in a file beside its data, read as YAML 1.2 (of which JSON is a part). A
//! mapping at the top; nested mappings are flattened with dots (`sample.name`), lists give
//! one value per item. The zone puts the values on the sidecar's collection.

use crate::read::{clean, whole_text, Found, Known, Problem};
use yaml_rust2::{Yaml, YamlLoader};

/// Largest sidecar read.
const MAX_LEN: u64 = 256 * 1024;
/// Mappings within mappings, at most.
const MAX_DEPTH: usize = 8;

pub(crate) fn read(k: &Known) -> Result<Found, Problem> {
    let text = whole_text(k, MAX_LEN)?;
    let docs = YamlLoader::load_from_str(text).map_err(|e| Problem::bad(format!("not YAML or JSON: {e}")))?;
    let [doc] = docs.as_slice() else {
        return Err(Problem::bad(format!(
            "{} documents; a sidecar is one mapping",
            docs.len()
        )));
    };
    let Yaml::Hash(_) = doc else {
        return Err(Problem::bad("the document is not a mapping of names to values"));
    };
    let mut f = Found::default();
    flatten(&mut f, "dataset", doc, 0)?;
    Ok(f)
}

fn flatten(f: &mut Found, attr: &str, v: &Yaml, depth: usize) -> Result<(), Problem> {
    match v {
        Yaml::Hash(map) => {
            if depth == MAX_DEPTH {
                return Err(Problem::bad(format!(
                    "{attr}: mappings nested deeper than {MAX_DEPTH}"
                )));
            }
            for (key, value) in map {
                let key =
                    scalar(key).ok_or_else(|| Problem::bad(format!("{attr}: a key that is not text")))?;
                let key = clean(key.as_bytes());
                if key.is_empty() {
                    return Err(Problem::bad(format!("{attr}: an empty key")));
                }
                flatten(f, &format!("{attr}.{key}"), value, depth + 1)?;
            }
            Ok(())
        }
        Yaml::Array(items) => {
            for item in items {
                let value = scalar(item)
                    .ok_or_else(|| Problem::bad(format!("{attr}: a list item that is not a single value")))?;
                f.add(attr, clean(value.as_bytes()), "")?;
            }
            Ok(())
        }
        Yaml::Null => Ok(()),
        v => {
            let value = scalar(v).ok_or_else(|| Problem::bad(format!("{attr}: an alias or a bad value")))?;
            f.add(attr, clean(value.as_bytes()), "")
        }
    }
}

fn scalar(v: &Yaml) -> Option<String> {
    match v {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::{extract, Format, Known, Problem};

    fn read(text: &str) -> Result<Vec<(String, String)>, Problem> {
        extract(Format::Dataset, &Known::whole(text.as_bytes()))
            .map(|avus| avus.into_iter().map(|a| (a.attr, a.value)).collect())
    }

    #[test]
    fn yaml_and_json_flatten_alike() {
        let yaml = "title: Apoferritin, 300 kV\nsample:\n  name: apoferritin\n  grid: 12\nkeywords: [cryo-em, test]\nnotes: ~\n";
        let json = r#"{"title": "Apoferritin, 300 kV", "sample": {"name": "apoferritin", "grid": 12}, "keywords": ["cryo-em", "test"], "notes": null}"#;
        let want: Vec<(String, String)> = [
            ("dataset.title", "Apoferritin, 300 kV"),
            ("dataset.sample.name", "apoferritin"),
            ("dataset.sample.grid", "12"),
            ("dataset.keywords", "cryo-em"),
            ("dataset.keywords", "test"),
        ]
        .iter()
        .map(|(a, v)| (a.to_string(), v.to_string()))
        .collect();
        assert_eq!(read(yaml).unwrap(), want);
        assert_eq!(read(json).unwrap(), want);
    }

    #[test]
    fn refuses_what_is_not_one_mapping() {
        let deep = format!("{}1{}", "{a: ".repeat(20), "}".repeat(20));
        let hostile = "[".repeat(100_000);
        for bad in [
            "- a\n- b\n",
            "a: 1\n---\nb: 2\n",
            "a: [[1]]\n",
            "{",
            &deep,
            &hostile,
            "",
        ] {
            assert!(matches!(read(bad), Err(Problem::Bad(_))), "{bad:.40}");
        }
    }
}

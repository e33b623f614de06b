//! The metadata extractors over hostile files: the first byte picks the format, the
//! second how much of the file the reader has been given before it stops asking (255:
//! all of it); the rest is the file. A reader never panics, never asks for bytes past
//! the end, and what it returns fits the catalog's AVU rules.

use weft_extract::{extract, Format, Known, Problem, MAX_AVUS};
use weft_types::meta::validate_avu_part;

pub fn run(data: &[u8]) {
    let [pick, given, file @ ..] = data else {
        return;
    };
    let format = Format::BUILT_IN[*pick as usize % Format::BUILT_IN.len()];
    let mut known = Known::new(file.len() as u64);
    let given = if *given == 255 {
        file.len()
    } else {
        file.len() * *given as usize / 255
    };
    known.add(0, file[..given].to_vec());
    if given < file.len() {
        known.stop_asking();
    }
    match extract(format, &known) {
        Ok(avus) => {
            assert!(avus.len() <= MAX_AVUS);
            for a in avus {
                assert!(a.attr.starts_with(&format!("{}.", format.name())), "{a:?}");
                validate_avu_part("attribute", &a.attr).unwrap();
                validate_avu_part("value", &a.value).unwrap();
                validate_avu_part("unit", &a.unit).unwrap();
            }
        }
        Err(Problem::Bad(why)) => assert!(why.starts_with(format.name()), "{why}"),
        Err(Problem::Need { at, len }) => {
            assert!(given < file.len(), "asked for {at}+{len} of a file given whole");
            assert!(
                at + len <= file.len() as u64,
                "asked for {at}+{len} past {}",
                file.len()
            );
        }
    }
}

//! Runs a target over its seeds (`seeds/<target>/`) and the inputs that once crashed it
//! (`regressions/<target>/`); returns how many inputs it ran.

use std::path::Path;

pub fn replay(fuzz_dir: &Path, target: &str, run: fn(&[u8])) -> usize {
    let mut n = 0;
    for dir in ["seeds", "regressions"] {
        let Ok(entries) = std::fs::read_dir(fuzz_dir.join(dir).join(target)) else {
            continue;
        };
        let mut files: Vec<_> = entries.map(|e| e.expect("a directory entry").path()).collect();
        files.sort();
        for file in files {
            let data = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            eprintln!("replaying {}", file.display());
            run(&data);
            n += 1;
        }
    }
    n
}

//! `weft pid mint|show`: the PID alone on stdout, resolvable, following a move.

use weft_testkit::zone::ZoneProcess;

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

#[test]
fn pids_are_minted_and_shown_from_the_cli() {
    let z = ZoneProcess::start(WEFT, "lrz").unwrap();
    let alice = z.user_with_token("alice");
    std::fs::write(z.work().join("f.nc"), b"data\n").unwrap();
    z.weft_as(&alice, &["put", "f.nc", "."]).ok();
    let pid = z
        .weft_as(&alice, &["pid", "mint", "f.nc"])
        .ok()
        .stdout
        .trim()
        .to_owned();
    assert!(
        pid.starts_with("lrz/") && !pid.contains(char::is_whitespace),
        "{pid}"
    );
    let again = z.weft_as(&alice, &["pid", "mint", "f.nc", "--json"]).ok().json();
    assert_eq!(again["pid"], pid.as_str());
    z.weft_as(&alice, &["mv", "f.nc", "g.nc"]).ok();
    let shown = z.weft_as(&alice, &["pid", "show", &pid]).ok().stdout;
    assert!(shown.contains("/lrz/home/alice/g.nc"), "{shown}");
    // The public record: no replicas (stat shows them to whoever may read the object).
    assert!(
        shown.contains("checksum  blake3:") && !shown.contains("replica"),
        "{shown}"
    );
    let stat = z.weft_as(&alice, &["stat", "g.nc"]).ok().stdout;
    assert!(stat.contains(&format!("pid       {pid}")), "{stat}");
    z.weft_as(&alice, &["pid", "show", "lrz/NOPE"])
        .fails(3, "not_found");
    z.weft_as(&alice, &["pid", "show", "no-slash"])
        .fails(1, "invalid_argument");
}

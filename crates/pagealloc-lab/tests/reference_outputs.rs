//! `pagelab reproduce --quick` against the JSON and CSV committed under
//! `tests/reference/quick/`: a change not meant to move a simulated result leaves every
//! file byte-identical, and one that is meant to shows its diff in review.
//!
//! `cargo test` runs a few small experiments (debug builds are slow); the full set runs in
//! a release build, as `.ci/run` does:
//!
//! ```text
//! cargo test --release -p pagealloc-lab --test reference_outputs -- --include-ignored
//! ```
//!
//! After a change meant to alter results, the same command with `PAGELAB_BLESS=1` rewrites
//! the reference files from this build (docs/testing.md).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const REFERENCE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/quick");

/// Experiments on real threads: their outputs are measurements of this machine, not
/// deterministic, so they have no reference.
const REAL_THREADS: &[&str] = &["llfree-frag"];

/// The experiments a debug `cargo test` runs: a few seconds together.
const SMALL: &[&str] = &["highorder-netperf-tcp", "highorder-trunc", "highorder-page-fault1"];

fn blessing() -> bool {
    std::env::var_os("PAGELAB_BLESS").is_some_and(|value| value != "0")
}

/// Runs `pagelab reproduce --quick` for `experiments` (all when empty) into a fresh folder.
fn reproduce_quick(name: &str, experiments: &[&str]) -> PathBuf {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = fs::remove_dir_all(&out);
    let status = Command::new(env!("CARGO_BIN_EXE_pagelab"))
        .arg("reproduce")
        .args(experiments)
        .args(["--quick", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("pagelab runs");
    assert!(status.success(), "pagelab reproduce --quick {experiments:?} failed: {status}");
    out
}

/// The compared outputs in `dir`: every JSON and CSV but the real-thread experiments'.
fn compared_files(dir: &Path) -> BTreeSet<String> {
    let entries = fs::read_dir(dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display()));
    entries
        .map(|entry| entry.unwrap().file_name().into_string().expect("ASCII file names"))
        .filter(|name| name.ends_with(".json") || name.ends_with(".csv"))
        .filter(|name| !REAL_THREADS.iter().any(|experiment| name.starts_with(&format!("{experiment}."))))
        .collect()
}

/// How `produced` differs from `reference`: one line per file, with the first differing
/// lines of each; empty when every file is byte-identical.
fn differences(reference: &Path, produced: &Path, files: &BTreeSet<String>) -> Vec<String> {
    let mut found = Vec::new();
    for name in files {
        let (expected, actual) = (fs::read(reference.join(name)), fs::read(produced.join(name)));
        match (expected, actual) {
            (Ok(expected), Ok(actual)) if expected == actual => {}
            (Ok(expected), Ok(actual)) => {
                let (expected, actual) = (String::from_utf8_lossy(&expected), String::from_utf8_lossy(&actual));
                let changed: Vec<String> = expected
                    .lines()
                    .zip(actual.lines())
                    .filter(|(was, now)| was != now)
                    .take(3)
                    .map(|(was, now)| format!("    - {was}\n    + {now}"))
                    .collect();
                let lines = format!("{} -> {} lines", expected.lines().count(), actual.lines().count());
                found.push(format!("{name} differs ({lines}):\n{}", changed.join("\n")));
            }
            (Err(_), _) => found.push(format!("{name}: no reference file")),
            (_, Err(_)) => found.push(format!("{name}: not produced")),
        }
    }
    found
}

/// Compares, or with `PAGELAB_BLESS` set rewrites the reference files it compares.
fn check_against_reference(produced: &Path, files: &BTreeSet<String>) {
    let reference = Path::new(REFERENCE_DIR);
    if blessing() {
        fs::create_dir_all(reference).unwrap();
        for name in files {
            fs::copy(produced.join(name), reference.join(name)).unwrap();
        }
        return;
    }
    let found = differences(reference, produced, files);
    assert!(
        found.is_empty(),
        "pagelab reproduce --quick differs from {REFERENCE_DIR}:\n{}\n\nIf the change is meant to alter \
         results, rewrite the reference and review its diff:\n  PAGELAB_BLESS=1 cargo test --release -p \
         pagealloc-lab --test reference_outputs -- --include-ignored",
        found.join("\n")
    );
}

#[test]
fn small_quick_reproductions_match_the_reference() {
    let produced = reproduce_quick("reference-small", SMALL);
    let files = compared_files(&produced);
    assert_eq!(files.len(), 2 * SMALL.len(), "a JSON and a CSV per experiment: {files:?}");
    if blessing() {
        return; // The full run below rewrites the reference, stale files included.
    }
    check_against_reference(&produced, &files);
}

#[test]
#[cfg_attr(debug_assertions, ignore = "minutes in a debug build: run it with --release --include-ignored")]
fn every_quick_reproduction_matches_the_reference() {
    let produced = reproduce_quick("reference-all", &[]);
    let files = compared_files(&produced);
    if blessing() {
        for stale in compared_files(Path::new(REFERENCE_DIR)).difference(&files) {
            fs::remove_file(Path::new(REFERENCE_DIR).join(stale)).unwrap();
        }
    } else {
        let referenced = compared_files(Path::new(REFERENCE_DIR));
        let gone: Vec<_> = referenced.difference(&files).collect();
        assert!(gone.is_empty(), "reference files no experiment writes any more: {gone:?}");
    }
    check_against_reference(&produced, &files);
}

/// The comparison finds a one-byte change, a missing file and a file with no reference.
#[test]
fn the_comparison_reports_every_kind_of_difference() {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("reference-comparison");
    let _ = fs::remove_dir_all(&root);
    let (reference, produced) = (root.join("reference"), root.join("produced"));
    fs::create_dir_all(&reference).unwrap();
    fs::create_dir_all(&produced).unwrap();
    for dir in [&reference, &produced] {
        fs::write(dir.join("same.csv"), "source,preset\nours,base\n").unwrap();
    }
    fs::write(reference.join("moved.csv"), "ours,base,score,1.0\n").unwrap();
    fs::write(produced.join("moved.csv"), "ours,base,score,1.5\n").unwrap();
    fs::write(reference.join("gone.json"), "{}").unwrap();
    fs::write(produced.join("new.json"), "{}").unwrap();
    fs::write(produced.join("llfree-frag.json"), "{}").unwrap();
    let files: BTreeSet<String> = compared_files(&reference).union(&compared_files(&produced)).cloned().collect();
    assert!(!files.contains("llfree-frag.json"), "real-thread outputs are not compared");
    let found = differences(&reference, &produced, &files);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found.iter().any(|line| line.starts_with("moved.csv differs") && line.contains("+ ours,base,score,1.5")));
    assert!(found.iter().any(|line| line == "gone.json: not produced"));
    assert!(found.iter().any(|line| line == "new.json: no reference file"));
}

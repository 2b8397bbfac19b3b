//! `pagelab torture` end to end: a short run on real threads (more than this machine's two
//! cores) must finish cleanly, with quiescent checks run and no violation reported.

use std::process::Command;

/// The number before `label` in `line` ("..., 12 checks, 0 violations").
fn count_before(line: &str, label: &str) -> u64 {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words
        .iter()
        .position(|word| word.trim_end_matches(',') == label)
        .unwrap_or_else(|| panic!("no {label} in {line:?}"));
    words[at - 1].parse().unwrap_or_else(|_| panic!("no count before {label} in {line:?}"))
}

#[test]
fn a_short_torture_run_checks_and_finds_no_violation() {
    let output = Command::new(env!("CARGO_BIN_EXE_pagelab"))
        .args(["torture", "--seconds", "2", "--threads", "4", "--client-panic-every", "20"])
        .output()
        .expect("run pagelab");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let total = stdout.lines().find(|line| line.starts_with("torture:")).expect("a total line");
    assert!(count_before(total, "checks") > 0, "{total}");
    assert_eq!(count_before(total, "violations"), 0, "{total}");
    assert!(count_before(total, "operations") > 0, "{total}");
    assert!(stdout.contains("preset mainline:"), "{stdout}");
    // The migration client panicked and every panic was caught and cleaned up after (no
    // violation above), and the memory-only node served its requests.
    let compaction = stdout.lines().find(|line| line.contains("client panics")).expect("a compaction line");
    assert!(count_before(compaction, "client") > 0, "{compaction}");
    let requests = stdout.lines().find(|line| line.contains("by request:")).expect("a request line");
    let node1 = requests.split(", ").find_map(|pair| pair.trim().strip_prefix("node1_movable:")).expect("node 1");
    assert!(node1.parse::<u64>().unwrap() > 0, "{requests}");
}

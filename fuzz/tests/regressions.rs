//! Inputs the fuzzers or the property tests once failed on, kept in `regressions/<target>/`
//! and replayed on stable (with debug assertions, as `cargo fuzz` builds), so a fixed bug
//! stays fixed. A missing or empty directory, or an input that no longer decodes (a format
//! change in `arbitrary` or in the input types), fails: a regression that is not replayed
//! is not kept.

use arbitrary::{Arbitrary, Unstructured};
use pagealloc_fuzz::{description, operations};

/// Decodes and runs every input of `regressions/<target>/`; returns how many ran.
fn replay<T: for<'a> Arbitrary<'a>>(target: &str, run: impl Fn(&T)) -> usize {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions").join(target);
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display()));
    let mut replayed = 0;
    for entry in entries {
        let path = entry.expect("entry").path();
        let bytes = std::fs::read(&path).expect("read");
        let input = T::arbitrary_take_rest(Unstructured::new(&bytes))
            .unwrap_or_else(|error| panic!("{} no longer decodes: {error}", path.display()));
        run(&input);
        replayed += 1;
    }
    assert!(replayed > 0, "{} holds no input", dir.display());
    replayed
}

/// The periodic decay's assertion on a zone whose pageset bounds cross (high_min > high_max),
/// and a high the decay left above high_max, which the next free must clamp.
#[test]
fn operations_regressions_pass() {
    assert!(replay::<operations::Input>("operations", operations::run) >= 2);
}

/// The oracle's zone limits (absurd sizes past PFN_LIMIT), an inverted reservation beside
/// overlapping ones, a THP batch shift where it does nothing, and the largest batch override
/// shifted for a pageblock-order drain (it wrapped to a zero chunk).
#[test]
fn build_description_regressions_pass() {
    assert!(replay::<description::Description>("build_description", description::run) >= 5);
}

#[test]
#[should_panic(expected = "no-such-target")]
fn a_missing_directory_fails() {
    replay::<operations::Input>("no-such-target", operations::run);
}

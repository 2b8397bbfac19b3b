//! Inputs the fuzzers once crashed on, kept in `regressions/<target>/` and replayed on
//! stable (with debug assertions, as `cargo fuzz` builds), so a fixed bug stays fixed.

use arbitrary::{Arbitrary, Unstructured};
use pagealloc_fuzz::{description, operations};

fn replay<T: for<'a> Arbitrary<'a>>(target: &str, run: impl Fn(&T)) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions").join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else { return };
    for entry in entries {
        let path = entry.expect("entry").path();
        let bytes = std::fs::read(&path).expect("read");
        if let Ok(input) = T::arbitrary_take_rest(Unstructured::new(&bytes)) {
            run(&input);
        }
    }
}

#[test]
fn operations_regressions_pass() {
    replay::<operations::Input>("operations", operations::run);
}

#[test]
fn build_description_regressions_pass() {
    replay::<description::Description>("build_description", description::run);
}

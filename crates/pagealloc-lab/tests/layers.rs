//! The lab is layered file by file, as the core is. Its layer table is main.rs's list of
//! modules under its numbered comments.

use pagealloc_testkit::layers::CrateLayers;

fn lab() -> CrateLayers {
    CrateLayers::read(env!("CARGO_MANIFEST_DIR"), "main.rs")
}

#[test]
fn main_rs_declares_plumbing_below_experiments() {
    let layers = lab().table.0;
    assert!(layers.len() >= 5, "{} layers", layers.len());
    assert!(layers[0].contains(&"output_format".to_string()));
    assert!(layers.last().unwrap().contains(&"experiments".to_string()));
}

#[test]
fn the_lab_is_layered_file_by_file() {
    let problems = lab().problems();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_planted_run_to_experiments_import_fails() {
    let problems = lab().problems_with("run", "fn planted() { crate::experiments::run_all(); }");
    assert!(problems.iter().any(|p| p.starts_with("`run` (layer 4) uses `experiments")), "{problems:?}");
}

//! The lab is layered file by file, as the core is: every file uses items only of its own
//! top-level module or of modules in its layer or below, and no chain of files leads back
//! to where it started. The layer table is main.rs's list of modules under its numbered
//! comments.

use std::path::{Path, PathBuf};

use pagealloc_testkit::layers::{self, LayerTable, SourceTree};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn table() -> LayerTable {
    LayerTable::declared_in(&std::fs::read_to_string(src().join("main.rs")).expect("main.rs"))
}

#[test]
fn main_rs_declares_the_labs_layers() {
    let table = table();
    assert!(table.0.len() >= 5, "{} layers", table.0.len());
    assert!(table.0[0].contains(&"output_format".to_string()));
    assert!(table.0.last().unwrap().contains(&"experiments".to_string()));
}

#[test]
fn every_file_imports_only_downward_and_no_files_form_a_cycle() {
    let problems = layers::problems(&SourceTree::read(&src()), &table());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_planted_upward_import_fails() {
    let mut tree = SourceTree::read(&src());
    tree.plant("run", "fn planted() { crate::experiments::run_all(); }");
    let problems = layers::problems(&tree, &table());
    assert!(problems.iter().any(|p| p.starts_with("`run` (layer 4) uses `experiments")), "{problems:?}");
}

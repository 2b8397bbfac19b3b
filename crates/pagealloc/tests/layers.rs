//! The core is layered file by file: every file uses items only of its own top-level module
//! or of modules in its layer or below, and no chain of files leads back to where it
//! started, inside a module or across modules. The layer table is lib.rs's list of modules
//! under its numbered comments, so a new module gets its layer where it is declared.

use std::path::{Path, PathBuf};

use pagealloc_testkit::layers::{self, LayerTable, SourceTree};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn table() -> LayerTable {
    LayerTable::declared_in(&std::fs::read_to_string(src().join("lib.rs")).expect("lib.rs"))
}

#[test]
fn lib_rs_declares_layers_from_primitives_up() {
    let table = table();
    assert!(table.0.len() >= 10, "{} layers", table.0.len());
    assert!(table.0[0].contains(&"types".to_string()) && table.0[0].contains(&"platform".to_string()));
    assert!(table.0.last().unwrap().contains(&"handle".to_string()));
}

#[test]
fn every_file_imports_only_downward_and_no_files_form_a_cycle() {
    let problems = layers::problems(&SourceTree::read(&src()), &table());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_planted_upward_import_fails() {
    let mut tree = SourceTree::read(&src());
    tree.plant("types", "fn planted(_: &crate::zone::Zone<()>) {}");
    let problems = layers::problems(&tree, &table());
    assert!(problems.iter().any(|p| p.starts_with("`types` (layer 0) uses `zone")), "{problems:?}");
}

#[test]
fn a_planted_cycle_inside_a_module_fails() {
    // path.rs drains through drain.rs; drain.rs reaching back into path.rs closes a loop.
    let mut tree = SourceTree::read(&src());
    tree.plant("pcp::drain", "use super::path::pcp_alloc;");
    let problems = layers::problems(&tree, &table());
    assert!(problems.iter().any(|p| p.starts_with("cycle: ") && p.contains("pcp::drain")), "{problems:?}");
}

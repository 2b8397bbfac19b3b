//! The core is layered file by file: every file uses items only of its own top-level module
//! or of modules in its layer or below, and no chain of files leads back to where it
//! started, inside a module or across modules. The layer table is lib.rs's list of modules
//! under its numbered comments, so a new module gets its layer where it is declared.

use pagealloc_testkit::layers::CrateLayers;

fn core() -> CrateLayers {
    CrateLayers::read(env!("CARGO_MANIFEST_DIR"), "lib.rs")
}

#[test]
fn lib_rs_declares_layers_from_primitives_up() {
    let layers = core().table.0;
    assert!(layers.len() >= 10, "{} layers", layers.len());
    assert!(layers[0].contains(&"types".to_string()) && layers[0].contains(&"platform".to_string()));
    assert!(layers.last().unwrap().contains(&"handle".to_string()));
}

#[test]
fn the_core_is_layered_file_by_file() {
    let problems = core().problems();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn planted_upward_imports_and_cycles_fail() {
    let core = core();
    let upward = core.problems_with("types", "fn planted(_: &crate::zone::Zone<()>) {}");
    assert!(upward.iter().any(|p| p.starts_with("`types` (layer 0) uses `zone")), "{upward:?}");
    // path.rs drains through drain.rs; drain.rs reaching back into path.rs closes a loop.
    let cycle = core.problems_with("pcp::drain", "use super::path::pcp_alloc;");
    assert!(cycle.iter().any(|p| p.starts_with("cycle: ") && p.contains("pcp::drain")), "{cycle:?}");
}

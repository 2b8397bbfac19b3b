use super::*;

fn layers() -> LayerTable {
    LayerTable::new(&[&["types"], &["pcp"], &["zone"]])
}

fn tree() -> SourceTree {
    SourceTree::from_files(&[
        ("lib.rs", "// 0. Types\npub mod types;\n// 1. Pagesets\nmod pcp;\n// 2. Zones\npub mod zone;\n"),
        ("types.rs", "pub type Pfn = u64;"),
        ("pcp/mod.rs", "mod path;\nmod drain;\npub(crate) use path::pcp_alloc;\npub struct PerCpuPages;"),
        ("pcp/path.rs", "use super::drain::drain;\nuse super::PerCpuPages;\npub fn pcp_alloc() {}"),
        ("pcp/drain.rs", "use crate::types::Pfn;\npub fn drain(_: super::PerCpuPages) {}"),
        ("zone.rs", "use crate::pcp::pcp_alloc;\nfn f() { crate::types::Pfn::default(); }"),
        ("pcp/tests.rs", "use crate::zone::Up;"),
    ])
}

fn edges(graph: &Graph, module: &str) -> Vec<String> {
    let key: ModPath = module.split("::").map(str::to_string).collect();
    graph[&key].iter().map(|m| m.join("::")).collect()
}

#[test]
fn edges_follow_super_self_and_reexports_to_the_defining_file() {
    let graph = tree().graph();
    assert_eq!(edges(&graph, "zone"), ["pcp::path", "types"], "through the facade's re-export");
    assert_eq!(edges(&graph, "pcp::path"), ["pcp", "pcp::drain"]);
    assert_eq!(edges(&graph, "pcp::drain"), ["pcp", "types"]);
    assert!(edges(&graph, "pcp").is_empty(), "a facade's re-exports are not edges");
    assert!(problems(&tree(), &layers()).is_empty(), "{:?}", problems(&tree(), &layers()));
}

#[test]
fn a_planted_upward_import_is_found() {
    let mut tree = tree();
    tree.plant("types", "fn g(_: crate::pcp::PerCpuPages) {}");
    assert_eq!(problems(&tree, &layers()), ["`types` (layer 0) uses `pcp` (layer 1)"]);
}

#[test]
fn a_planted_cycle_inside_a_module_is_found() {
    let mut tree = tree();
    tree.plant("pcp::drain", "use super::path::pcp_alloc;");
    assert_eq!(problems(&tree, &layers()), ["cycle: pcp::drain -> pcp::path -> pcp::drain"]);
}

#[test]
fn a_module_without_a_layer_is_named() {
    let mut tree = tree();
    tree.add("extra.rs", "");
    assert_eq!(problems(&tree, &layers()), ["module `extra` has no layer"]);
}

#[test]
fn the_root_declares_its_layers_in_numbered_comments() {
    let root = "// 0. Types\npub mod types;\n// 1. Pagesets\nmod pcp;\n// 2. Zones\npub mod zone;\n";
    assert_eq!(LayerTable::declared_in(root), layers());
}

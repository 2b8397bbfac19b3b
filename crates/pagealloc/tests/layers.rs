//! The core's modules import only downward: each top-level module of `src/` has a layer,
//! and a `crate::` path from one module may name only modules of its own layer or below,
//! with no cycle inside a layer. A new module must be given a layer here, deliberately.
//! Test modules (`#[cfg(test)] mod tests`) may reach up and are not scanned.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Bottom up, as in `lib.rs`.
const LAYERS: &[&[&str]] = &[
    // Foundation: machine abstraction, locks, types, requests, policies, sizing, the
    // machine description.
    &[
        "builder",
        "client",
        "error",
        "events",
        "growable",
        "meta",
        "metadata_memory",
        "platform",
        "policy",
        "prefetch",
        "presets",
        "request",
        "sizing",
        "sync",
        "table",
        "test_rng",
        "types",
        "vmstat",
    ],
    // Data: frame records, the index lists linking them, and the block handle (which
    // records its head frame's word).
    &["block", "frame", "list", "lru"],
    // A zone's data, no locks taken.
    &["free_area", "fullness", "remote_frees", "zone_mem", "zone_state"],
    // Buddy operations under the zone lock.
    &["buddy"],
    // Policies over the buddy.
    &["compaction", "fallback", "highatomic", "watermark"],
    // The one zone-take path.
    &["take"],
    // Per-CPU pagesets, over the buddy's narrow view.
    &["pcp"],
    // A zone composes the above.
    &["zone"],
    // The allocator composes zones.
    &["allocator"],
    // Around the allocator.
    &["arceos_pages", "background", "check", "global_alloc", "handle", "views", "x86_64_frames"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to (`src/pcp/drain.rs` -> `pcp`); `None` for lib.rs.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(src).unwrap();
    let first = relative.components().next()?.as_os_str().to_str()?.to_string();
    let name = first.trim_end_matches(".rs").to_string();
    (name != "lib").then_some(name)
}

/// Modules named by `crate::<module>` paths outside test modules.
fn imports(text: &str) -> BTreeSet<String> {
    let code = match text.find("#[cfg(test)]\nmod tests") {
        Some(start) => &text[..start],
        None => text,
    };
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        if code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue; // e.g. `pagealloc_crate::`
        }
        let name: String = code[at + 7..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if !name.is_empty() && name.chars().next().unwrap().is_lowercase() {
            found.insert(name);
        }
    }
    found
}

/// Edges module -> imported module, over the whole crate.
fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let Some(module) = module_of(&src, &file) else { continue };
        let text = std::fs::read_to_string(&file).unwrap();
        let edges = graph.entry(module.clone()).or_default();
        edges.extend(imports(&text).into_iter().filter(|target| *target != module));
    }
    graph
}

#[test]
fn every_module_has_a_layer_and_imports_only_downward() {
    let graph = import_graph();
    assert!(graph.len() >= 20, "scanned {} modules", graph.len());
    let mut violations = Vec::new();
    for (module, targets) in &graph {
        let Some(layer) = layer_of(module) else {
            violations.push(format!("module `{module}` has no layer in tests/layers.rs"));
            continue;
        };
        for target in targets {
            match layer_of(target) {
                Some(target_layer) if target_layer <= layer => {}
                Some(target_layer) => {
                    violations.push(format!("`{module}` (layer {layer}) imports `{target}` (layer {target_layer})"))
                }
                None => violations.push(format!("`{module}` imports `{target}`, which has no layer")),
            }
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

#[test]
fn no_import_cycle() {
    let graph = import_graph();
    // Depth-first search with colours: grey on the stack, black done.
    fn visit<'a>(
        module: &'a str,
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        colour: &mut BTreeMap<&'a str, bool>,
        stack: &mut Vec<&'a str>,
    ) -> Result<(), String> {
        match colour.get(module) {
            Some(true) => return Ok(()),
            Some(false) => {
                let start = stack.iter().position(|m| *m == module).unwrap();
                return Err(format!("cycle: {} -> {module}", stack[start..].join(" -> ")));
            }
            None => {}
        }
        colour.insert(module, false);
        stack.push(module);
        for target in graph.get(module).into_iter().flatten() {
            visit(target, graph, colour, stack)?;
        }
        stack.pop();
        colour.insert(module, true);
        Ok(())
    }
    let mut colour = BTreeMap::new();
    for module in graph.keys() {
        visit(module, &graph, &mut colour, &mut Vec::new()).unwrap();
    }
}

#[test]
fn the_scanner_sees_imports_and_skips_tests() {
    let text = "use crate::zone::Zone;\nfn f() { crate::pcp::drain(); }\n#[cfg(test)]\nmod tests {\n use crate::allocator::X;\n}";
    let found: Vec<String> = imports(text).into_iter().collect();
    assert_eq!(found, ["pcp", "zone"]);
}

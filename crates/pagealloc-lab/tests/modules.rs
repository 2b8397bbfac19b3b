//! The lab's top-level modules import one another without cycles: a module reaching one
//! that reaches back (run and trace, run and workload once did) fails here, naming the
//! cycle. Test code (from a file's first `#[cfg(test)]`) is not counted.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each top-level module's `crate::` imports of other top-level modules.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut pending = vec![src.clone()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("src directory") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            if path.extension().is_none_or(|ext| ext != "rs") {
                continue;
            }
            let relative = path.strip_prefix(&src).unwrap();
            let first = relative.components().next().unwrap().as_os_str().to_string_lossy();
            let module = first.trim_end_matches(".rs").to_string();
            let text = std::fs::read_to_string(&path).expect("read");
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            let used = graph.entry(module.clone()).or_default();
            for (index, _) in code.match_indices("crate::") {
                let name: String =
                    code[index + 7..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if name != module && !name.is_empty() {
                    used.insert(name);
                }
            }
        }
    }
    graph
}

/// A path from `from` back to `to`, if one exists.
fn path_back(graph: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str) -> Option<Vec<String>> {
    let mut stack = vec![vec![from.to_string()]];
    let mut seen = BTreeSet::new();
    while let Some(path) = stack.pop() {
        let last = path.last().unwrap().clone();
        if last == to {
            return Some(path);
        }
        if !seen.insert(last.clone()) {
            continue;
        }
        for next in graph.get(&last).into_iter().flatten() {
            let mut longer = path.clone();
            longer.push(next.clone());
            stack.push(longer);
        }
    }
    None
}

#[test]
fn top_level_modules_import_without_cycles() {
    let graph = imports();
    assert!(graph.contains_key("run") && graph["run"].contains("workload"), "the scan sees the imports");
    for (module, used) in &graph {
        for next in used {
            if let Some(back) = path_back(&graph, next, module) {
                panic!("import cycle: {module} -> {}", back.join(" -> "));
            }
        }
    }
}

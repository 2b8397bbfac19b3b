//! Layers checked file by file. Each top-level module of a crate has a layer; a file may use
//! items of its own top-level module or of a module in its layer or below, and no chain of
//! files may lead back to where it started, inside a module or across modules (a file's
//! use of its own parent module aside: see [`cycles`]).
//!
//! An edge is any path that reaches another file: `crate::`, `super::`, `self::` and
//! submodule paths, in `use` items or in code, followed through re-exports to the file that
//! defines the item. A `pub use` of a module's own submodules (its facade) is not an edge.
//! Test modules and `tests` files are not read. Doc comments are not code.

mod lex;
mod paths;
mod tree;

use std::collections::{BTreeMap, BTreeSet};

pub use tree::{ModPath, SourceTree};

/// The graph of `tree`.
pub type Graph = BTreeMap<ModPath, BTreeSet<ModPath>>;

/// Top-level module names by layer, bottom up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerTable(pub Vec<Vec<String>>);

impl LayerTable {
    pub fn new(layers: &[&[&str]]) -> LayerTable {
        LayerTable(layers.iter().map(|layer| layer.iter().map(|m| m.to_string()).collect()).collect())
    }

    /// The layers a crate root declares: its `mod` items under numbered comments (`// 3.
    /// Buddy operations`), bottom up. The root's list is then the one table.
    pub fn declared_in(root: &str) -> LayerTable {
        let mut layers: Vec<Vec<String>> = Vec::new();
        for line in root.lines().map(str::trim) {
            let numbered = line.strip_prefix("// ").and_then(|rest| rest.split_once(". ")).map(|(n, _)| n);
            if numbered.is_some_and(|n| n.parse::<usize>().is_ok()) {
                layers.push(Vec::new());
                continue;
            }
            let declaration = ["pub mod ", "pub(crate) mod ", "mod "].iter().find_map(|p| line.strip_prefix(p));
            if let (Some(name), Some(layer)) = (declaration, layers.last_mut()) {
                layer.push(name.trim_end_matches(';').to_string());
            }
        }
        for layer in &mut layers {
            layer.sort();
        }
        LayerTable(layers)
    }

    fn layer_of(&self, module: &ModPath) -> Option<usize> {
        let top = module.first()?;
        self.0.iter().position(|layer| layer.contains(top))
    }
}

/// A crate's sources and its layer table: the numbered list of modules in its root file.
#[derive(Clone, Debug)]
pub struct CrateLayers {
    pub tree: SourceTree,
    pub table: LayerTable,
}

impl CrateLayers {
    /// Reads `manifest_dir/src` and the layer table of its root file `root` (`lib.rs`,
    /// `main.rs`).
    pub fn read(manifest_dir: &str, root: &str) -> CrateLayers {
        let src = std::path::Path::new(manifest_dir).join("src");
        let root_text = std::fs::read_to_string(src.join(root)).unwrap_or_else(|e| panic!("{root}: {e}"));
        CrateLayers { tree: SourceTree::read(&src), table: LayerTable::declared_in(&root_text) }
    }

    /// Everything wrong with the crate (see [`problems`]).
    pub fn problems(&self) -> Vec<String> {
        problems(&self.tree, &self.table)
    }

    /// What is wrong with a copy of the crate with `code` appended to `module`'s file: a
    /// planted import the checks must catch.
    pub fn problems_with(&self, module: &str, code: &str) -> Vec<String> {
        let mut tree = self.tree.clone();
        tree.plant(module, code);
        problems(&tree, &self.table)
    }
}

/// Everything wrong with `tree` against `layers` (bottom up): modules with no layer,
/// upward imports, and cycles. Empty when it is layered.
pub fn problems(tree: &SourceTree, layers: &LayerTable) -> Vec<String> {
    let graph = tree.graph();
    let mut problems = unlayered(&graph, layers);
    problems.extend(upward_imports(&graph, layers));
    problems.extend(cycles(&graph));
    problems
}

fn show(module: &ModPath) -> String {
    if module.is_empty() {
        "the crate root".to_string()
    } else {
        module.join("::")
    }
}

/// Top-level modules that the layer table does not name.
pub fn unlayered(graph: &Graph, layers: &LayerTable) -> Vec<String> {
    let tops: BTreeSet<&String> = graph.keys().filter_map(|module| module.first()).collect();
    tops.into_iter()
        .filter(|top| !layers.0.iter().any(|layer| layer.contains(top)))
        .map(|top| format!("module `{top}` has no layer"))
        .collect()
}

/// Edges from a file to a file of a higher layer, or to the crate root.
pub fn upward_imports(graph: &Graph, layers: &LayerTable) -> Vec<String> {
    let mut found = Vec::new();
    for (module, targets) in graph {
        let Some(layer) = layers.layer_of(module) else { continue };
        for target in targets {
            let same_top = target.first() == module.first();
            match layers.layer_of(target) {
                _ if same_top => {}
                Some(target_layer) if target_layer <= layer => {}
                Some(target_layer) => found.push(format!(
                    "`{}` (layer {layer}) uses `{}` (layer {target_layer})",
                    show(module),
                    show(target)
                )),
                None => found.push(format!("`{}` uses `{}`, which has no layer", show(module), show(target))),
            }
        }
    }
    found
}

/// One cycle, as a path of files, for each set of files that reach one another. A file's
/// use of its own parent module (or the parent's parent) is left out: a parent module is
/// its children's shared vocabulary and their facade, and reaches down to drive them.
pub fn cycles(graph: &Graph) -> Vec<String> {
    let graph: Graph = graph
        .iter()
        .map(|(module, targets)| {
            let down = targets.iter().filter(|target| !module.starts_with(target)).cloned().collect();
            (module.clone(), down)
        })
        .collect();
    let graph = &graph;
    let mut found = Vec::new();
    let mut done: BTreeSet<&ModPath> = BTreeSet::new();
    for start in graph.keys() {
        if done.contains(start) {
            continue;
        }
        if let Some(cycle) = cycle_through(graph, start) {
            done.extend(cycle.iter().copied());
            let names: Vec<String> = cycle.iter().map(|m| show(m)).collect();
            found.push(format!("cycle: {} -> {}", names.join(" -> "), show(cycle[0])));
        }
    }
    found
}

/// A shortest path from `start` back to itself (breadth first), if there is one.
fn cycle_through<'a>(graph: &'a Graph, start: &'a ModPath) -> Option<Vec<&'a ModPath>> {
    let mut parent: BTreeMap<&ModPath, &ModPath> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(module) = queue.pop_front() {
        for target in graph.get(module).into_iter().flatten() {
            if target == start {
                let mut path = vec![module];
                while let Some(previous) = parent.get(path.last().unwrap()) {
                    path.push(previous);
                }
                path.reverse();
                return Some(path);
            }
            if target != start && !parent.contains_key(target) && graph.contains_key(target) {
                parent.insert(target, module);
                queue.push_back(target);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests;

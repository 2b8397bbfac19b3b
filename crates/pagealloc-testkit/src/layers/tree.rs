//! A crate's source files by module path, and the import graph between them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::lex::{tokens, without_test_module};
use super::paths::{named, Named};

/// A module's path below the crate root (`["pcp", "path"]`); the root is empty.
pub type ModPath = Vec<String>;

/// Each source file's code (test modules cut), by module path. Test-only files (a `tests`
/// module or anything under one) are left out.
#[derive(Clone, Debug, Default)]
pub struct SourceTree {
    files: BTreeMap<ModPath, String>,
}

impl SourceTree {
    /// Reads every `.rs` file under `src`.
    pub fn read(src: &Path) -> SourceTree {
        let mut tree = SourceTree::default();
        let mut pending = vec![src.to_path_buf()];
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
                let path = entry.expect("directory entry").path();
                if path.is_dir() {
                    pending.push(path);
                } else if path.extension().is_some_and(|ext| ext == "rs") {
                    let relative = path.strip_prefix(src).expect("under src").to_string_lossy().replace('\\', "/");
                    let text = std::fs::read_to_string(&path).expect("readable source");
                    tree.add(&relative, &text);
                }
            }
        }
        tree
    }

    /// Files given as (path relative to `src`, text), for tests.
    pub fn from_files(files: &[(&str, &str)]) -> SourceTree {
        let mut tree = SourceTree::default();
        for (path, text) in files {
            tree.add(path, text);
        }
        tree
    }

    /// Adds (or replaces) the file at `relative` (`pcp/path.rs`).
    pub fn add(&mut self, relative: &str, text: &str) {
        if let Some(module) = module_path(relative) {
            self.files.insert(module, without_test_module(text).to_string());
        }
    }

    /// Appends `code` to the file of `module` (`"pcp::path"`): a planted import, for tests
    /// that the checks catch one.
    pub fn plant(&mut self, module: &str, code: &str) {
        let key: ModPath = module.split("::").map(str::to_string).collect();
        let text = self.files.get_mut(&key).unwrap_or_else(|| panic!("no module {module}"));
        text.push('\n');
        text.push_str(code);
    }

    pub fn modules(&self) -> impl Iterator<Item = &ModPath> {
        self.files.keys()
    }

    /// The file graph: each module's edges to the modules whose items it uses.
    pub fn graph(&self) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
        let named: BTreeMap<&ModPath, Named> =
            self.files.iter().map(|(module, code)| (module, named(&tokens(code)))).collect();
        let resolver = Resolver { tree: self, named: &named };
        let mut graph = BTreeMap::new();
        for (module, names) in &named {
            let mut edges = BTreeSet::new();
            for leaf in &names.uses {
                let Some(target) = resolver.absolute(module, &leaf.path).and_then(|p| resolver.resolve(&p, 0)) else {
                    continue;
                };
                // A facade re-exporting what its own submodules define depends on nothing.
                let own_submodule = target.len() > module.len() && target.starts_with(module);
                if !(leaf.reexport && own_submodule) {
                    edges.insert(target);
                }
            }
            for path in &names.paths {
                if let Some(target) = resolver.absolute(module, path).and_then(|p| resolver.resolve(&p, 0)) {
                    edges.insert(target);
                }
            }
            edges.remove(*module);
            graph.insert((*module).clone(), edges);
        }
        graph
    }
}

/// `pcp/path.rs` -> `pcp::path`, `pcp/mod.rs` -> `pcp`, `lib.rs` -> the root; `None` for a
/// test-only file.
fn module_path(relative: &str) -> Option<ModPath> {
    let mut parts: Vec<String> = relative.trim_end_matches(".rs").split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|last| last == "mod") {
        parts.pop();
    }
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
        parts.clear();
    }
    (!parts.iter().any(|part| part == "tests")).then_some(parts)
}

struct Resolver<'a> {
    tree: &'a SourceTree,
    named: &'a BTreeMap<&'a ModPath, Named>,
}

impl Resolver<'_> {
    /// `path` as written in `module`, made absolute; `None` for a path outside the crate.
    fn absolute(&self, module: &ModPath, path: &[String]) -> Option<ModPath> {
        let first = path.first()?;
        let mut base = module.clone();
        let mut rest = path;
        match first.as_str() {
            "crate" => {
                base.clear();
                rest = &path[1..];
            }
            "self" => rest = &path[1..],
            "super" => {
                while rest.first().is_some_and(|segment| segment == "super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
            }
            child => {
                let mut child_path = module.clone();
                child_path.push(child.to_string());
                if !self.tree.files.contains_key(&child_path) {
                    return None;
                }
            }
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The file that defines what `path` names: its longest prefix that is a file, or,
    /// when that file only re-exports the name, the file the re-export names.
    fn resolve(&self, path: &ModPath, depth: usize) -> Option<ModPath> {
        let mut length = path.len();
        while length > 0 && !self.tree.files.contains_key(&path[..length]) {
            length -= 1;
        }
        let file = path[..length].to_vec();
        let Some(name) = path.get(length) else { return Some(file) };
        if depth < 8 {
            if let Some(names) = self.named.get(&file) {
                let reexport = names.uses.iter().find(|leaf| leaf.reexport && leaf.name == *name);
                if let Some(leaf) = reexport {
                    // A re-exported item of another crate is no edge.
                    let mut target = self.absolute(&file, &leaf.path)?;
                    target.extend(path[length + 1..].iter().cloned());
                    return self.resolve(&target, depth + 1);
                }
            }
        }
        Some(file)
    }
}

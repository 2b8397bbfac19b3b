//! The declared MSRV (`rust-version` in the workspace Cargo.toml) covers the standard
//! library APIs the workspace calls: each API below, found anywhere in the crates' sources,
//! must be stable in the declared version. Add an API here when code starts using it.

use std::path::{Path, PathBuf};

/// (method or path as written, the Rust release that stabilised it for the types we use)
const APIS: &[(&str, (u32, u32))] = &[
    (".is_multiple_of(", (1, 87)),
    ("repeat_n(", (1, 82)),
    (".is_none_or(", (1, 82)),
    (".div_ceil(", (1, 73)),
    (".next_multiple_of(", (1, 73)),
    (".isqrt(", (1, 84)),
    ("LazyLock", (1, 80)),
    (".inspect_err(", (1, 76)),
];

fn declared_msrv(workspace: &Path) -> (u32, u32) {
    let manifest = std::fs::read_to_string(workspace.join("Cargo.toml")).unwrap();
    let line = manifest.lines().find(|line| line.starts_with("rust-version")).expect("rust-version declared");
    let version = line.split('"').nth(1).unwrap();
    let mut parts = version.split('.').map(|part| part.parse::<u32>().unwrap());
    (parts.next().unwrap(), parts.next().unwrap())
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() && !path.ends_with("target") {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_declared_msrv_covers_every_std_api_used() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let msrv = declared_msrv(&workspace);
    let mut files = Vec::new();
    rust_files(&workspace.join("crates"), &mut files);
    assert!(files.len() > 50, "scanned {} files", files.len());
    let mut too_new = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for &(api, since) in APIS {
            // This file names the APIs without calling them.
            if since > msrv && text.contains(api) && !file.ends_with("msrv.rs") {
                too_new.push(format!("{} uses {api} (Rust {}.{})", file.display(), since.0, since.1));
            }
        }
    }
    assert!(too_new.is_empty(), "rust-version {}.{} is too old:\n{}", msrv.0, msrv.1, too_new.join("\n"));
}

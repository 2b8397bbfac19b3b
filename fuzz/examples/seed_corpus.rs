//! Writes the seed corpus: `cargo run --example seed_corpus` (in `fuzz/`) replaces every
//! `corpus/<target>/seed-*` file with inputs mirroring the property tests' strategies.
//! Deterministic: the same files every run. Takes an optional output directory (default: this
//! crate's directory).

fn main() {
    let dir = std::env::args_os()
        .nth(1)
        .map_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")), std::path::PathBuf::from);
    let written = pagealloc_fuzz::seeds::write_corpus(&dir).expect("write the seed corpus");
    println!("wrote {written} seed inputs under {}", dir.join("corpus").display());
}

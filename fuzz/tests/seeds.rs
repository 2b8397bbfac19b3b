//! The seed corpus on stable, without libFuzzer: every seed round-trips through `arbitrary`
//! and passes its target's checks, and the committed files are what the generator writes.

use arbitrary::{Arbitrary, Unstructured};
use pagealloc_fuzz::encode::encode_checked;
use pagealloc_fuzz::seeds::{build_description_seeds, operations_seeds};
use pagealloc_fuzz::{description, operations};

#[test]
fn build_description_seeds_pass() {
    for seed in build_description_seeds() {
        encode_checked(&seed);
        description::run(&seed);
    }
}

#[test]
fn operations_seeds_pass() {
    for seed in operations_seeds() {
        encode_checked(&seed);
        operations::run(&seed);
    }
}

/// Every file in `corpus/` (seeds and anything a run added) decodes and passes.
#[test]
fn corpus_files_pass() {
    for (target, run) in [("build_description", run_build as fn(&[u8])), ("operations", run_operations as fn(&[u8]))] {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus").join(target);
        let mut ran = 0;
        for entry in std::fs::read_dir(&dir).expect("corpus directory") {
            let path = entry.expect("entry").path();
            run(&std::fs::read(&path).expect("read"));
            ran += 1;
        }
        assert!(ran > 0, "{} holds no input", dir.display());
    }
}

#[test]
fn committed_seeds_are_the_generated_ones() {
    let dir = std::env::temp_dir().join(format!("pagealloc-fuzz-seeds-{}", std::process::id()));
    pagealloc_fuzz::seeds::write_corpus(&dir).expect("write");
    for target in ["build_description", "operations"] {
        let generated = dir.join("corpus").join(target);
        let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus").join(target);
        for entry in std::fs::read_dir(&generated).expect("generated") {
            let path = entry.expect("entry").path();
            let name = path.file_name().expect("name");
            assert_eq!(
                std::fs::read(committed.join(name)).ok(),
                Some(std::fs::read(&path).expect("read")),
                "{target}/{name:?} differs from the generator's: run `cargo run --example seed_corpus`"
            );
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

/// Decodes `bytes` as `T`, failing on bytes that do not decode: a committed input that no
/// longer decodes tests nothing.
fn decode<T: for<'a> Arbitrary<'a>>(bytes: &[u8]) -> T {
    T::arbitrary_take_rest(Unstructured::new(bytes)).unwrap_or_else(|error| panic!("input does not decode: {error}"))
}

fn run_build(bytes: &[u8]) {
    description::run(&decode::<description::Description>(bytes));
}

fn run_operations(bytes: &[u8]) {
    operations::run(&decode::<operations::Input>(bytes));
}

#[test]
fn compaction_seeds_make_the_migration_client_panic_and_lose_nothing() {
    for seed in pagealloc_fuzz::seeds::compaction_tours() {
        let before = operations::client_panics_on_this_thread();
        operations::run(&seed);
        assert!(operations::client_panics_on_this_thread() > before, "{:?}: the client never panicked", seed.header);
    }
}

/// The `Arenas` machine does what the embedder default's seeds are there for: each node of
/// two CPUs or more is cut into per-CPU arenas, and the model accepts the pieces.
#[test]
fn the_arenas_machine_is_cut_into_arenas() {
    use pagealloc::platform::TestPlatform;
    use pagealloc_fuzz::operations::MachineChoice;
    let policy = pagealloc::presets::find("pagealloc").expect("preset").policy;
    for (nodes, cpus, arenas) in [(0, 2, 2), (1, 4, 4), (1, 2, 2)] {
        let (builder, spec) = MachineChoice::Arenas { nodes, pages: 77 }.build(cpus);
        let allocator = pagealloc::PageAllocator::build(builder.policy(policy), TestPlatform::new(cpus)).unwrap();
        assert_eq!(allocator.zones().len(), arenas, "{nodes} {cpus}");
        assert_eq!(usize::from(allocator.described_nodes()), spec.node_cpus.len());
    }
    let arena_seeds = operations_seeds()
        .into_iter()
        .filter(|seed| matches!(seed.header.machine, MachineChoice::Arenas { .. }))
        .count();
    assert_eq!(arena_seeds, 2);
}

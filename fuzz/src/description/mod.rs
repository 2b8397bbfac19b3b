//! The `build_description` target: any machine description (zones, holes, reservations,
//! nodes, policy, tunables, cache) gives either a `BuildError` that the description really
//! warrants, or an allocator that passes the invariant checker with a census matching an
//! independent frame-by-frame count, and whose every managed frame can be allocated only once
//! and returned.
//!
//! Sizes are bounded so one execution stays fast: a zone spans at most 2^16 frames, unless
//! it is absurd (at least 2^32 - 1 frames), which the builder must reject before it allocates
//! anything. Tunables stay inside the ranges Linux's sysctls accept.
//!
//! One module a concept, so the decoding (the corpus's format) stays apart from the checks:
//! `input` (the decoded types and their encoders), `machine` (what the raw fields mean, and the
//! builder calls), `expect` (the errors a description warrants), `check` (an allocator that
//! built, against the frame-by-frame count).

mod check;
mod expect;
mod input;
mod machine;

pub use expect::expected_errors;
pub use input::{
    Description, HighFraction, Layout, LlcDesc, Mib, Nodes, Override, Pages, PolicyDesc, RangeDesc, TunablesDesc,
    ZoneDesc, MAX_RANGES, MAX_ZONES,
};
pub use machine::{Machine, BASES};

use pagealloc::platform::TestPlatform;
use pagealloc::PageAllocator;

/// The target's body.
pub fn run(description: &Description) {
    let machine = description.machine();
    let expected = expected_errors(&machine);
    let built = PageAllocator::build(description.builder(&machine), TestPlatform::new(machine.cpus));
    let allocator = match built {
        Err(error) => {
            assert!(
                expected.iter().any(|e| expect::same_error(e, &error)),
                "build returned {error:?}; the description warrants {expected:?}\n{machine:?}"
            );
            return;
        }
        Ok(allocator) => allocator,
    };
    assert!(expected.is_empty(), "build succeeded; the description warrants {expected:?}\n{machine:?}");
    check::check_built(&allocator, &machine);
}

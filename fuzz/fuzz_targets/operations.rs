//! Operation sequences on a `TestPlatform` allocator against an ownership model and the
//! invariant checker (see `pagealloc_fuzz::operations`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pagealloc_fuzz::operations::{run, Input};

fuzz_target!(|input: Input| run(&input));

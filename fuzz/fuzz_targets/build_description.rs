//! Machine descriptions: a `BuildError` the description warrants, or an allocator whose
//! checker passes with a census matching an independent frame count (see
//! `pagealloc_fuzz::description`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pagealloc_fuzz::description::{run, Description};

fuzz_target!(|description: Description| run(&description));

//! The lab's generator is the simulator's, so a workload and the faults injected into it
//! draw from one implementation.

pub use pagealloc_sim::rng::SplitMix64;

//! Deterministic many-CPU simulator platform for `pagealloc` (skeleton: the simulator
//! arrives with the simulation issue). It will implement `pagealloc::platform::Platform`
//! so that the very same allocator code runs on N virtual CPUs.
#![no_std]

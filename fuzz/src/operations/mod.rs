//! The `operations` target: operation sequences on a `TestPlatform` allocator (alloc at every
//! order and request, `Layout` and owned allocations, frees, bulk calls, drains, CPU offline,
//! periodic work with an advancing clock, memory pressure, CPU switches, and frees of another
//! allocator's blocks), checked against an independent ownership model:
//! - no frame is handed out twice, and every block lies on managed frames of a zone its
//!   request may use;
//! - a malformed request gets the error it warrants, and changes nothing;
//! - the census's allocated pages equal the model's, and free + allocated + pageset = managed;
//! - a drain or a vmstat pass returns exactly the pages that left the pagesets;
//! - a block of another allocator is `FreeError::ForeignBlock` and changes nothing;
//! - out of memory only when the model says it is plausible (liveness): a request that may
//!   reclaim, below pageblock order, must succeed when some usable zone without high-atomic
//!   reserve has a free aligned block of that order in the model and more free pages than its
//!   min watermark (with boost) plus lowmem reserve;
//! - the invariant checker passes every few operations and at the end, when everything
//!   freed merges back to the boot layout;
//! - the migration client (`client`) refuses every move, so compaction and range
//!   operations run without changing what anyone holds, and panics now and then: after
//!   each panic, caught here, the census still equals the model (nothing compaction held
//!   is lost).
//!
//! Blocks are held as `Block` values and freed with `free_pages`: no raw frame numbers.
//!
//! One module a concept, so the decoding (the corpus's format) stays apart from the checks:
//! `input` (the decoded types, what their raw fields mean, their encoders), `client` (the
//! panicking migration client), `machine` (the
//! chosen machine as builder calls and as the harness describes it), `model` (the ownership
//! model), `observe` (fingerprints and pageset counts), `harness` (the allocator beside the
//! model, and the checks shared by every operation), `step` (each operation).

mod client;
mod harness;
mod input;
mod machine;
mod model;
mod observe;
mod step;

pub use client::client_panics_on_this_thread;
pub use input::{order_of, Header, Input, MachineChoice, Op, Req, MAX_OPS};
pub use machine::{MachineSpec, ZoneSpec};

use harness::Harness;

/// The invariant checker runs after every this many operations (and after each pressure
/// op); long sequences space the checks out to about `MAX_CHECKS`, so that one execution
/// stays fast (each check walks every frame).
const CHECK_EVERY: usize = 16;
const MAX_CHECKS: usize = 32;

/// The target's body.
pub fn run(input: &Input) {
    client::let_client_panics_unwind();
    let mut harness = Harness::new(&input.header);
    let period = CHECK_EVERY.max(input.ops.len() / MAX_CHECKS);
    for (i, &op) in input.ops.iter().enumerate() {
        let stepped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| harness.step(op)));
        if let Err(payload) = stepped {
            if payload.downcast_ref::<client::ClientPanic>().is_none() {
                std::panic::resume_unwind(payload);
            }
            // The operation gave up midway: nothing it held may be lost.
            harness.check(&format!("after the migration client panicked in op {i} {op:?}"));
        }
        if matches!(op, Op::Pressure { .. }) || i % period == period - 1 {
            harness.check(&format!("after op {i} {op:?}"));
        }
    }
    harness.check("after the last op");
    harness.finish();
}

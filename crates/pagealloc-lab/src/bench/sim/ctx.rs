//! What every simulated bench task holds (its thread, block size and count, the shared
//! state and its place at the barrier), and the helpers the tasks share.

use pagealloc::{AllocRequest, Block};

use super::barrier::{Arrival, Ticket};
use super::shared::Shared;
use crate::workload::Env;

/// What every task of a bench holds: its thread index, the block size and count, and the
/// state the CPUs share.
pub(super) struct Ctx {
    pub(super) index: usize,
    pub(super) order: u8,
    pub(super) blocks: usize,
    pub(super) shared: Shared,
    ticket: Ticket,
}

impl Ctx {
    pub(super) fn new(index: usize, order: u8, blocks: usize, shared: Shared) -> Ctx {
        Ctx { index, order, blocks, shared, ticket: Ticket::default() }
    }

    /// One step at the shared barrier: true once released. The CPU that arrives last runs
    /// `last` first, before any CPU goes on.
    pub(super) fn pass_then(&mut self, env: &mut dyn Env, last: impl FnOnce(&Shared, &mut dyn Env)) -> bool {
        match self.shared.barrier.wait(&mut self.ticket, env) {
            Arrival::Waiting => false,
            Arrival::Last => {
                last(&self.shared, env);
                true
            }
            Arrival::Released => true,
        }
    }

    /// One step at the shared barrier: true once released.
    pub(super) fn pass(&mut self, env: &mut dyn Env) -> bool {
        self.pass_then(env, |_, _| {})
    }

    /// One block, as the real bench's `take`: running out of memory ends the bench.
    pub(super) fn take(&self, env: &mut dyn Env) -> Block {
        env.alloc(self.order, AllocRequest::USER_MOVABLE)
            .unwrap_or_else(|| panic!("the simulated bench ran out of memory at order {}", self.order))
    }
}

/// Mean ns per op of a phase that began at `start_ns`.
pub(super) fn per_op_ns(env: &dyn Env, start_ns: u64, ops: usize) -> f64 {
    (env.now_ns() - start_ns) as f64 / ops.max(1) as f64
}

pub(super) fn free_all(held: &mut Vec<Block>, env: &mut dyn Env) {
    for block in held.drain(..) {
        env.free(block);
    }
}

//! The bulk, repeat and rand benches as simulated CPU tasks: the same phases, barriers and
//! timers as the real threads of `bench::workloads`, one allocator call per step so that the
//! simulator orders every call by its CPU's clock.

use pagealloc::{AllocRequest, Block};

use super::barrier::{Arrival, Ticket};
use super::shared::Shared;
use crate::rng::SplitMix64;
use crate::workload::{CpuTask, Env, Step};

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

    /// One step at the shared barrier.
    pub(super) fn wait(&mut self, env: &mut dyn Env) -> Arrival {
        self.shared.barrier.wait(&mut self.ticket, env)
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

fn free_all(held: &mut Vec<Block>, env: &mut dyn Env) {
    for block in held.drain(..) {
        env.free(block);
    }
}

enum BulkStage {
    Start,
    Alloc(u64),
    Free(u64),
}

/// bulk: n blocks allocated then freed last first, 2^order rounds.
pub(super) struct Bulk {
    ctx: Ctx,
    stage: BulkStage,
    round: usize,
    held: Vec<Block>,
    alloc_ns: f64,
    free_ns: f64,
}

impl Bulk {
    pub(super) fn new(ctx: Ctx) -> Bulk {
        let held = Vec::with_capacity(ctx.blocks);
        Bulk { ctx, stage: BulkStage::Start, round: 0, held, alloc_ns: 0.0, free_ns: 0.0 }
    }
}

impl CpuTask for Bulk {
    fn step(&mut self, env: &mut dyn Env) -> Step {
        let (blocks, rounds) = (self.ctx.blocks, 1usize << self.ctx.order);
        match self.stage {
            BulkStage::Start if self.ctx.wait(env) == Arrival::Waiting => {}
            BulkStage::Start => self.stage = BulkStage::Alloc(env.now_ns()),
            BulkStage::Alloc(start_ns) => {
                self.held.push(self.ctx.take(env));
                if self.held.len() == blocks {
                    self.alloc_ns += per_op_ns(env, start_ns, blocks);
                    self.stage = BulkStage::Free(env.now_ns());
                }
            }
            BulkStage::Free(start_ns) => {
                env.free(self.held.pop().expect("a bulk free phase frees what it holds"));
                if self.held.is_empty() {
                    self.free_ns += per_op_ns(env, start_ns, blocks);
                    self.round += 1;
                    if self.round == rounds {
                        let tally = (self.alloc_ns / rounds as f64, self.free_ns / rounds as f64);
                        self.ctx.shared.record(self.ctx.index, Some(tally.0), Some(tally.1), None);
                        return Step::Done;
                    }
                    self.stage = BulkStage::Alloc(env.now_ns());
                }
            }
        }
        Step::Continue
    }

    fn finish(&mut self, env: &mut dyn Env) {
        free_all(&mut self.held, env);
    }
}

enum RepeatStage {
    Hold,
    Start,
    Pairs(u64, usize),
    End,
    Release,
}

/// repeat: n blocks held, then n * 2^order alloc+free pairs of one block.
pub(super) struct Repeat {
    ctx: Ctx,
    stage: RepeatStage,
    held: Vec<Block>,
}

impl Repeat {
    pub(super) fn new(ctx: Ctx) -> Repeat {
        let held = Vec::with_capacity(ctx.blocks);
        Repeat { ctx, stage: RepeatStage::Hold, held }
    }
}

impl CpuTask for Repeat {
    fn step(&mut self, env: &mut dyn Env) -> Step {
        let pairs = self.ctx.blocks << self.ctx.order;
        match self.stage {
            RepeatStage::Hold => {
                self.held.push(self.ctx.take(env));
                if self.held.len() == self.ctx.blocks {
                    self.stage = RepeatStage::Start;
                }
            }
            RepeatStage::Start if self.ctx.wait(env) == Arrival::Waiting => {}
            RepeatStage::Start => self.stage = RepeatStage::Pairs(env.now_ns(), 0),
            RepeatStage::Pairs(start_ns, done) => {
                let block = self.ctx.take(env);
                env.free(block);
                self.stage = RepeatStage::Pairs(start_ns, done + 1);
                if done + 1 == pairs {
                    self.ctx.shared.record(self.ctx.index, None, None, Some(per_op_ns(env, start_ns, pairs)));
                    self.stage = RepeatStage::End;
                }
            }
            RepeatStage::End if self.ctx.wait(env) == Arrival::Waiting => {}
            RepeatStage::End => self.stage = RepeatStage::Release,
            RepeatStage::Release => match self.held.pop() {
                Some(block) => env.free(block),
                None => return Step::Done,
            },
        }
        Step::Continue
    }

    fn finish(&mut self, env: &mut dyn Env) {
        free_all(&mut self.held, env);
    }
}

enum RandStage {
    Start,
    Alloc(u64),
    Shuffle,
    Free(u64, usize),
}

/// rand: n blocks allocated; every thread's blocks shuffled together (the seed's order) and
/// split evenly; each thread frees its share, mostly blocks others allocated.
pub(super) struct Rand {
    ctx: Ctx,
    stage: RandStage,
    seed: u64,
    held: Vec<Block>,
    alloc_ns: f64,
}

impl Rand {
    pub(super) fn new(ctx: Ctx, seed: u64) -> Rand {
        let held = Vec::with_capacity(ctx.blocks);
        Rand { ctx, stage: RandStage::Start, seed, held, alloc_ns: 0.0 }
    }
}

impl CpuTask for Rand {
    fn step(&mut self, env: &mut dyn Env) -> Step {
        match self.stage {
            RandStage::Start if self.ctx.wait(env) == Arrival::Waiting => {}
            RandStage::Start => self.stage = RandStage::Alloc(env.now_ns()),
            RandStage::Alloc(start_ns) => {
                self.held.push(self.ctx.take(env));
                if self.held.len() == self.ctx.blocks {
                    self.alloc_ns = per_op_ns(env, start_ns, self.ctx.blocks);
                    self.ctx.shared.deposit(self.ctx.index, core::mem::take(&mut self.held));
                    self.stage = RandStage::Shuffle;
                }
            }
            RandStage::Shuffle => match self.ctx.wait(env) {
                Arrival::Waiting => {}
                arrival => {
                    if arrival == Arrival::Last {
                        self.ctx.shared.shuffle_deposits(&mut SplitMix64::new(self.seed));
                    }
                    self.held = self.ctx.shared.withdraw(self.ctx.index);
                    // Freed from the front, as the real bench walks its share.
                    self.held.reverse();
                    self.stage = RandStage::Free(env.now_ns(), self.held.len());
                }
            },
            RandStage::Free(start_ns, share) => match self.held.pop() {
                Some(block) => env.free(block),
                None => {
                    self.ctx.shared.record(
                        self.ctx.index,
                        Some(self.alloc_ns),
                        Some(per_op_ns(env, start_ns, share)),
                        None,
                    );
                    return Step::Done;
                }
            },
        }
        Step::Continue
    }

    fn finish(&mut self, env: &mut dyn Env) {
        free_all(&mut self.held, env);
    }
}

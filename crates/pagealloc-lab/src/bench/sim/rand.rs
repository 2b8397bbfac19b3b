//! rand as a simulated CPU task: n blocks allocated, every thread's blocks shuffled
//! together and split evenly, each thread's share freed one per step.

use pagealloc::Block;

use super::ctx::{free_all, per_op_ns, Ctx};
use crate::rng::SplitMix64;
use crate::workload::{CpuTask, Env, Step};

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
            RandStage::Start if !self.ctx.pass(env) => {}
            RandStage::Start => self.stage = RandStage::Alloc(env.now_ns()),
            RandStage::Alloc(start_ns) => {
                self.held.push(self.ctx.take(env));
                if self.held.len() == self.ctx.blocks {
                    self.alloc_ns = per_op_ns(env, start_ns, self.ctx.blocks);
                    self.ctx.shared.deposit(self.ctx.index, core::mem::take(&mut self.held));
                    self.stage = RandStage::Shuffle;
                }
            }
            RandStage::Shuffle => {
                let seed = self.seed;
                if self.ctx.pass_then(env, |shared, _| shared.shuffle_deposits(&mut SplitMix64::new(seed))) {
                    self.held = self.ctx.shared.withdraw(self.ctx.index);
                    // Freed from the front, as the real bench walks its share.
                    self.held.reverse();
                    self.stage = RandStage::Free(env.now_ns(), self.held.len());
                }
            }
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

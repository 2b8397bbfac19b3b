//! bulk as a simulated CPU task: n blocks allocated then freed last first, 2^order rounds,
//! one allocator call per step, each phase started at the barrier.

use pagealloc::Block;

use super::ctx::{free_all, per_op_ns, Ctx};
use crate::workload::{CpuTask, Env, Step};

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
            BulkStage::Start if !self.ctx.pass(env) => {}
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

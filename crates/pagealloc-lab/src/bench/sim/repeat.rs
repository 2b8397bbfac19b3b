//! repeat as a simulated CPU task: n blocks held, then n * 2^order alloc+free pairs of one
//! block, one pair per step.

use pagealloc::Block;

use super::ctx::{free_all, per_op_ns, Ctx};
use crate::workload::{CpuTask, Env, Step};

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
            RepeatStage::Start if !self.ctx.pass(env) => {}
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
            RepeatStage::End if !self.ctx.pass(env) => {}
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

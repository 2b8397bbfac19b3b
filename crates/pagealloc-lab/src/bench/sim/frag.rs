//! The frag bench as simulated CPU tasks: every frame allocated on all CPUs, shuffled, half
//! freed; then rounds in which each CPU frees a random held frame and allocates another
//! n/10 times, the share of memory free as whole 2 MiB blocks read after each round.

use pagealloc::{AllocRequest, Block};

use super::ctx::Ctx;
use super::shared::Shared;
use crate::rng::SplitMix64;
use crate::workload::{CpuTask, Env, Step};

enum Stage {
    Start,
    Fill,
    Scatter,
    Free(usize),
    Alloc(usize),
    RoundEnd,
}

pub(super) struct Frag {
    ctx: Ctx,
    stage: Stage,
    seed: u64,
    rounds: usize,
    round: usize,
    rng: SplitMix64,
    held: Vec<Block>,
    /// This round's ns in frees and allocations, and their sums of per-op means over rounds.
    round_ns: (u64, u64),
    sum_ns: (f64, f64),
}

impl Frag {
    pub(super) fn new(ctx: Ctx, rounds: usize, seed: u64) -> Frag {
        let rng = Self::round_rng(seed, 0, ctx.index);
        let (held, stage) = (Vec::new(), Stage::Start);
        Frag { ctx, stage, seed, rounds, round: 0, rng, held, round_ns: (0, 0), sum_ns: (0.0, 0.0) }
    }

    /// The real bench's generator for a thread's round.
    fn round_rng(seed: u64, round: usize, index: usize) -> SplitMix64 {
        SplitMix64::new(seed ^ ((round as u64) << 32) ^ index as u64)
    }

    fn churn_ops(&self) -> usize {
        (self.ctx.blocks / 10).max(1)
    }

    /// The last CPU at the fill's barrier: the span noted, everything shuffled, the first
    /// half freed here, the rest split among the threads.
    fn scatter(shared: &Shared, seed: u64, env: &mut dyn Env) {
        shared.note_span();
        for block in shared.shuffle_deposits_keeping(&mut SplitMix64::new(seed), |all| all / 2) {
            env.free(block);
        }
    }

    /// The last CPU at a round's end: the round's figures noted.
    fn note_round(shared: &Shared, env: &mut dyn Env) {
        shared.note_round(env.free_huge_pct().expect("the simulator sees its allocator"));
    }

    /// Ends a round's churn: the per-op means added, the held frames shown for the round's
    /// packing count.
    fn end_churn(&mut self) {
        let ops = self.churn_ops() as f64;
        self.sum_ns.0 += self.round_ns.0 as f64 / ops;
        self.sum_ns.1 += self.round_ns.1 as f64 / ops;
        self.round_ns = (0, 0);
        self.ctx.shared.deposit_pfns(self.ctx.index, self.held.iter().map(Block::pfn).collect());
        self.stage = Stage::RoundEnd;
    }

    fn timed<T>(env: &mut dyn Env, total_ns: &mut u64, call: impl FnOnce(&mut dyn Env) -> T) -> T {
        let start_ns = env.now_ns();
        let result = call(env);
        *total_ns += env.now_ns() - start_ns;
        result
    }
}

impl CpuTask for Frag {
    fn step(&mut self, env: &mut dyn Env) -> Step {
        match self.stage {
            Stage::Start if !self.ctx.pass(env) => {}
            Stage::Start => self.stage = Stage::Fill,
            Stage::Fill => match env.alloc(0, AllocRequest::USER_MOVABLE) {
                Some(block) => self.held.push(block),
                None => {
                    self.ctx.shared.deposit(self.ctx.index, core::mem::take(&mut self.held));
                    self.stage = Stage::Scatter;
                }
            },
            Stage::Scatter => {
                let seed = self.seed;
                if self.ctx.pass_then(env, |shared, env| Self::scatter(shared, seed, env)) {
                    self.held = self.ctx.shared.withdraw(self.ctx.index);
                    self.stage = Stage::Free(0);
                }
            }
            Stage::Free(done) if done == self.churn_ops() || self.held.is_empty() => self.end_churn(),
            Stage::Free(done) => {
                let victim = self.rng.below(self.held.len() as u64) as usize;
                let block = self.held.swap_remove(victim);
                Self::timed(env, &mut self.round_ns.1, |env| env.free(block));
                self.stage = Stage::Alloc(done);
            }
            Stage::Alloc(done) => {
                let block = Self::timed(env, &mut self.round_ns.0, |env| env.alloc(0, AllocRequest::USER_MOVABLE));
                self.held.extend(block);
                self.stage = Stage::Free(done + 1);
            }
            Stage::RoundEnd if !self.ctx.pass_then(env, Self::note_round) => {}
            Stage::RoundEnd => {
                self.round += 1;
                if self.round == self.rounds {
                    let rounds = self.rounds as f64;
                    let (alloc_ns, free_ns) = (self.sum_ns.0 / rounds, self.sum_ns.1 / rounds);
                    self.ctx.shared.record(self.ctx.index, Some(alloc_ns), Some(free_ns), None);
                    return Step::Done;
                }
                self.rng = Self::round_rng(self.seed, self.round, self.ctx.index);
                self.stage = Stage::Free(0);
            }
        }
        Step::Continue
    }

    fn finish(&mut self, env: &mut dyn Env) {
        for block in self.held.drain(..) {
            env.free(block);
        }
    }
}

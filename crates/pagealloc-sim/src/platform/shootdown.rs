//! TLB shootdowns: the running CPU flushes a range of an address space that other CPUs run,
//! so it interrupts each of them (an IPI, whose handler flushes their TLB) and waits for
//! their answers. Both sides lose time: the caller its wait, each target its handler.

use super::slots::SimHandle;

impl SimHandle {
    /// A shootdown by the running CPU to `targets` (CPUs running the address space, the
    /// caller excluded): the caller is charged `caller_ns`, each target's clock moves on by
    /// `target_ns`, whatever it was doing.
    pub fn tlb_shootdown(&self, targets: &[usize], caller_ns: u64, target_ns: u64) {
        self.with(|state| {
            if state.observing {
                return;
            }
            let cpu = state.current;
            debug_assert!(!targets.contains(&cpu), "a CPU does not interrupt itself");
            state.clocks_ns[cpu] += caller_ns;
            for &target in targets {
                state.clocks_ns[target] += target_ns;
            }
            state.stats.tlb_shootdowns += 1;
            state.stats.tlb_shootdown_ipis += targets.len() as u64;
        });
    }
}

#[cfg(test)]
mod tests {
    use crate::platform::test_machine as machine;

    #[test]
    fn a_shootdown_charges_the_caller_and_every_target() {
        let platform = machine(4);
        let sim = platform.handle();
        sim.set_cpu(1);
        sim.tlb_shootdown(&[0, 3], 5_000, 1_500);
        assert_eq!((0..4).map(|cpu| sim.clock_ns(cpu)).collect::<Vec<_>>(), [1_500, 5_000, 0, 1_500]);
        sim.observe(|| sim.tlb_shootdown(&[0], 1, 1));
        let stats = sim.stats();
        assert_eq!((stats.tlb_shootdowns, stats.tlb_shootdown_ipis), (1, 2), "an observer's is not one");
    }
}

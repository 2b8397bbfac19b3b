//! The tests' one pseudo-random generator, xorshift64: a fixed sequence for a seed, so a
//! test is the same on every run. Unit tests use it as `crate::test_rng::Rng`; the
//! integration tests include this file from `tests/common.rs`.

/// xorshift64 over its state (a nonzero seed; zero stays zero).
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// In 0..bound (bound > 0), by remainder: enough for test inputs.
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }
}

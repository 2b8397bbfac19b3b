//! The replay's hasher for maps keyed by frame number.

use std::hash::Hasher;

/// Frame numbers spread well under a multiply; SipHash would cost more than the replay.
#[derive(Default)]
pub(super) struct PfnHasher(u64);

impl Hasher for PfnHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, value: u64) {
        self.0 = value.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

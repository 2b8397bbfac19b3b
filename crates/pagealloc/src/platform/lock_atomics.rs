//! The atomics the lock algorithms run on, as traits: core's atomics in every build, and
//! loom's under `cfg(loom)`, so the loom models in `tests/loom_locks.rs` run the real
//! `TicketLock` and `TasLock` algorithms rather than stand-ins.

use core::sync::atomic::Ordering;

/// A 32-bit atomic word, for the ticket lock and the hand-over stack (`remote_frees`).
pub trait AtomicWord {
    fn new_word(value: u32) -> Self;
    fn load(&self, order: Ordering) -> u32;
    fn store(&self, value: u32, order: Ordering);
    fn fetch_add(&self, value: u32, order: Ordering) -> u32;
    fn swap(&self, value: u32, order: Ordering) -> u32;
    fn compare_exchange(&self, current: u32, new: u32, success: Ordering, failure: Ordering) -> Result<u32, u32>;
    /// One turn of a spin-wait (a pause instruction; a yield to the model under loom).
    fn spin_once() {
        core::hint::spin_loop();
    }
}

/// An atomic flag, for the test-and-set lock.
pub trait AtomicFlag {
    fn new_flag(value: bool) -> Self;
    fn load(&self, order: Ordering) -> bool;
    fn store(&self, value: bool, order: Ordering);
    fn swap(&self, value: bool, order: Ordering) -> bool;
    /// One turn of a spin-wait (a pause instruction; a yield to the model under loom).
    fn spin_once() {
        core::hint::spin_loop();
    }
}

macro_rules! word_impl {
    ($atomic:ty $(, $spin:expr)?) => {
        impl AtomicWord for $atomic {
            fn new_word(value: u32) -> Self {
                <$atomic>::new(value)
            }
            #[inline(always)]
            fn load(&self, order: Ordering) -> u32 {
                <$atomic>::load(self, order)
            }
            #[inline(always)]
            fn store(&self, value: u32, order: Ordering) {
                <$atomic>::store(self, value, order)
            }
            #[inline(always)]
            fn fetch_add(&self, value: u32, order: Ordering) -> u32 {
                <$atomic>::fetch_add(self, value, order)
            }
            #[inline(always)]
            fn swap(&self, value: u32, order: Ordering) -> u32 {
                <$atomic>::swap(self, value, order)
            }
            #[inline(always)]
            fn compare_exchange(&self, current: u32, new: u32, success: Ordering, failure: Ordering) -> Result<u32, u32> {
                <$atomic>::compare_exchange(self, current, new, success, failure)
            }
            $(fn spin_once() {
                $spin
            })?
        }
    };
}

macro_rules! flag_impl {
    ($atomic:ty $(, $spin:expr)?) => {
        impl AtomicFlag for $atomic {
            fn new_flag(value: bool) -> Self {
                <$atomic>::new(value)
            }
            #[inline(always)]
            fn load(&self, order: Ordering) -> bool {
                <$atomic>::load(self, order)
            }
            #[inline(always)]
            fn store(&self, value: bool, order: Ordering) {
                <$atomic>::store(self, value, order)
            }
            #[inline(always)]
            fn swap(&self, value: bool, order: Ordering) -> bool {
                <$atomic>::swap(self, value, order)
            }
            $(fn spin_once() {
                $spin
            })?
        }
    };
}

word_impl!(core::sync::atomic::AtomicU32);
flag_impl!(core::sync::atomic::AtomicBool);
#[cfg(loom)]
word_impl!(loom::sync::atomic::AtomicU32, loom::thread::yield_now());
#[cfg(loom)]
flag_impl!(loom::sync::atomic::AtomicBool, loom::thread::yield_now());

/// Implements `lock_api::RawMutex` for a newtype over one of the algorithms above by
/// forwarding to its `lock`, `try_lock`, `unlock` and `is_locked`. The caller writes the
/// `// SAFETY:` argument for its algorithm at the invocation.
macro_rules! forward_raw_mutex {
    ($lock:ident, $init:expr) => {
        unsafe impl lock_api::RawMutex for $lock {
            #[allow(clippy::declare_interior_mutable_const)]
            const INIT: $lock = $init;

            type GuardMarker = lock_api::GuardSend;

            #[inline]
            fn lock(&self) {
                self.0.lock()
            }

            #[inline]
            fn try_lock(&self) -> bool {
                self.0.try_lock()
            }

            #[inline]
            unsafe fn unlock(&self) {
                // SAFETY: lock_api calls unlock only for the holder.
                unsafe { self.0.unlock() }
            }

            fn is_locked(&self) -> bool {
                self.0.is_locked()
            }
        }
    };
}
pub(super) use forward_raw_mutex;

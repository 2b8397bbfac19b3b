//! A mutex that reports acquire/release to the platform's cost hooks (lock_api underneath).

use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::platform::{LockId, Platform};

/// Acquisitions and time spent waiting, as seen by one lock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockStats {
    pub acquisitions: u64,
    /// Acquisitions that found the lock held.
    pub contended: u64,
    pub wait_ns: u64,
}

impl core::ops::AddAssign for LockStats {
    fn add_assign(&mut self, other: LockStats) {
        self.acquisitions += other.acquisitions;
        self.contended += other.contended;
        self.wait_ns += other.wait_ns;
    }
}

/// A mutex over raw lock `R` (the platform's `RawLock` by default) that reports to the
/// platform's hooks.
pub struct PlatformMutex<P: Platform, T, R: lock_api::RawMutex = <P as Platform>::RawLock> {
    id: LockId,
    inner: lock_api::Mutex<R, T>,
    _platform: core::marker::PhantomData<fn(&P)>,
    // Updated only while holding the lock, so plain loads and stores keep them exact.
    acquisitions: AtomicU64,
    contended: AtomicU64,
    wait_ns: AtomicU64,
}

impl<P: Platform, T, R: lock_api::RawMutex> PlatformMutex<P, T, R> {
    pub fn new(id: LockId, value: T) -> Self {
        PlatformMutex {
            id,
            inner: lock_api::Mutex::new(value),
            _platform: core::marker::PhantomData,
            acquisitions: AtomicU64::new(0),
            contended: AtomicU64::new(0),
            wait_ns: AtomicU64::new(0),
        }
    }

    pub fn id(&self) -> LockId {
        self.id
    }

    /// Blocking acquire (mirrors spin_lock()). A real wait is timed only when the lock was
    /// found held, so the uncontended path reads no clock.
    #[inline]
    pub fn lock<'a>(&'a self, platform: &'a P) -> PlatformGuard<'a, P, T, R> {
        let simulated_wait_ns = platform.lock_acquire(self.id);
        let (guard, real_wait_ns) = match self.inner.try_lock() {
            Some(guard) => (guard, None),
            None => {
                let start_ns = platform.now_ns();
                let guard = self.inner.lock();
                (guard, Some(platform.now_ns().saturating_sub(start_ns)))
            }
        };
        let wait_ns = simulated_wait_ns + real_wait_ns.unwrap_or(0);
        debug_assert!(self.inner.is_locked(), "a guard without its lock");
        let acquisitions = self.acquisitions.load(Relaxed) + 1;
        self.acquisitions.store(acquisitions, Relaxed);
        if real_wait_ns.is_some() || simulated_wait_ns > 0 {
            let contended = self.contended.load(Relaxed) + 1;
            self.contended.store(contended, Relaxed);
            self.wait_ns.store(self.wait_ns.load(Relaxed) + wait_ns, Relaxed);
            // Stores under the lock: no other holder can have moved the counts between.
            debug_assert!(contended <= acquisitions, "{contended} contended of {acquisitions}");
        }
        PlatformGuard { guard, platform, id: self.id }
    }

    /// Lock statistics (racy snapshot).
    pub fn stats(&self) -> LockStats {
        LockStats {
            acquisitions: self.acquisitions.load(Relaxed),
            contended: self.contended.load(Relaxed),
            wait_ns: self.wait_ns.load(Relaxed),
        }
    }

    /// Non-blocking acquire (mirrors spin_trylock()); the platform may veto it. Not counted
    /// in `stats` (it is the fast path; callers count what they need).
    #[inline]
    pub fn try_lock<'a>(&'a self, platform: &'a P) -> Option<PlatformGuard<'a, P, T, R>> {
        let guard = self.inner.try_lock()?;
        if !platform.lock_try_acquire(self.id) {
            return None;
        }
        debug_assert!(self.inner.is_locked(), "a guard without its lock");
        Some(PlatformGuard { guard, platform, id: self.id })
    }

    /// Exclusive access without locking (construction, `&mut self` reconfiguration).
    pub fn get_mut(&mut self) -> &mut T {
        self.inner.get_mut()
    }
}

pub struct PlatformGuard<'a, P: Platform, T, R: lock_api::RawMutex = <P as Platform>::RawLock> {
    guard: lock_api::MutexGuard<'a, R, T>,
    platform: &'a P,
    id: LockId,
}

impl<P: Platform, T, R: lock_api::RawMutex> Deref for PlatformGuard<'_, P, T, R> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<P: Platform, T, R: lock_api::RawMutex> DerefMut for PlatformGuard<'_, P, T, R> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

impl<P: Platform, T, R: lock_api::RawMutex> Drop for PlatformGuard<'_, P, T, R> {
    #[inline]
    fn drop(&mut self) {
        // The raw lock is released right after this body, when `guard` drops; reporting first
        // is harmless because the report only timestamps the release.
        debug_assert!(lock_api::MutexGuard::mutex(&self.guard).is_locked(), "released twice");
        self.platform.lock_release(self.id);
    }
}

/// Puts a value on cache lines of its own, so writes to it do not invalidate neighbours
/// that other CPUs read.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct CacheAligned<T>(pub T);

impl<T> Deref for CacheAligned<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for CacheAligned<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

impl<P: Platform, T, R: lock_api::RawMutex> core::fmt::Debug for PlatformMutex<P, T, R> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PlatformMutex").field("id", &self.id).field("stats", &self.stats()).finish_non_exhaustive()
    }
}

impl<P: Platform, T: core::fmt::Debug, R: lock_api::RawMutex> core::fmt::Debug for PlatformGuard<'_, P, T, R> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PlatformGuard").field("id", &self.id).field("value", &*self.guard).finish()
    }
}

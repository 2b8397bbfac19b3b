//! A mutex that reports acquire/release to the platform's cost hooks (lock_api underneath).

use core::ops::{Deref, DerefMut};

use crate::platform::{LockId, Platform};

pub struct PlatformMutex<P: Platform, T> {
    id: LockId,
    inner: lock_api::Mutex<P::RawLock, T>,
}

impl<P: Platform, T> PlatformMutex<P, T> {
    pub fn new(id: LockId, value: T) -> Self {
        PlatformMutex { id, inner: lock_api::Mutex::new(value) }
    }

    pub fn id(&self) -> LockId {
        self.id
    }

    /// Blocking acquire (mirrors spin_lock()).
    #[inline]
    pub fn lock<'a>(&'a self, platform: &'a P) -> PlatformGuard<'a, P, T> {
        platform.lock_acquire(self.id);
        PlatformGuard { guard: self.inner.lock(), platform, id: self.id }
    }

    /// Non-blocking acquire (mirrors spin_trylock()); the platform may veto it.
    #[inline]
    pub fn try_lock<'a>(&'a self, platform: &'a P) -> Option<PlatformGuard<'a, P, T>> {
        let guard = self.inner.try_lock()?;
        if !platform.lock_try_acquire(self.id) {
            return None;
        }
        Some(PlatformGuard { guard, platform, id: self.id })
    }

    /// Exclusive access without locking (construction, `&mut self` reconfiguration).
    pub fn get_mut(&mut self) -> &mut T {
        self.inner.get_mut()
    }
}

pub struct PlatformGuard<'a, P: Platform, T> {
    guard: lock_api::MutexGuard<'a, P::RawLock, T>,
    platform: &'a P,
    id: LockId,
}

impl<P: Platform, T> Deref for PlatformGuard<'_, P, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<P: Platform, T> DerefMut for PlatformGuard<'_, P, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

impl<P: Platform, T> Drop for PlatformGuard<'_, P, T> {
    #[inline]
    fn drop(&mut self) {
        // The raw lock is released right after this body, when `guard` drops; reporting first
        // is harmless because the report only timestamps the release.
        self.platform.lock_release(self.id);
    }
}

//! A migration client that panics now and then: every `every`-th call to the page cache's
//! migrate panics before it moves anything, as an embedder's buggy client might. The
//! allocator must give back every page the compaction run or range operation held when the
//! panic unwinds through it; the worker catches the panic and goes on, and the checks
//! then find nothing lost. Workers turn the panics off around the call that hands back
//! blocks as it goes (bulk allocation), whose blocks a panic would strand in the worker's
//! own hands, not the allocator's.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use pagealloc::allocator::{Migrate, MigrateSource};
use pagealloc::platform::StdPlatform;
use pagealloc::{Block, PageAllocator};

use super::cache::PageCache;

/// The payload of a deliberate panic, told apart from a real one.
pub struct ClientPanic;

thread_local! {
    static PANICS_ALLOWED: Cell<bool> = const { Cell::new(true) };
}

/// Runs `f` with the client's panics off on this thread.
pub fn without_client_panics<R>(f: impl FnOnce() -> R) -> R {
    let before = PANICS_ALLOWED.with(|allowed| allowed.replace(false));
    let result = f();
    PANICS_ALLOWED.with(|allowed| allowed.set(before));
    result
}

pub struct PanickyClient {
    cache: Arc<PageCache>,
    every: u64,
    calls: AtomicU64,
    panics: AtomicU64,
}

impl PanickyClient {
    /// The page cache's client, panicking on every `every`-th call (0: never).
    pub fn new(cache: Arc<PageCache>, every: u64) -> PanickyClient {
        PanickyClient { cache, every, calls: AtomicU64::new(0), panics: AtomicU64::new(0) }
    }

    pub fn panics(&self) -> u64 {
        self.panics.load(Ordering::Relaxed)
    }
}

impl Migrate<StdPlatform> for PanickyClient {
    fn migrate(
        &self,
        allocator: &PageAllocator<StdPlatform>,
        source: MigrateSource,
        target: Block,
    ) -> Result<Block, Block> {
        let call = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        if self.every != 0 && call.is_multiple_of(self.every) && PANICS_ALLOWED.with(Cell::get) {
            self.panics.fetch_add(1, Ordering::Relaxed);
            std::panic::panic_any(ClientPanic);
        }
        self.cache.migrate(allocator, source, target)
    }
}

/// Keeps the deliberate panics off stderr; every other panic is printed as before.
pub fn quiet_client_panics() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info.payload().downcast_ref::<ClientPanic>().is_none() {
            default_hook(info);
        }
    }));
}

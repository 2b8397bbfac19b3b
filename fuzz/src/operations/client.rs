//! The harness's migration client: it owns nothing it could move, so every move is refused,
//! but compaction runs for real (free pages isolated into its pool, targets split off and
//! handed over, runs ended and deferred) and range operations reach it; and it panics now
//! and then, on its 20th, 40th, 80th, ... call, as an embedder's buggy client might. The
//! panic unwinds through the allocator to `run`, which catches it and checks the census
//! against the model: every page compaction held comes back.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Once;

use pagealloc::allocator::{Migrate, MigrateSource};
use pagealloc::platform::TestPlatform;
use pagealloc::{Block, PageAllocator};

/// The first panic comes on this call; each later one on twice the last's call number.
const FIRST_PANIC_CALL: u64 = 20;

/// The payload of the client's panics, told apart from a failed check.
pub struct ClientPanic;

thread_local! {
    static PANICS_ALLOWED: Cell<bool> = const { Cell::new(true) };
    static PANICS_THROWN: Cell<u64> = const { Cell::new(0) };
}

/// The client's panics on this thread so far (a test's inputs run on its own thread).
pub fn client_panics_on_this_thread() -> u64 {
    PANICS_THROWN.with(Cell::get)
}

/// Runs `f` with the client's panics off: around calls that hand blocks over as they go
/// (`alloc_bulk`), whose blocks a panic would strand in the harness's own frame.
pub fn without_client_panics<R>(f: impl FnOnce() -> R) -> R {
    let before = PANICS_ALLOWED.with(|allowed| allowed.replace(false));
    let result = f();
    PANICS_ALLOWED.with(|allowed| allowed.set(before));
    result
}

pub struct PanickyClient {
    calls: AtomicU64,
    next_panic: AtomicU64,
}

impl PanickyClient {
    pub fn new() -> PanickyClient {
        PanickyClient { calls: AtomicU64::new(0), next_panic: AtomicU64::new(FIRST_PANIC_CALL) }
    }
}

impl Migrate<TestPlatform> for PanickyClient {
    fn migrate(&self, _: &PageAllocator<TestPlatform>, _: MigrateSource, target: Block) -> Result<Block, Block> {
        let call = self.calls.fetch_add(1, Relaxed) + 1;
        if call >= self.next_panic.load(Relaxed) && PANICS_ALLOWED.with(Cell::get) {
            self.next_panic.store(call * 2, Relaxed);
            PANICS_THROWN.with(|thrown| thrown.set(thrown.get() + 1));
            std::panic::panic_any(ClientPanic);
        }
        Err(target)
    }
}

/// Lets the client's panics unwind: the hook in place (libFuzzer's aborts the process on
/// any panic, to report it) is kept for every other panic.
pub fn let_client_panics_unwind() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<ClientPanic>().is_none() {
                previous(info);
            }
        }));
    });
}

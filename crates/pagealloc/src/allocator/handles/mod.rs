//! The allocator's public surface beyond allocation, freeing, composition and views, one
//! handle per concept: each borrows the allocator and names what a caller does with it.
//! - [`Background`]: the periodic and background work (vmstat passes, kswapd, kcompactd);
//! - [`Pagesets`]: explicit pageset drains, and a pageset's high set from outside;
//! - [`Hotplug`]: CPUs going offline, memory added, offlined and onlined;
//! - [`Counters`]: the counters /proc/vmstat and /proc/zoneinfo show.

mod background;
mod counters;
mod hotplug;
mod pagesets;

pub use background::Background;
pub use counters::Counters;
pub use hotplug::Hotplug;
pub use pagesets::Pagesets;

/// Debug for a handle: its type and the allocator it borrows (by id).
macro_rules! debug_by_allocator_id {
    ($($handle:ident),*) => {
        $(impl<P: crate::platform::Platform> core::fmt::Debug for $handle<'_, P> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_struct(stringify!($handle)).field("allocator", &self.allocator.id()).finish()
            }
        })*
    };
}

debug_by_allocator_id!(Background, Counters, Hotplug, Pagesets);

//! Why pages left a pageset: the causes a drain is counted under (the pageset's
//! `drained_pages` by cause, and the `mm_page_pcpu_drain` events).

/// Why pages left a pageset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DrainCause {
    /// A free pushed count over high.
    High = 0,
    /// A free_high free.
    FreeHigh = 1,
    /// Periodic decay of high.
    Decay = 2,
    /// drain_local_pages / drain_all_pages.
    Explicit = 3,
    /// A remote node's pageset expired.
    RemoteExpire = 4,
    /// The CPU went offline.
    CpuOffline = 5,
}

impl DrainCause {
    pub const COUNT: usize = 6;
    pub const ALL: [DrainCause; DrainCause::COUNT] = [
        DrainCause::High,
        DrainCause::FreeHigh,
        DrainCause::Decay,
        DrainCause::Explicit,
        DrainCause::RemoteExpire,
        DrainCause::CpuOffline,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DrainCause::High => "high",
            DrainCause::FreeHigh => "free_high",
            DrainCause::Decay => "decay",
            DrainCause::Explicit => "drain",
            DrainCause::RemoteExpire => "remote_expire",
            DrainCause::CpuOffline => "cpu_offline",
        }
    }
}

//! Compaction counters, as /proc/vmstat names them (compact_stall, compact_fail,
//! compact_success, compact_migrate_scanned, compact_free_scanned, compact_isolated,
//! pgmigrate_success, pgmigrate_fail, compact_daemon_*).

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// What one run did; added to the node's counters when it ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompactRun {
    /// Pages the migration scanner walked over.
    pub migrate_scanned_pages: u64,
    /// Pages the free scanner walked over.
    pub free_scanned_pages: u64,
    /// Pages taken off the free lists as targets, plus pages collected to move.
    pub isolated_pages: u64,
    /// Pages the client moved.
    pub migrated_pages: u64,
    /// Pages the client refused to move.
    pub failed_pages: u64,
}

/// A node's compaction counters.
#[derive(Debug, Default)]
pub struct CompactCounters {
    stall: AtomicU64,
    fail: AtomicU64,
    success: AtomicU64,
    migrate_scanned: AtomicU64,
    free_scanned: AtomicU64,
    isolated: AtomicU64,
    migrated: AtomicU64,
    migrate_failed: AtomicU64,
    daemon_wake: AtomicU64,
    daemon_migrate_scanned: AtomicU64,
    daemon_free_scanned: AtomicU64,
    proactive_runs: AtomicU64,
}

/// A snapshot of [`CompactCounters`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompactStats {
    /// Direct compactions entered.
    pub compact_stall: u64,
    /// Direct compactions after which the allocation still failed.
    pub compact_fail: u64,
    /// Direct compactions after which the allocation succeeded.
    pub compact_success: u64,
    pub compact_migrate_scanned: u64,
    pub compact_free_scanned: u64,
    pub compact_isolated: u64,
    pub pgmigrate_success: u64,
    pub pgmigrate_fail: u64,
    /// kcompactd wake-ups (for an order, or for proactive compaction).
    pub compact_daemon_wake: u64,
    pub compact_daemon_migrate_scanned: u64,
    pub compact_daemon_free_scanned: u64,
    /// Proactive compaction runs (one per zone compacted).
    pub compact_proactive_runs: u64,
}

impl CompactCounters {
    /// Adds a finished run; `daemon` for kcompactd's runs (which also count as daemon scans).
    pub(crate) fn add_run(&self, run: &CompactRun, daemon: bool) {
        self.migrate_scanned.fetch_add(run.migrate_scanned_pages, Relaxed);
        self.free_scanned.fetch_add(run.free_scanned_pages, Relaxed);
        self.isolated.fetch_add(run.isolated_pages, Relaxed);
        self.migrated.fetch_add(run.migrated_pages, Relaxed);
        self.migrate_failed.fetch_add(run.failed_pages, Relaxed);
        if daemon {
            self.daemon_migrate_scanned.fetch_add(run.migrate_scanned_pages, Relaxed);
            self.daemon_free_scanned.fetch_add(run.free_scanned_pages, Relaxed);
        }
    }

    pub(crate) fn count_stall(&self) {
        self.stall.fetch_add(1, Relaxed);
    }

    /// The outcome of a direct compaction: did the allocation that followed succeed?
    pub(crate) fn count_outcome(&self, allocated: bool) {
        let counter = if allocated { &self.success } else { &self.fail };
        counter.fetch_add(1, Relaxed);
    }

    pub(crate) fn count_daemon_wake(&self) {
        self.daemon_wake.fetch_add(1, Relaxed);
    }

    pub(crate) fn count_proactive_run(&self) {
        self.proactive_runs.fetch_add(1, Relaxed);
    }

    pub fn snapshot(&self) -> CompactStats {
        CompactStats {
            compact_stall: self.stall.load(Relaxed),
            compact_fail: self.fail.load(Relaxed),
            compact_success: self.success.load(Relaxed),
            compact_migrate_scanned: self.migrate_scanned.load(Relaxed),
            compact_free_scanned: self.free_scanned.load(Relaxed),
            compact_isolated: self.isolated.load(Relaxed),
            pgmigrate_success: self.migrated.load(Relaxed),
            pgmigrate_fail: self.migrate_failed.load(Relaxed),
            compact_daemon_wake: self.daemon_wake.load(Relaxed),
            compact_daemon_migrate_scanned: self.daemon_migrate_scanned.load(Relaxed),
            compact_daemon_free_scanned: self.daemon_free_scanned.load(Relaxed),
            compact_proactive_runs: self.proactive_runs.load(Relaxed),
        }
    }
}

impl core::ops::AddAssign for CompactStats {
    fn add_assign(&mut self, other: CompactStats) {
        self.compact_stall += other.compact_stall;
        self.compact_fail += other.compact_fail;
        self.compact_success += other.compact_success;
        self.compact_migrate_scanned += other.compact_migrate_scanned;
        self.compact_free_scanned += other.compact_free_scanned;
        self.compact_isolated += other.compact_isolated;
        self.pgmigrate_success += other.pgmigrate_success;
        self.pgmigrate_fail += other.pgmigrate_fail;
        self.compact_daemon_wake += other.compact_daemon_wake;
        self.compact_daemon_migrate_scanned += other.compact_daemon_migrate_scanned;
        self.compact_daemon_free_scanned += other.compact_daemon_free_scanned;
        self.compact_proactive_runs += other.compact_proactive_runs;
    }
}

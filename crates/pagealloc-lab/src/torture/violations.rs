//! Violations found during a run: all are counted, the first few are kept with their context
//! and printed at once (above the progress bar), so a long run that goes wrong early says
//! what went wrong without waiting for its end.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use indicatif::ProgressBar;

/// Violations kept and printed in full; later ones are only counted.
pub const SHOWN_VIOLATIONS: usize = 8;

pub struct Violations {
    count: AtomicU64,
    first: Mutex<Vec<String>>,
    /// Pages of blocks the shadow refused (a double allocation or a free of a frame the
    /// freer did not hold): set aside, never freed, so the census comparison can allow for
    /// them instead of repeating the same violation at every check.
    quarantined_pages: AtomicU64,
    bar: ProgressBar,
}

impl Violations {
    pub fn new(bar: ProgressBar) -> Violations {
        Violations {
            count: AtomicU64::new(0),
            first: Mutex::new(Vec::new()),
            quarantined_pages: AtomicU64::new(0),
            bar,
        }
    }

    /// Records a violation described by `context` (who, what operation, what went wrong).
    pub fn report(&self, context: String) {
        let previous = self.count.fetch_add(1, Ordering::Relaxed);
        if previous < SHOWN_VIOLATIONS as u64 {
            self.bar.suspend(|| eprintln!("violation: {context}"));
            self.first.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(context);
        }
    }

    pub fn quarantine(&self, pages: u64) {
        self.quarantined_pages.fetch_add(pages, Ordering::Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    pub fn quarantined_pages(&self) -> u64 {
        self.quarantined_pages.load(Ordering::Relaxed)
    }

    /// The first violations reported, in order.
    pub fn first(&self) -> Vec<String> {
        self.first.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }
}

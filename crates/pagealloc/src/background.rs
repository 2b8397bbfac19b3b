//! The allocator's periodic work on real threads (feature `std`): one thread that calls
//! [`crate::Background::run_due_work`] for every CPU each poll, so each CPU's vmstat pass runs on
//! its `vm.stat_interval` schedule and a woken kswapd runs within one poll. Linux runs the
//! vmstat pass on each CPU; one thread doing it for all is equivalent here because remote
//! pagesets are locked normally.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::allocator::PageAllocator;
use crate::platform::Platform;

/// A running background thread; stops and joins on drop.
#[derive(Debug)]
pub struct BackgroundWorker {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl BackgroundWorker {
    /// Polls every `poll` (the delay of a kswapd wake-up; the vmstat passes keep their own
    /// interval, a tunable of the allocator).
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::StdPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), StdPlatform::new()).unwrap();
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use pagealloc::background::BackgroundWorker;
    /// let allocator = Arc::new(allocator);
    /// let worker = BackgroundWorker::spawn(allocator.clone(), Duration::from_millis(10));
    /// let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap(); // the worker decays and drains meanwhile
    /// allocator.free_pages(block).unwrap();
    /// drop(worker); // stops and joins the thread
    /// ```
    pub fn spawn<P: Platform + 'static>(allocator: Arc<PageAllocator<P>>, poll: Duration) -> BackgroundWorker {
        let stop = Arc::new(AtomicBool::new(false));
        let stop_flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("pagealloc-background".into())
            .spawn(move || {
                while !stop_flag.load(Ordering::Relaxed) {
                    std::thread::park_timeout(poll);
                    if stop_flag.load(Ordering::Relaxed) {
                        break;
                    }
                    let platform = allocator.platform();
                    for cpu in 0..platform.nr_cpus() {
                        allocator.background().run_due_work(cpu, platform.now_ns());
                    }
                }
            })
            .expect("spawn the background thread");
        BackgroundWorker { stop, handle: Some(handle) }
    }
}

impl Drop for BackgroundWorker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.handle.take() {
            handle.thread().unpark();
            let _ = handle.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::AllocatorBuilder;
    use crate::platform::StdPlatform;
    use crate::request::AllocRequest;
    use crate::sizing::Tunables;
    use crate::types::ZoneType;

    #[test]
    fn worker_decays_pagesets_and_runs_kswapd_in_the_background() {
        let tunables = Tunables { stat_interval_ms: 1, ..Tunables::default() };
        let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 18).tunables(tunables);
        let allocator = Arc::new(PageAllocator::build(builder, StdPlatform::with_cpus(1)).unwrap());
        let blocks: std::vec::Vec<_> =
            (0..3000).map(|_| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap()).collect();
        allocator.free_bulk(blocks).unwrap();
        let high_min = allocator.zones()[0].pagesets()[0].inspect(allocator.platform(), |p| p.high_min_pages());
        allocator.background().wake_kswapd(0);
        let worker = BackgroundWorker::spawn(allocator.clone(), Duration::from_millis(1));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while allocator.zones()[0].pagesets()[0].inspect(allocator.platform(), |p| p.high_pages()) > high_min
            || allocator.nodes()[0].kswapd_runs() == 0
        {
            assert!(std::time::Instant::now() < deadline, "high did not decay, or kswapd did not run");
            std::thread::sleep(Duration::from_millis(2));
        }
        drop(worker);
        allocator.check_invariants().unwrap();
    }
}

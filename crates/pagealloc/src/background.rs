//! Background work on real threads (feature `std`): the periodic vmstat pass that decays
//! auto-tuned pageset high and drains idle remote pagesets, and kswapd's pass for woken
//! nodes. Linux runs the vmstat pass on each CPU once per second; one thread ticking every
//! CPU's pagesets is equivalent here because remote pagesets are locked normally.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::allocator::PageAllocator;
use crate::platform::Platform;

/// A running background thread; stops and joins on drop.
pub struct VmstatWorker {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl VmstatWorker {
    /// Ticks every CPU every `interval` (Linux: vm.stat_interval, 1 s).
    pub fn spawn<P: Platform + 'static>(allocator: Arc<PageAllocator<P>>, interval: Duration) -> VmstatWorker {
        let stop = Arc::new(AtomicBool::new(false));
        let stop_flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("pagealloc-vmstat".into())
            .spawn(move || {
                while !stop_flag.load(Ordering::Relaxed) {
                    std::thread::park_timeout(interval);
                    if stop_flag.load(Ordering::Relaxed) {
                        break;
                    }
                    for cpu in 0..allocator.platform().nr_cpus() {
                        allocator.vmstat_tick(cpu);
                    }
                    for node in 0..allocator.nodes().len() as u16 {
                        allocator.run_kswapd(node);
                    }
                }
            })
            .expect("spawn the vmstat thread");
        VmstatWorker { stop, handle: Some(handle) }
    }
}

impl Drop for VmstatWorker {
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
    use crate::platform::TestPlatform;
    use crate::request::AllocRequest;
    use crate::types::ZoneType;

    #[test]
    fn worker_decays_pagesets_in_the_background() {
        let allocator = Arc::new(
            PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 18), TestPlatform::new(1))
                .unwrap(),
        );
        let blocks: std::vec::Vec<_> =
            (0..3000).map(|_| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap()).collect();
        allocator.free_bulk(blocks).unwrap();
        let high_min = allocator.zones()[0].pagesets()[0].inspect(allocator.platform(), |p| p.high_min_pages());
        let worker = VmstatWorker::spawn(allocator.clone(), Duration::from_millis(1));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while allocator.zones()[0].pagesets()[0].inspect(allocator.platform(), |p| p.high_pages()) > high_min {
            assert!(std::time::Instant::now() < deadline, "high did not decay");
            std::thread::sleep(Duration::from_millis(2));
        }
        drop(worker);
        allocator.check_invariants().unwrap();
    }
}

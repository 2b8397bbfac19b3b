//! A thpfioscale-like workload, after the 2018 fragmentation-avoidance series' description
//! of mmtests' thpfioscale (docs/glossary.md):
//! 1. 4 fio threads write 64 KiB files, created on first access, until the files total
//!    150% of memory: page-cache pages (movable) interleaved with the slab objects of each
//!    file (inode and dentry: reclaimable) and filesystem metadata (unmovable), under
//!    reclaim of the oldest page cache;
//! 2. the same threads then read the files for as long as the writing took, refaulting
//!    what reclaim dropped;
//! 3. while they read, (CPUs per socket - 4) / 4 THP threads (the seed's formula: 1 on its
//!    1-socket machine, 5 on its 2-socket one) fault 75% of memory in 2 MiB steps: an order-9
//!    attempt (GFP_TRANSHUGE with `madvise`, else GFP_TRANSHUGE_LIGHT), falling back to 512
//!    base pages. They run on the first socket's CPUs after the fio threads', as the seed
//!    sizes them not to contend with fio nor to force cross-NUMA traffic.
//!
//! Ours, not the seed's (it gives none): a 4 KiB slab page of reclaimable objects per 3 files
//! (an XFS inode is ~1 KiB and a dentry ~200 B), an unmovable metadata page per 64 files,
//! and a reader's refault chance equal to the share of written pages reclaim has dropped.
//! The two ratios are fields; `frag-thpfioscale-sweep` varies them and the memory size.
//! Slab pages live in the run's page cache (reclaim drops them with the oldest files, as the
//! shrinkers would); unmovable pages stay until the run ends.
//!
//! Recorded (summed over CPUs): THP faults, huge and base, with their summed latencies.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use serde_json::json;

use super::{CpuTask, Env, Idle, Step, Workload};
use crate::rng::SplitMix64;
use pagealloc::{AllocRequest, Block, PAGEBLOCK_ORDER};

const HUGE_PAGES: u64 = 1 << PAGEBLOCK_ORDER;
/// 64 KiB files.
const FILE_PAGES: u64 = 16;
/// fio threads (the seed: 4).
const FIO_THREADS: usize = 4;

#[derive(Clone, Debug)]
pub struct ThpFioScale {
    pub memory_pages: u64,
    /// CPUs per socket (the THP thread count is (this - 4) / 4).
    pub cpus_per_socket: usize,
    pub madvise: bool,
    /// Files written, as percent of memory (the seed: 150).
    pub written_pct: u64,
    /// Memory the THP threads fault, percent (the seed: 75).
    pub thp_pct: u64,
    /// Files per 4 KiB slab page of reclaimable objects (ours: 3; swept by
    /// frag-thpfioscale-sweep).
    pub files_per_slab_page: u64,
    /// Files per unmovable metadata page (ours: 64; swept by frag-thpfioscale-sweep).
    pub files_per_metadata_page: u64,
    /// File creation (open with create_on_open) per file (ours: 20 us; swept by
    /// frag-thpfioscale-sweep).
    pub create_ns: u64,
    /// Copying a page of a write or read (ours: 500 ns, 8 GB/s; swept by
    /// frag-thpfioscale-sweep).
    pub copy_page_ns: u64,
    /// Trap and page-table work per base-page fault (as page_fault1's).
    pub fault_overhead_ns: u64,
    /// What the storage writes back and reads, MiB/s shared by the fio threads; 0 for
    /// none (writers dirty pages at memory speed). The seed ran XFS on a disk it does not
    /// name: swept by frag-thpfioscale-sweep.
    pub storage_mib_per_s: u64,
}

impl ThpFioScale {
    pub fn new(memory_pages: u64, cpus_per_socket: usize, madvise: bool) -> ThpFioScale {
        ThpFioScale {
            memory_pages,
            cpus_per_socket,
            madvise,
            written_pct: 150,
            thp_pct: 75,
            files_per_slab_page: 3,
            files_per_metadata_page: 64,
            create_ns: 20_000,
            copy_page_ns: 500,
            fault_overhead_ns: 250,
            storage_mib_per_s: 0,
        }
    }

    /// Storage time of one file for one fio thread (its share of the bandwidth), if the
    /// storage is modelled.
    fn file_io_ns(&self) -> Option<u64> {
        let bytes_per_s = (self.storage_mib_per_s << 20) / FIO_THREADS as u64;
        (bytes_per_s > 0).then(|| FILE_PAGES * 4096 * 1_000_000_000 / bytes_per_s)
    }

    /// THP threads: (CPUs per socket - fio threads) / 4, at least 1.
    pub fn thp_threads(&self) -> usize {
        (self.cpus_per_socket.saturating_sub(FIO_THREADS) / 4).max(1)
    }
}

/// What the run's threads share: how far the writers got.
#[derive(Default)]
struct Shared {
    writers_done: AtomicUsize,
    written_pages: AtomicU64,
}

struct FioThread {
    config: ThpFioScale,
    shared: Arc<Shared>,
    rng: SplitMix64,
    pages_to_write: u64,
    files: u64,
    reading_until_ns: Option<u64>,
    started_ns: Option<u64>,
    metadata: Vec<Block>,
    /// When this thread's share of the storage has done its last file.
    io_done_ns: u64,
}

impl FioThread {
    /// Starts a file's transfer: the thread's share of the storage takes it after the
    /// files before it. Returns when it is done.
    fn queue_io(&mut self, env: &dyn Env) -> Option<u64> {
        let file_ns = self.config.file_io_ns()?;
        self.io_done_ns = self.io_done_ns.max(env.now_ns()) + file_ns;
        Some(self.io_done_ns)
    }

    /// One file: its page cache, and every few files a slab page and a metadata page. The
    /// writer goes on once the storage has written the file back (balance_dirty_pages()
    /// holds dirtying to the writeback rate).
    fn write_file(&mut self, env: &mut dyn Env) {
        let io_done_ns = self.queue_io(env);
        env.compute(self.config.create_ns);
        self.files += 1;
        if self.files.is_multiple_of(self.config.files_per_slab_page) {
            if let Some(slab) = env.alloc(0, AllocRequest::RECLAIMABLE) {
                env.cache_insert_slab(slab);
            }
        }
        if self.files.is_multiple_of(self.config.files_per_metadata_page) {
            if let Some(page) = env.alloc(0, AllocRequest::KERNEL) {
                self.metadata.push(page);
            }
        }
        for _ in 0..FILE_PAGES {
            let Some(page) = env.alloc(0, AllocRequest::USER_MOVABLE) else { continue };
            env.touch(page.pfn(), 1);
            env.compute(self.config.copy_page_ns);
            env.cache_insert(page);
        }
        if let Some(io_done_ns) = io_done_ns {
            env.sleep_until(io_done_ns);
        }
    }

    /// One read of a random file: refaulted with the chance that reclaim dropped it.
    fn read_file(&mut self, env: &mut dyn Env) {
        let written = self.shared.written_pages.load(Relaxed).max(1);
        let cached = env.page_cache().expect("thpfioscale keeps a page cache").len_pages().min(written);
        let miss_per_mille = (written - cached) * 1000 / written;
        if self.rng.below(1000) < miss_per_mille {
            // The refault waits for the storage to read the file.
            if let Some(io_done_ns) = self.queue_io(env) {
                env.sleep_until(io_done_ns);
            }
            self.files += 1;
            if self.files.is_multiple_of(self.config.files_per_slab_page) {
                if let Some(slab) = env.alloc(0, AllocRequest::RECLAIMABLE) {
                    env.cache_insert_slab(slab);
                }
            }
            for _ in 0..FILE_PAGES {
                let Some(page) = env.alloc(0, AllocRequest::USER_MOVABLE) else { continue };
                env.touch(page.pfn(), 1);
                env.cache_insert(page);
            }
        }
        env.compute(self.config.copy_page_ns * FILE_PAGES);
        env.done(1);
    }
}

impl CpuTask for FioThread {
    fn step(&mut self, env: &mut dyn Env) -> Step {
        let now_ns = env.now_ns();
        let started_ns = *self.started_ns.get_or_insert(now_ns);
        if self.pages_to_write > 0 {
            self.write_file(env);
            self.pages_to_write = self.pages_to_write.saturating_sub(FILE_PAGES);
            self.shared.written_pages.fetch_add(FILE_PAGES, Relaxed);
            if self.pages_to_write == 0 {
                self.shared.writers_done.fetch_add(1, Relaxed);
                // Read for as long as the writing took.
                let now_ns = env.now_ns();
                self.reading_until_ns = Some(now_ns + (now_ns - started_ns));
            }
            return Step::Continue;
        }
        match self.reading_until_ns {
            Some(until_ns) if env.now_ns() < until_ns => {
                self.read_file(env);
                Step::Continue
            }
            _ => Step::Done,
        }
    }

    fn finish(&mut self, env: &mut dyn Env) {
        for page in self.metadata.drain(..) {
            env.free(page);
        }
    }
}

struct ThpThread {
    config: ThpFioScale,
    shared: Arc<Shared>,
    units_left: u64,
}

impl ThpThread {
    fn fault(&mut self, env: &mut dyn Env) {
        let request = if self.config.madvise { AllocRequest::TRANSHUGE } else { AllocRequest::TRANSHUGE_LIGHT };
        let (huge, pages, latency_ns) = super::thp_compact::fault_2mib(env, request, self.config.fault_overhead_ns);
        match huge {
            Some(block) => {
                env.cache_insert_anon(block);
                env.record("huge_faults", 1.0);
                env.record("huge_fault_ns_sum", latency_ns as f64);
            }
            None => {
                pages.into_iter().for_each(|page| env.cache_insert_anon(page));
                env.record("base_faults", 1.0);
                env.record("base_fault_ns_sum", latency_ns as f64);
            }
        }
        env.done(1);
    }
}

impl CpuTask for ThpThread {
    fn step(&mut self, env: &mut dyn Env) -> Step {
        if self.units_left == 0 {
            return Step::Done;
        }
        // Start once the files exist (the seed starts the THP threads during the reads).
        if self.shared.writers_done.load(Relaxed) < FIO_THREADS {
            env.compute(100_000);
            return Step::Continue;
        }
        self.units_left -= 1;
        self.fault(env);
        Step::Continue
    }

    /// The anonymous memory is the page cache's, which the harness frees.
    fn finish(&mut self, _env: &mut dyn Env) {}
}

impl ThpFioScale {
    /// The kernel's file, copy and fault costs on a profiled machine.
    pub fn with_costs(self, kernel: &crate::machine::KernelCosts) -> ThpFioScale {
        ThpFioScale {
            create_ns: kernel.file_create_ns,
            copy_page_ns: kernel.page_copy_ns,
            fault_overhead_ns: kernel.fault_ns,
            ..self
        }
    }
}

impl Workload for ThpFioScale {
    fn name(&self) -> &'static str {
        "thpfioscale"
    }
    fn unit(&self) -> &'static str {
        "file reads and THP faults"
    }
    fn params(&self) -> serde_json::Value {
        json!({
            "madvise": self.madvise,
            "fio_threads": FIO_THREADS,
            "thp_threads": self.thp_threads(),
            "written_pct": self.written_pct,
            "thp_pct": self.thp_pct,
            "files_per_slab_page": self.files_per_slab_page,
            "files_per_metadata_page": self.files_per_metadata_page,
            "memory_pages": self.memory_pages,
            "storage_mib_per_s": self.storage_mib_per_s,
        })
    }
    fn uses_page_cache(&self) -> bool {
        true
    }
    /// fio on the first four CPUs, THP threads on the next CPUs of each socket, the rest idle.
    fn tasks(&self, cpus: usize, seed: u64) -> Vec<Box<dyn CpuTask>> {
        let shared = Arc::new(Shared::default());
        let thp_threads = self.thp_threads();
        let write_pages = self.memory_pages * self.written_pct / 100 / FIO_THREADS as u64;
        let thp_units = self.memory_pages * self.thp_pct / 100 / HUGE_PAGES / thp_threads as u64;
        // The CPUs after the fio threads'. CPUs are numbered as Linux numbers them (each
        // core's first thread, socket by socket, then the second threads): on the 2-socket
        // machine these are first-socket cores of their own; the 1-socket machine has 4
        // cores, so its THP thread shares one with a fio thread.
        let thp_cpus: Vec<usize> = (FIO_THREADS..FIO_THREADS + thp_threads).collect();
        (0..cpus)
            .map(|cpu| -> Box<dyn CpuTask> {
                if cpu < FIO_THREADS {
                    Box::new(FioThread {
                        config: self.clone(),
                        shared: shared.clone(),
                        rng: SplitMix64::new(seed ^ (cpu as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
                        pages_to_write: write_pages,
                        files: 0,
                        reading_until_ns: None,
                        started_ns: None,
                        metadata: Vec::new(),
                        io_done_ns: 0,
                    })
                } else if thp_cpus.contains(&cpu) {
                    Box::new(ThpThread { config: self.clone(), shared: shared.clone(), units_left: thp_units })
                } else {
                    Box::new(Idle)
                }
            })
            .collect()
    }
}

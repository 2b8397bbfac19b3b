//! mmtests io-trunc: fill the page cache from sparse files, then truncate them: one CPU frees
//! a long run of page-cache pages, a free-only burst. Metric: the truncate's elapsed time.
//!
//! With `lru` (`pagelab run trunc --lru`), each page-cache page joins the inactive file LRU
//! through the CPU's add batch as it is read in (add_to_page_cache_lru()), and the truncate
//! takes each batch off the LRU before freeing it (truncate_inode_pages() releasing a
//! pagevec). Off by default: the `highorder-trunc` reproduction counts the LRU's work in
//! `truncate_per_page_ns`, as the 2022 calibration did.

use serde_json::json;

use super::{CpuTask, Env, Idle, Step, Workload};
use pagealloc::lru::LruList;
use pagealloc::{AllocRequest, Block};

#[derive(Clone, Debug)]
pub struct Trunc {
    pub file_pages: u64,
    /// Page-cache insertion work per page while filling (reading a sparse file: zeroing).
    pub fill_per_page_ns: u64,
    /// Page-cache removal work per page while truncating (xarray, LRU, accounting).
    pub truncate_per_page_ns: u64,
    /// Pages handled per step (a pagevec/folio batch).
    pub batch_pages: u64,
    /// Page-cache pages go on the file LRU and the truncate takes them off.
    pub lru: bool,
}

impl Default for Trunc {
    fn default() -> Self {
        Trunc { file_pages: 1 << 16, fill_per_page_ns: 150, truncate_per_page_ns: 80, batch_pages: 31, lru: false }
    }
}

impl Trunc {
    /// The kernel's page-cache costs on a profiled machine.
    pub fn with_costs(self, kernel: &crate::machine::KernelCosts) -> Trunc {
        Trunc {
            fill_per_page_ns: kernel.page_cache_fill_ns,
            truncate_per_page_ns: kernel.page_cache_truncate_ns,
            ..self
        }
    }
}

struct Truncator {
    config: Trunc,
    cache: Vec<Block>,
    filling: bool,
    truncate_start_ns: u64,
}

impl CpuTask for Truncator {
    fn step(&mut self, env: &mut dyn Env) -> Step {
        if self.filling {
            for _ in 0..self.config.batch_pages {
                let Some(page) = env.alloc(0, AllocRequest::USER_MOVABLE) else {
                    self.filling = false;
                    break;
                };
                env.touch(page.pfn(), 1);
                env.compute(self.config.fill_per_page_ns);
                if self.config.lru {
                    env.lru_add(&page, LruList::InactiveFile);
                }
                self.cache.push(page);
                if self.cache.len() as u64 >= self.config.file_pages {
                    self.filling = false;
                    break;
                }
            }
            if !self.filling {
                self.truncate_start_ns = env.now_ns();
            }
            return Step::Continue;
        }
        // A batch from the file's end, freed newest page first (the LRU release takes it
        // in file order); a short batch is the last.
        let batch_pages = self.config.batch_pages as usize;
        let start = self.cache.len().saturating_sub(batch_pages);
        let short = self.cache.len() - start < batch_pages;
        if self.config.lru {
            env.lru_release(&self.cache[start..]);
        }
        for page in self.cache.drain(start..).rev() {
            env.compute(self.config.truncate_per_page_ns);
            env.free(page);
            env.done(1);
        }
        if short {
            let elapsed_ns = env.now_ns() - self.truncate_start_ns;
            env.record("truncate_s", elapsed_ns as f64 / 1e9);
            return Step::Done;
        }
        Step::Continue
    }

    fn finish(&mut self, env: &mut dyn Env) {
        if self.config.lru {
            env.lru_release(&self.cache);
        }
        for page in self.cache.drain(..) {
            env.free(page);
        }
    }
}

impl Workload for Trunc {
    fn name(&self) -> &'static str {
        "trunc"
    }
    fn unit(&self) -> &'static str {
        "pages truncated"
    }
    fn params(&self) -> serde_json::Value {
        json!({
            "file_pages": self.file_pages,
            "fill_per_page_ns": self.fill_per_page_ns,
            "truncate_per_page_ns": self.truncate_per_page_ns,
            "batch_pages": self.batch_pages,
        })
    }
    fn uses_lru(&self) -> bool {
        self.lru
    }
    fn tasks(&self, cpus: usize, _seed: u64) -> Vec<Box<dyn CpuTask>> {
        let mut tasks: Vec<Box<dyn CpuTask>> =
            vec![Box::new(Truncator { config: self.clone(), cache: Vec::new(), filling: true, truncate_start_ns: 0 })];
        tasks.extend((1..cpus).map(|_| Box::new(Idle) as Box<dyn CpuTask>));
        tasks
    }
}

//! mmtests io-trunc: fill the page cache from sparse files, then truncate them: one CPU frees
//! a long run of page-cache pages, a free-only burst. Metric: the truncate's elapsed time.

use serde_json::json;

use super::{CpuTask, Env, Idle, Step, Workload};
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
}

impl Default for Trunc {
    fn default() -> Self {
        Trunc { file_pages: 1 << 16, fill_per_page_ns: 150, truncate_per_page_ns: 80, batch_pages: 31 }
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
        for _ in 0..self.config.batch_pages {
            let Some(page) = self.cache.pop() else {
                let elapsed_ns = env.now_ns() - self.truncate_start_ns;
                env.record("truncate_s", elapsed_ns as f64 / 1e9);
                return Step::Done;
            };
            env.compute(self.config.truncate_per_page_ns);
            env.free(page);
            env.done(1);
        }
        Step::Continue
    }

    fn finish(&mut self, env: &mut dyn Env) {
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
    fn tasks(&self, cpus: usize, _seed: u64) -> Vec<Box<dyn CpuTask>> {
        let mut tasks: Vec<Box<dyn CpuTask>> =
            vec![Box::new(Truncator { config: self.clone(), cache: Vec::new(), filling: true, truncate_start_ns: 0 })];
        tasks.extend((1..cpus).map(|_| Box::new(Idle) as Box<dyn CpuTask>));
        tasks
    }
}

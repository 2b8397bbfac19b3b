//! The policy a run uses: its preset (or its policy file's base), the file's and `--set`'s
//! switches, and the NUMA-counter and LRU-batch overrides.

use pagealloc::presets::Preset;
use pagealloc::Policy;

use super::RunArgs;

impl RunArgs {
    /// The preset the run starts from: the policy file's base, else --preset; refused when
    /// a switch the file or --set changes does nothing there.
    pub fn preset(&self) -> Result<&'static Preset, String> {
        let named =
            pagealloc::presets::find(&self.preset).ok_or_else(|| format!("unknown preset '{}'", self.preset))?;
        let base = self.policy_file.as_ref().and_then(|file| file.base).unwrap_or(named);
        crate::policy_file::resolve(base, self.policy_file.as_ref(), &self.sets)?;
        Ok(base)
    }

    /// The preset, and every switch the file and --set leave changed from it, as reports
    /// name the policy (`patch7 + pcp.batch_scale_max=6`).
    pub fn policy_label(&self, preset: &Preset) -> String {
        let policy = crate::policy_file::apply(preset, self.policy_file.as_ref(), &self.sets);
        crate::policy_file::label(preset, &policy)
    }

    /// The preset's policy with this run's switches (the file's, then --set's) and
    /// overrides.
    pub fn policy(&self, preset: &Preset) -> Policy {
        let mut policy = crate::policy_file::apply(preset, self.policy_file.as_ref(), &self.sets);
        if let Some(numa) = self.numa_stats {
            policy.vmstat.numa = numa;
        }
        if let Some(batch_pages) = self.lru_batch {
            policy.lru.batch_pages = batch_pages;
        }
        policy
    }
}

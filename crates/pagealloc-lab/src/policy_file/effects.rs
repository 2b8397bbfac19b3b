//! Switches that do nothing where others are set as they are: a file or `--set` that
//! changes one of them to a value that would act is refused, since its run would silently
//! measure without it. Changing one back to its neutral value is always allowed.

use pagealloc::policy::{FragBeyondLinux, FreeHighRule, Policy};

use super::{switches, Set};

/// A switch (`key`, or every key under a `key.` prefix) that acts only when `acts` holds;
/// `neutral` says when its value asks for nothing (`None`: no value is neutral).
struct Needs {
    key: &'static str,
    except: &'static [&'static str],
    acts: fn(&Policy) -> bool,
    neutral: Option<fn(&Policy) -> bool>,
    because: &'static str,
}

const RULES: &[Needs] = &[
    Needs {
        key: "pcp.",
        except: &["pcp.enabled"],
        acts: |policy| policy.pcp.enabled,
        neutral: None,
        because: "pcp.enabled is false: there are no pagesets",
    },
    Needs {
        key: "pcp.drain.coalesce_runs",
        except: &[],
        acts: |policy| !policy.pcp.drain.two_pass,
        neutral: Some(|policy| !policy.pcp.drain.beyond_linux.coalesce_runs),
        because: "coalesced runs belong to single-pass drains, and pcp.drain.two_pass is true",
    },
    Needs {
        key: "pcp.free_high_capped",
        except: &[],
        acts: |policy| policy.pcp.free_high != FreeHighRule::Off,
        neutral: Some(|policy| !policy.pcp.free_high_capped),
        because: "it caps free_high drains, and pcp.free_high is off",
    },
    Needs {
        key: "pcp.thp_batch_shift",
        except: &[],
        acts: |policy| policy.pcp.thp_lists > 0,
        neutral: Some(|policy| policy.pcp.thp_batch_shift == 0),
        because: "it sizes the THP lists' refills, and pcp.thp_lists is 0",
    },
    Needs {
        key: "frag.buddy_bound_free_pages",
        except: &[],
        acts: |policy| policy.frag.beyond_linux.fullest_first,
        neutral: Some(|policy| {
            policy.frag.beyond_linux.buddy_bound_free_pages == FragBeyondLinux::OFF.buddy_bound_free_pages
        }),
        because: "it belongs to fullest-first placement, and frag.fullest_first is false",
    },
    Needs {
        key: "frag.parked_frees",
        except: &[],
        acts: |policy| policy.frag.beyond_linux.fullest_first,
        neutral: Some(|policy| !policy.frag.beyond_linux.parked_frees),
        because: "parked pages are counted with fullest-first's, and frag.fullest_first is false",
    },
];

/// Refuses a set that changes a switch (from `base`) which does nothing in `policy`.
pub fn check_effects(base: &Policy, policy: &Policy, sets: &[&Set]) -> Result<(), String> {
    for set in sets {
        let switch = switches::find(set.key).expect("a set names a switch");
        if (switch.get)(base) == (switch.get)(policy) {
            continue; // changes nothing from the base
        }
        let applies = |rule: &&Needs| {
            let named = rule.key == set.key || (rule.key.ends_with('.') && set.key.starts_with(rule.key));
            named && !rule.except.contains(&set.key)
        };
        let idle = |rule: &&Needs| !(rule.acts)(policy) && !rule.neutral.is_some_and(|neutral| neutral(policy));
        if let Some(rule) = RULES.iter().filter(applies).find(idle) {
            return Err(format!("{} = {} does nothing: {}", set.key, set.value, rule.because));
        }
    }
    Ok(())
}

//! Every policy switch by its key, as policy files and `--set` name them: how to read it
//! from a `Policy`, how to set it from text, and what it accepts.

use pagealloc::policy::{
    ArenaRule, BoostRule, FallbackDesign, FreeHighRule, FreePagesCount, FreeSizing, HighMaxRule, LruCommit, NumaStats,
    Policy,
};

/// One switch: `key` as files name it (`pcp.drain.chunked`), what it `accepts`, its
/// current value as file text, and its setter, which refuses values outside what it
/// accepts.
pub struct Switch {
    pub key: &'static str,
    pub accepts: &'static str,
    pub get: fn(&Policy) -> String,
    pub set: fn(&mut Policy, &str) -> Result<(), String>,
}

/// A boolean switch at `$($field).+`.
macro_rules! flag {
    ($key:literal, $($field:ident).+) => {
        Switch {
            key: $key,
            accepts: "true or false",
            get: |policy| policy.$($field).+.to_string(),
            set: |policy, text| {
                policy.$($field).+ = parse_bool(text)?;
                Ok(())
            },
        }
    };
}

/// An integer switch within `$range`.
macro_rules! number {
    ($key:literal, $($field:ident).+, $range:expr, $accepts:literal) => {
        Switch {
            key: $key,
            accepts: $accepts,
            get: |policy| policy.$($field).+.to_string(),
            set: |policy, text| {
                policy.$($field).+ = parse_in(text, $range, $accepts)?;
                Ok(())
            },
        }
    };
}

/// An optional integer switch: `none`, or a number within `$range`.
macro_rules! optional {
    ($key:literal, $($field:ident).+, $range:expr, $accepts:literal) => {
        Switch {
            key: $key,
            accepts: $accepts,
            get: |policy| policy.$($field).+.map_or("none".to_string(), |value| value.to_string()),
            set: |policy, text| {
                policy.$($field).+ = if text == "none" { None } else { Some(parse_in(text, $range, $accepts)?) };
                Ok(())
            },
        }
    };
}

/// A switch over named choices: `$choices` pairs each name with its value.
macro_rules! choice {
    ($key:literal, $($field:ident).+, $choices:expr, $accepts:literal) => {
        Switch {
            key: $key,
            accepts: $accepts,
            get: |policy| name_of(&$choices, policy.$($field).+).to_string(),
            set: |policy, text| {
                policy.$($field).+ = value_of(&$choices, text, $accepts)?;
                Ok(())
            },
        }
    };
}

const FREE_HIGH: [(&str, FreeHighRule); 6] = [
    ("off", FreeHighRule::Off),
    ("any-high-order", FreeHighRule::AnyHighOrder),
    ("consecutive", FreeHighRule::Consecutive),
    ("consecutive-batch", FreeHighRule::ConsecutiveBatch),
    ("free-count-batch", FreeHighRule::FreeCountBatch),
    ("free-count-batch-half-high-min", FreeHighRule::FreeCountBatchHalfHighMin),
];
const FREE_SIZING: [(&str, FreeSizing); 2] =
    [("free-factor", FreeSizing::FreeFactor), ("free-count", FreeSizing::FreeCount)];
const FREE_PAGES: [(&str, FreePagesCount); 2] =
    [("published", FreePagesCount::Published), ("per-cpu-diffs", FreePagesCount::PerCpuDiffs)];
const LRU_COMMIT: [(&str, LruCommit); 3] =
    [("classic", LruCommit::Classic), ("scaled-removal", LruCommit::ScaledRemoval), ("splice", LruCommit::Splice)];
const FALLBACK: [(&str, FallbackDesign); 2] =
    [("steal-2018", FallbackDesign::Steal2018), ("claim-or-steal", FallbackDesign::ClaimOrSteal)];
const BOOST: [(&str, BoostRule); 3] = [
    ("off", BoostRule::Off),
    ("every-fallback", BoostRule::EveryFallback),
    ("claim-attempts", BoostRule::ClaimAttempts),
];
const ARENAS: [(&str, ArenaRule); 2] = [("per-node", ArenaRule::PerNode), ("per-cpu", ArenaRule::PerCpu)];

const HIGH_MAX_ACCEPTS: &str = "linux, high-min, small-orders-at-high-min or zone-share-N (N 1 to 65535)";
const NUMA_ACCEPTS: &str =
    "zone-stat, threshold-N (N 32 to 32765), separate-class, separate-class-N (N 1 to 65533), per-cpu or disabled";

/// Every switch, in the order `presets --dump` writes them.
pub const SWITCHES: &[Switch] = &[
    flag!("pcp.enabled", pcp.enabled),
    number!("pcp.max_cached_order", pcp.max_cached_order, 0..=3, "0 to 3 (PAGE_ALLOC_COSTLY_ORDER)"),
    number!("pcp.thp_lists", pcp.thp_lists, 0..=2, "0, 1 or 2"),
    flag!("pcp.drain.proportional", pcp.drain.proportional),
    flag!("pcp.drain.track_active_range", pcp.drain.track_active_range),
    flag!("pcp.drain.two_pass", pcp.drain.two_pass),
    flag!("pcp.drain.prefetch_correct_buddy", pcp.drain.prefetch_correct_buddy),
    flag!("pcp.drain.start_at_freed_list", pcp.drain.start_at_freed_list),
    flag!("pcp.drain.chunked", pcp.drain.chunked),
    flag!("pcp.drain.warm_merges", pcp.drain.beyond_linux.warm_merges),
    flag!("pcp.drain.coalesce_runs", pcp.drain.beyond_linux.coalesce_runs),
    flag!("pcp.drain.hand_remote_frees", pcp.drain.beyond_linux.hand_remote_frees),
    choice!(
        "pcp.free_high",
        pcp.free_high,
        FREE_HIGH,
        "off, any-high-order, consecutive, consecutive-batch, free-count-batch or free-count-batch-half-high-min"
    ),
    flag!("pcp.free_high_capped", pcp.free_high_capped),
    choice!("pcp.free_sizing", pcp.free_sizing, FREE_SIZING, "free-factor or free-count"),
    optional!("pcp.batch_scale_max", pcp.batch_scale_max, 0..=6, "none (unbounded) or 0 to 6 (PCP_BATCH_SCALE_MAX)"),
    flag!("pcp.alloc_factor", pcp.alloc_factor),
    flag!("pcp.autotune_high", pcp.autotune_high),
    flag!("pcp.below_high", pcp.below_high),
    optional!("pcp.batch_override", pcp.batch_override, 1..=1 << 24, "none or 1 to 16777216 pages"),
    optional!("pcp.high_override", pcp.high_override, 0..=1 << 24, "none or 0 to 16777216 pages"),
    number!("pcp.thp_batch_shift", pcp.thp_batch_shift, 0..=8, "0 to 8"),
    Switch {
        key: "pcp.high_max",
        accepts: HIGH_MAX_ACCEPTS,
        get: |policy| high_max_name(policy.pcp.high_max),
        set: |policy, text| {
            policy.pcp.high_max = parse_high_max(text)?;
            Ok(())
        },
    },
    Switch {
        key: "vmstat.numa",
        accepts: NUMA_ACCEPTS,
        get: |policy| policy.vmstat.numa.to_string(),
        set: |policy, text| {
            policy.vmstat.numa = NumaStats::parse(text).ok_or_else(|| format!("`{text}` is not {NUMA_ACCEPTS}"))?;
            Ok(())
        },
    },
    choice!("vmstat.free_pages", vmstat.free_pages, FREE_PAGES, "published or per-cpu-diffs"),
    number!("lru.batch_pages", lru.batch_pages, 1..=255, "1 to 255 pages"),
    choice!("lru.commit", lru.commit, LRU_COMMIT, "classic, scaled-removal or splice"),
    number!("lru.batch_locks", lru.batch_locks, 1..=u16::MAX, "1 to 65535"),
    choice!("frag.fallback", frag.fallback, FALLBACK, "steal-2018 or claim-or-steal"),
    choice!("frag.boost", frag.boost, BOOST, "off, every-fallback or claim-attempts"),
    flag!("frag.nofragment_lowzone", frag.nofragment_lowzone),
    flag!("frag.stall_movable", frag.stall_movable),
    flag!("frag.defrag_mode", frag.defrag_mode),
    flag!("frag.fullest_first", frag.beyond_linux.fullest_first),
    number!(
        "frag.buddy_bound_free_pages",
        frag.beyond_linux.buddy_bound_free_pages,
        1..=512,
        "1 to 512 pages (a pageblock)"
    ),
    flag!("frag.parked_frees", frag.beyond_linux.parked_frees),
    flag!("frag.boost_reclaim_shrinks_slab", frag.boost_reclaim_shrinks_slab),
    flag!("frag.noretry_gives_up_when_skipped", frag.noretry_gives_up_when_skipped),
    flag!("frag.merge_likely_to_tail", frag.merge_likely_to_tail),
    choice!("arenas", arenas, ARENAS, "per-node or per-cpu"),
];

/// The switch named `key`.
pub fn find(key: &str) -> Option<&'static Switch> {
    SWITCHES.iter().find(|switch| switch.key == key)
}

fn parse_bool(text: &str) -> Result<bool, String> {
    text.parse().map_err(|_| format!("`{text}` is not true or false"))
}

fn parse_in<T>(text: &str, range: std::ops::RangeInclusive<T>, accepts: &str) -> Result<T, String>
where
    T: std::str::FromStr + PartialOrd,
{
    text.parse().ok().filter(|value| range.contains(value)).ok_or_else(|| format!("`{text}` is not {accepts}"))
}

fn name_of<T: PartialEq + Copy>(choices: &[(&'static str, T)], value: T) -> &'static str {
    choices.iter().find(|(_, choice)| *choice == value).map(|(name, _)| *name).expect("every value has a name")
}

fn value_of<T: Copy>(choices: &[(&'static str, T)], text: &str, accepts: &str) -> Result<T, String> {
    choices
        .iter()
        .find(|(name, _)| *name == text)
        .map(|(_, value)| *value)
        .ok_or_else(|| format!("`{text}` is not {accepts}"))
}

fn high_max_name(rule: HighMaxRule) -> String {
    match rule {
        HighMaxRule::Linux => "linux".to_string(),
        HighMaxRule::ZoneShare(share) => format!("zone-share-{share}"),
        HighMaxRule::HighMin => "high-min".to_string(),
        HighMaxRule::SmallOrdersAtHighMin => "small-orders-at-high-min".to_string(),
    }
}

fn parse_high_max(text: &str) -> Result<HighMaxRule, String> {
    let rule = match text {
        "linux" => HighMaxRule::Linux,
        "high-min" => HighMaxRule::HighMin,
        "small-orders-at-high-min" => HighMaxRule::SmallOrdersAtHighMin,
        _ => {
            let share = text.strip_prefix("zone-share-").and_then(|n| n.parse::<u16>().ok()).filter(|&n| n >= 1);
            HighMaxRule::ZoneShare(share.ok_or_else(|| format!("`{text}` is not {HIGH_MAX_ACCEPTS}"))?)
        }
    };
    Ok(rule)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every switch of every preset reads back what it writes, and every key is distinct.
    #[test]
    fn every_switch_round_trips_on_every_preset() {
        for preset in pagealloc::presets::PRESETS {
            let mut policy = Policy { ..preset.policy };
            for switch in SWITCHES {
                let text = (switch.get)(&preset.policy);
                (switch.set)(&mut policy, &text).unwrap_or_else(|e| panic!("{}: {}: {e}", preset.name, switch.key));
            }
            assert_eq!(policy, preset.policy, "{}", preset.name);
        }
        let mut keys: Vec<_> = SWITCHES.iter().map(|switch| switch.key).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), SWITCHES.len());
    }
}

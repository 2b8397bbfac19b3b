use super::*;

fn named(name: &str) -> &'static Preset {
    pagealloc::presets::find(name).unwrap()
}

/// A preset dumped and read back, on its own base or on another, is that preset.
#[test]
fn every_preset_dumps_to_a_file_that_reads_back_as_itself() {
    for preset in pagealloc::presets::PRESETS {
        let file = PolicyFile::parse(&dump(preset)).unwrap_or_else(|e| panic!("{}: {e}", preset.name));
        assert_eq!(file.base.map(|base| base.name), Some(preset.name));
        assert_eq!(file.sets.len(), SWITCHES.len());
        assert_eq!(resolve(named("mainline"), Some(&file), &[]), Ok(preset.policy), "{}", preset.name);
        // On another base every switch changes to this preset's: a field the switch table
        // missed would keep the other base's value wherever two presets differ in it.
        let on_other_base = PolicyFile { base: None, ..file };
        for other in ["vanilla-4.20", "pagealloc", "lru-k4"] {
            match resolve(named(other), Some(&on_other_base), &[]) {
                Ok(policy) => assert_eq!(policy, preset.policy, "{} on {other}", preset.name),
                // A preset without pagesets keeps pageset switches that do nothing there.
                Err(error) => assert!(!preset.policy.pcp.enabled, "{} on {other}: {error}", preset.name),
            }
        }
    }
}

#[test]
fn a_file_sets_switches_on_its_base_and_the_command_line_goes_last() {
    let file =
        PolicyFile::parse("base = \"patch7\"\n[pcp]\nbatch_scale_max = 6\n[pcp.drain]\nchunked = true\n").unwrap();
    let sets = [Set::parse("pcp.batch_scale_max=4").unwrap()];
    let policy = resolve(named("mainline"), Some(&file), &sets).unwrap();
    let mut expected = named("patch7").policy;
    expected.pcp.drain.chunked = true;
    expected.pcp.batch_scale_max = Some(4);
    assert_eq!(policy, expected);
    // Dotted keys work as tables do.
    let dotted = PolicyFile::parse("pcp.drain.chunked = false\narenas = \"per-cpu\"\n").unwrap();
    let policy = resolve(named("mainline"), Some(&dotted), &[]).unwrap();
    assert!(!policy.pcp.drain.chunked && policy.arenas == pagealloc::policy::ArenaRule::PerCpu);
}

#[test]
fn bad_files_and_sets_name_the_key_and_what_it_takes() {
    let error = |text: &str| PolicyFile::parse(text).unwrap_err();
    assert!(error("[pcp.drain]\nchunkd = true\n")
        .contains("unknown switch `pcp.drain.chunkd`; under `pcp.drain` there are: pcp.drain.proportional"));
    assert!(
        error("[pcp]\nbatch_scale_max = 7\n").contains("pcp.batch_scale_max: `7` is not none (unbounded) or 0 to 6")
    );
    assert!(error("pcp.free_high = \"sometimes\"\n").contains("pcp.free_high: `sometimes` is not off, any-high-order"));
    assert!(error("pcp.enabled = 1.5\n").contains("pcp.enabled: a switch is a boolean, an integer or a string"));
    assert!(error("base = \"linux-9.9\"\n").contains("base: no preset `linux-9.9`"));
    assert!(error("base = 7\n").contains("base: a preset's name"));
    assert!(
        error("pcp.enabled = true\n[pcp]\nenabled = false\n").contains("duplicate key")
            || error("pcp.enabled = true\n[pcp]\nenabled = false\n").contains("set twice")
    );
    assert!(error("[pcp\n").to_lowercase().contains("expected") || !error("[pcp\n").is_empty());
    assert!(Set::parse("pcp.thp_lists").unwrap_err().contains("is not KEY=VALUE"));
    assert!(Set::parse("pcp.thp_lists=3").unwrap_err().contains("0, 1 or 2"));
    assert!(Set::parse("vmstat.numa=threshold-5").unwrap_err().contains("threshold-N (N 32 to 32765)"));
    assert!(Set::parse("nothing=1").unwrap_err().contains("unknown switch `nothing`"));
    assert!(PolicyFile::load("/nonexistent/policy.toml").unwrap_err().starts_with("/nonexistent/policy.toml:"));
}

#[test]
fn a_switch_changed_where_it_does_nothing_is_refused() {
    let refused = |base: &str, sets: &[&str]| {
        let sets: Vec<Set> = sets.iter().map(|text| Set::parse(text).unwrap()).collect();
        resolve(named(base), None, &sets).unwrap_err()
    };
    assert_eq!(
        refused("global-lock", &["pcp.batch_scale_max=2"]),
        "pcp.batch_scale_max = 2 does nothing: pcp.enabled is false: there are no pagesets"
    );
    assert!(refused("vanilla-5.17", &["pcp.drain.coalesce_runs=true"]).contains("pcp.drain.two_pass is true"));
    assert!(refused("vanilla-5.17", &["pcp.free_high_capped=true"]).contains("pcp.free_high is off"));
    assert!(refused("revert-highpcp", &["pcp.thp_batch_shift=3"]).contains("pcp.thp_lists is 0"));
    assert!(refused("mainline", &["frag.buddy_bound_free_pages=64"]).contains("frag.fullest_first is false"));
    assert!(refused("mainline", &["frag.parked_frees=true"]).contains("frag.fullest_first is false"));
    // The allocator's rules, beyond the file's: no buddy-bound list to warm, no arena to hand to.
    assert!(refused("mainline", &["pcp.drain.warm_merges=true"]).contains("drain.warm_merges warms"));
    assert!(refused("pagealloc", &["arenas=per-node"]).contains("drain.hand_remote_frees"));
    // The same switches where they act, or set to the base's own value, are fine.
    let fine = |base: &str, sets: &[&str]| {
        let sets: Vec<Set> = sets.iter().map(|text| Set::parse(text).unwrap()).collect();
        resolve(named(base), None, &sets)
    };
    assert!(fine("mainline", &["pcp.drain.coalesce_runs=true"]).is_ok());
    assert!(fine("mainline", &["frag.fullest_first=true", "frag.buddy_bound_free_pages=64"]).is_ok());
    assert!(fine("mainline", &["frag.fullest_first=true", "frag.parked_frees=true"]).is_ok());
    assert!(fine("pagealloc", &["frag.parked_frees=false"]).is_ok());
    assert!(fine("global-lock", &["pcp.batch_scale_max=5"]).is_ok());
    assert!(fine("global-lock", &["pcp.enabled=true", "pcp.batch_scale_max=2"]).is_ok());
}

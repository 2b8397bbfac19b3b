//! `pagelab` on absurd input, as a new user might type it: zero, huge and negative values,
//! unknown names, impossible machines. Each must end with a one-line error and exit status 2:
//! no panic, no silent run.

use std::process::Command;

const BAD_INVOCATIONS: &[&str] = &[
    "run page_bench03 --cpus 0",
    "run page_bench03 --cpus 100000",
    "run page_bench03 --cpus 4 --order 11 --duration-ms 2",
    "run page_bench03 --cpus 4 --order 255 --duration-ms 2",
    "run page_bench03 --cpus 4 --loop-ns -1 --duration-ms 2",
    "run page_bench03 --cpus 4 --loop-ns 1000001 --duration-ms 2",
    "run kbuild --cpus 4 --compute-per-fault-ns 1000000001 --duration-ms 2",
    "run kbuild --cpus 4 --min-faults 3000 --max-faults 2000 --duration-ms 2",
    "run kbuild --cpus 4 --file-fault-pct 101 --duration-ms 2",
    "run kbuild --cpus 4 --processes-per-cpu 0 --duration-ms 2",
    "run unix-pairs --cpus 4 --duration-ms 2 --format xml",
    "run page_bench03 --cpus 4 --preset nope --duration-ms 2",
    "run page_bench03 --cpus 4 --memory-gib 0 --duration-ms 2",
    "run page_bench03 --cpus 4 --memory-gib 18446744073709551615 --duration-ms 2",
    "run unix-pairs --cpus 4 --message-bytes 0 --duration-ms 2",
    "run netperf-pairs --cpus 4 --message-bytes 0 --duration-ms 2",
    "run page_fault1 --cpus 4 --mode bogus --duration-ms 2",
    "run page_bench03 --cpus -1",
    "run nosuchworkload",
    "run page_bench03 --cpus 4 --topology bogus",
    "run page_bench03 --cpus 300 --topology 2s-224cpu --duration-ms 2",
    "run page_bench03 --cpus 2 --real --memory-gib 0 --duration-ms 2",
    "run page_bench03 --cpus 64 --real --duration-ms 2",
    "run page_bench03 --cpus 4 --duration-ms 2 --fault-trylock-ppm 5",
    "run page_bench03 --cpus 4 --duration-ms 2 --faults --fault-trylock-ppm 1000001",
    "run page_bench03 --cpus 4 --duration-ms 2 --faults --fault-migrate-ppm -1",
    "run page_bench03 --cpus 4 --duration-ms 2 --faults --check-every-ms 0",
    "run page_bench03 --cpus 2 --real --faults --duration-ms 2",
    "reproduce nosuchexperiment --quick --out /tmp/cli-out",
    "reproduce --quick --jobs 0 --out /tmp/cli-out pcp-kbuild",
    "bench bulk --threads-max 0",
    "bench bulk -x 0",
    "bench bulk --order 11 --iterations 1",
    "bench bulk --memory-gib 0 --iterations 1",
    "bench bulk --iterations 0",
    "bench bulk --preset nope --iterations 1",
    "bench frag --order 2 --iterations 1",
    "bench frag --frag-rounds 0 --iterations 1",
    "bench bulk --memory-gib 100000 --iterations 1",
    "bench bulk --memory-gib 18446744073709551615 --iterations 1",
    "bench bulk --allocator buddy-system --memory-gib 100000 --iterations 1",
    "bench bulk --cpus 4 --iterations 1",
    "metadata --cpus 0",
    "metadata --cpus 257",
    "metadata --memory-gib 0",
    "metadata --memory-gib 20000",
    "metadata --preset nope",
    "bench bulk --topology 2s-128cpu --iterations 1",
    "bench bulk --sim --cpus 0 --iterations 1",
    "bench bulk --sim --cpus 1025 --iterations 1",
    "bench bulk --sim --cpus 4 -x 8 --iterations 1",
    "bench bulk --sim --cpus 300 --topology 2s-128cpu --iterations 1",
    "bench bulk --sim --cpus 200 --topology 2s-128cpu --iterations 1",
    "bench bulk --sim --allocator buddy-system --cpus 2 --iterations 1",
    "bench bulk --sim --machine /nonexistent/profile.json --iterations 1",
    "replay CARGO_TOML",
    "calibrate --repeats 0",
    "calibrate --repeats 1 --quick --out /nonexistent/dir/profile.json",
    "zoneinfo --cpus 0 --zone Normal=1000",
    "zoneinfo --cpus 2 --zone garbage",
    "zoneinfo --cpus 2 --zone Normal=abc",
    "zoneinfo --cpus 2 --zone Bogus=1000",
    "zoneinfo --cpus 2 --zone Normal=1000 --percpu-pagelist-high-fraction 3",
    "zoneinfo --cpus 2 --zone Normal=1000 --kernel 9.9",
    "zoneinfo --cpus 2 --zone Normal=1000 --kernel 4.19",
    "zoneinfo --cpus 2 --zone Normal=1000 --kernel 6.8.x",
    "run page_bench03 --numa-stats threshold-31",
    "run page_bench03 --numa-stats threshold-32766",
    "run page_bench03 --numa-stats separate-class-0",
    "run page_bench03 --numa-stats percpu",
    "zoneinfo --cpus 2 --zone Normal=1000 --watermark-scale-factor 0",
    "zoneinfo --cpus 2 --zone Normal=1000 --watermark-scale-factor 100000",
    "zoneinfo --cpus 100000 --zone Normal=1000",
    "bench nosuchbench --iterations 1",
    "bench bulk --allocator nope --iterations 1",
    "bench bulk --format xml --iterations 1",
    "demo --seed -1",
    "reproduce --quick --seed -1 --out /tmp/cli-out pcp-kbuild",
    "run page_bench03 --cpus 4 --duration-ms 0",
    "run page_bench03 --cpus 4 --role-swap-us -5 --duration-ms 2",
    "run page_bench03 --cpus 4 --metadata-layout bogus --duration-ms 2",
    "demo --memory-mib 0",
    "demo --memory-mib 18446744073709551615",
    "presets --bogus",
    "torture --threads 0",
    "torture --threads 100000",
    "torture --seconds 0",
    "torture --seconds -1",
    "torture --check-ms 0",
    "torture --preset nope",
    "torture --preset mainline --preset nope",
    "torture --memory-mib 1",
    "torture --memory-mib 18446744073709551615",
    "replay /nonexistent/trace.txt",
    "replay /nonexistent/trace.txt --llc-kib 4096",
    "replay /nonexistent/trace.txt --pageset-stock bogus",
    "replay /etc/hostname --zoneinfo /etc/hostname",
    "trace capture --out /tmp/cli-out",
    "trace capture --buffer-kib 0 -- true",
    "run page_bench03 --cpus 2 --real --trace /tmp/cli-out/t --duration-ms 2",
    "run page_fault1 --machine CARGO_TOML --duration-ms 2",
    "run page_fault1 --machine /nonexistent/profile.json --duration-ms 2",
    "run page_fault1 --machine REFERENCE_PROFILE --topology 2s-80cpu --duration-ms 2",
    "run page_fault1 --machine REFERENCE_PROFILE --cpus 3 --duration-ms 2",
    "calibrate --check --out /nonexistent/profile.json",
    "calibrate --check --out CARGO_TOML",
    "calibrate --run-loop bogus",
    "machines --format xml",
    "reproduce --quick --machine CARGO_TOML --out /tmp/cli-out highorder-trunc",
    "trace tcp-stream --seconds 0",
    "trace page-fault1 --tasks 0",
    "run page_fault1 --duration-ms 2 --policy CARGO_TOML",
    "run page_fault1 --duration-ms 2 --policy /nonexistent/policy.toml",
    "run page_fault1 --duration-ms 2 --set pcp.batch_scale_max=7",
    "run page_fault1 --duration-ms 2 --set pcp.nosuch=1",
    "run page_fault1 --duration-ms 2 --set pcp.enabled",
    "run page_fault1 --duration-ms 2 --preset global-lock --set pcp.thp_lists=1",
    "run page_fault1 --duration-ms 2 --preset vanilla-5.17 --set pcp.drain.coalesce_runs=true",
    "presets --dump nope",
    "sweep page_fault1 --param nosuch=1,2 -- --duration-ms 2",
    "sweep page_fault1 --param cpus=2,0 -- --duration-ms 2",
    "sweep page_fault1 --param seed=1,2 -- --duration-ms 2",
    "sweep page_fault1 --set pcp.batch_scale_max=4,9 -- --duration-ms 2",
    "sweep page_fault1 --preset global-lock --set pcp.thp_lists=0,1 -- --duration-ms 2",
    "sweep page_fault1 --shard 3/3 -- --duration-ms 2",
    "sweep page_fault1 --shard 1 -- --duration-ms 2",
    "sweep nosuchworkload -- --duration-ms 2",
    "merge /nonexistent/part.json",
    "merge CARGO_TOML",
    "compare CARGO_TOML CARGO_TOML",
    "run page_fault1 --machine-memory --duration-ms 2",
    "run page_fault1 --machine REFERENCE_PROFILE --machine-memory --memory-gib 2 --duration-ms 2",
    "compare /nonexistent/a.json /nonexistent/b.json",
    "compare REFERENCE_PROFILE REFERENCE_PROFILE --fail-on-regression -3",
];

#[test]
fn every_bad_invocation_is_a_clear_error() {
    let out_dir = std::env::temp_dir().join(format!("pagelab-cli-test-{}", std::process::id()));
    let mut failures = Vec::new();
    for invocation in BAD_INVOCATIONS {
        let args: Vec<String> = invocation
            .split_whitespace()
            .map(|arg| match arg {
                "/tmp/cli-out" => out_dir.display().to_string(),
                // A text file with no page-allocator events in it.
                "CARGO_TOML" => concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml").to_string(),
                "REFERENCE_PROFILE" => concat!(env!("CARGO_MANIFEST_DIR"), "/profiles/reference-host.json").to_string(),
                arg => arg.to_string(),
            })
            .collect();
        let output = Command::new(env!("CARGO_BIN_EXE_pagelab")).args(&args).output().expect("run pagelab");
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.code() != Some(2) || stderr.contains("panicked") || stderr.trim().is_empty() {
            failures.push(format!(
                "pagelab {invocation}: status {:?}, stderr {:?}",
                output.status.code(),
                stderr.lines().next()
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&out_dir);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `run --faults` reports what it injected and checked, in both formats, and succeeds when
/// the checker found nothing.
#[test]
fn faults_are_reported_in_the_table_and_the_json() {
    let run = |format: &str| {
        let args = ["run", "unix-pairs", "--cpus", "4", "--duration-ms", "3", "--faults", "--format", format];
        let output = Command::new(env!("CARGO_BIN_EXE_pagelab")).args(args).output().expect("run pagelab");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).expect("utf-8")
    };
    let table = run("table");
    let line = table.lines().find(|line| line.trim_start().starts_with("faults:")).expect("a faults line");
    assert!(line.contains("trylock refusals") && line.contains("migrations"), "{line}");
    assert!(line.ends_with(" 0 violations"), "{line}");
    let json: serde_json::Value = serde_json::from_str(&run("json")).expect("json");
    let faults = &json["faults"];
    assert_eq!(faults["violations"], 0);
    assert!(faults["trylock_refusals"].as_u64().unwrap() > 0 && faults["migrations"].as_u64().unwrap() > 0);
    assert!(faults["checks"].as_u64().unwrap() >= 3);
}

/// `run --vmstat` prints /proc/vmstat after the run, on the simulator and on real threads,
/// and its counts agree with the run's own: every pair allocated and freed one page.
#[test]
fn vmstat_is_printed_after_any_run() {
    for real in [false, true] {
        let mut args = vec!["run", "page_bench03", "--cpus", "1", "--duration-ms", "2", "--memory-gib", "1"];
        args.extend(["--vmstat", "--numa-stats", "threshold-64", "--format", "json"]);
        if real {
            args.push("--real");
        }
        let output = Command::new(env!("CARGO_BIN_EXE_pagelab")).args(&args).output().expect("run pagelab");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
        let vmstat = json["vmstat"].as_str().expect("a vmstat dump");
        let value = |name: &str| -> u64 {
            let line = vmstat.lines().find(|line| line.split(' ').next() == Some(name)).expect(name);
            line.split(' ').nth(1).unwrap().parse().unwrap()
        };
        let pairs = json["work_units"].as_u64().unwrap();
        assert!(pairs > 0);
        assert_eq!((value("numa_hit"), value("numa_local"), value("numa_miss")), (pairs, pairs, 0), "real: {real}");
        assert_eq!((value("pgalloc_normal"), value("pgfree")), (pairs, pairs), "real: {real}");
        assert_eq!(json["numa_stats"], "threshold-64");
    }
}

/// A fresh directory `pagelab-cli-<name>-<pid>` holding `file`, the trace of a simulated
/// kbuild on 2 CPUs for `duration_ms` (with `file.zoneinfo` beside it).
fn traced_kbuild(name: &str, file: &str, duration_ms: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("pagelab-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join(file);
    let run = ["run", "kbuild", "--cpus", "2", "--duration-ms", duration_ms, "--memory-gib", "1", "--trace"];
    let output = Command::new(env!("CARGO_BIN_EXE_pagelab")).args(run).arg(&trace).output().expect("run pagelab");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    (dir, trace)
}

/// `run --trace` writes our events as ftrace text with the machine's zoneinfo beside it, and
/// `replay` of that file, under the run's own preset, computes what the run did: every
/// pageset refill and drain under the zone lock, by order, and every fallback (the counts
/// the replay derives, not the allocations and frees it is fed), and the run's end state.
#[test]
fn a_run_trace_replays_with_its_own_counts() {
    let (dir, trace) = traced_kbuild("trace", "run.trace.gz", "30");
    let zoneinfo = dir.join("run.trace.gz.zoneinfo");
    let output = Command::new(env!("CARGO_BIN_EXE_pagelab"))
        .arg("replay")
        .arg(&trace)
        .arg("--zoneinfo")
        .arg(&zoneinfo)
        .args(["--format", "json"])
        .output()
        .expect("run pagelab");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let (kernel, ours) = (&json["kernel"], &json["ours"]);
    assert!(kernel["alloc_o0"].as_u64().unwrap() > 1000, "{kernel}");
    let derived: Vec<&String> = kernel
        .as_object()
        .unwrap()
        .keys()
        .filter(|key| ["zone_locked_", "pcpu_drain_", "extfrag"].iter().any(|prefix| key.starts_with(prefix)))
        .collect();
    for key in ["zone_locked_refill_o0", "pcpu_drain_o0", "extfrag"] {
        assert!(kernel[key].as_u64().unwrap() > 0, "the run made no {key}: {kernel}");
    }
    for key in derived {
        assert_eq!(kernel[key], ours[key], "{key}");
    }
    assert_eq!(json["skipped"]["free_untracked"], 0);
    assert!(json["zoneinfo_differences"].as_array().unwrap().is_empty(), "{}", json["zoneinfo_differences"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_replay_takes_its_last_level_cache_from_a_machine_profile() {
    let (dir, trace) = traced_kbuild("trace-machine", "run.trace.gz", "30");
    let zoneinfo = dir.join("run.trace.gz.zoneinfo");
    let profile = concat!(env!("CARGO_MANIFEST_DIR"), "/profiles/reference-host.json");
    let (trace, zoneinfo) = (trace.to_str().unwrap(), zoneinfo.to_str().unwrap());
    let replay = |extra: &[&str]| {
        let mut args = vec!["replay", trace, "--zoneinfo", zoneinfo, "--format", "json"];
        args.extend_from_slice(extra);
        let mut json: serde_json::Value = serde_json::from_str(&successful_stdout(&args)).expect("json");
        json.as_object_mut().unwrap().remove("wall_ms");
        json
    };
    // The reference profile's last-level cache, as its caches list it.
    assert_eq!(replay(&["--machine", profile]), replay(&["--llc-kib", "32768", "--llc-cpus", "2"]));
    // A profile that names no last-level cache is refused, not read as none.
    let mut cacheless: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(profile).unwrap()).expect("profile json");
    cacheless["host"]["caches"] = serde_json::json!([]);
    let cacheless_path = dir.join("cacheless.json");
    std::fs::write(&cacheless_path, cacheless.to_string()).unwrap();
    let cacheless_path = cacheless_path.to_str().unwrap();
    for bad in [
        vec!["--machine", "/nonexistent.json"],
        vec!["--machine", cacheless_path],
        vec!["--machine", profile, "--llc-kib", "1", "--llc-cpus", "1"],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_pagelab"))
            .args(["replay", trace, "--zoneinfo", zoneinfo])
            .args(&bad)
            .output()
            .expect("run pagelab");
        assert!(!output.status.success(), "{bad:?} was accepted");
        assert!(!output.stderr.is_empty(), "{bad:?}: no message");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What `pagelab ARGS` printed, once it exited successfully.
fn successful_stdout(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_pagelab")).args(args).output().expect("run pagelab");
    assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("utf-8")
}

/// `--format csv` prints the JSON report flattened to `key,value` rows, for run and bench.
#[test]
fn csv_output_is_the_json_report_flattened() {
    let run = successful_stdout;
    let csv = run(&["run", "page_bench03", "--cpus", "2", "--duration-ms", "2", "--format", "csv"]);
    let json: serde_json::Value =
        serde_json::from_str(&run(&["run", "page_bench03", "--cpus", "2", "--duration-ms", "2", "--format", "json"]))
            .unwrap();
    assert!(csv.starts_with("key,value\n"), "{csv}");
    let row = format!("work_units,{}\n", json["work_units"]);
    assert!(csv.contains(&row), "{row} in {csv}");
    let bench =
        run(&["bench", "bulk", "--iterations", "1", "--threads-max", "1", "--memory-gib", "1", "--format", "csv"]);
    assert!(bench.starts_with("key,value\n") && bench.contains("0.allocator,"), "{bench}");
}

/// Every command that prints results takes `--format json` and `--format csv`: JSON that
/// parses, CSV rows of its numbers.
#[test]
fn every_result_printing_command_has_json_and_csv() {
    let run = successful_stdout;
    let commands: [(&[&str], &str); 7] = [
        (&["torture", "--seconds", "1", "--threads", "2", "--memory-mib", "64"], "0.violations,0"),
        (&["demo", "--memory-mib", "64"], "census.managed_pages,"),
        (&["zoneinfo", "--cpus", "2", "--zone", "Normal=100000"], "0.pagesets.1.batch,"),
        (&["presets"], "0.name,vanilla-5.17"),
        (&["experiments"], "0.name,pcp-kbuild"),
        (&["metadata"], "0.parts_bytes.frame_records,"),
        (&["machines"], "0.name,reference-host"),
    ];
    for (command, row) in commands {
        let json = run(&[command, &["--format", "json"]].concat());
        let parsed: serde_json::Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{command:?}: {e}"));
        assert!(parsed.is_array() || parsed.is_object(), "{command:?}");
        let csv = run(&[command, &["--format", "csv"]].concat());
        assert!(csv.starts_with("key,value\n") && csv.contains(row), "{command:?}: {row} in {csv}");
    }
}

/// A capture directory with zoneinfo samples marked in the trace: `replay` finds the
/// snapshot and the samples beside the trace, and at the first marker our pagesets, seeded
/// from that snapshot, equal it.
#[test]
fn a_capture_directory_replays_with_its_samples() {
    let (dir, ours) = traced_kbuild("capture", "run.trace", "20");
    let zoneinfo = std::fs::read_to_string(dir.join("run.trace.zoneinfo")).unwrap();
    let text = std::fs::read_to_string(&ours).unwrap();
    let events: Vec<&str> = text.lines().filter(|line| line.contains(": mm_page_")).collect();
    let seconds = |line: &str| line.split(": mm_page_").next().unwrap().rsplit(' ').next().unwrap().to_string();
    let marker = |number: u32, at: &str| {
        format!("        pagelab-9     [000] .....  {at}: tracing_mark_write: pagelab-sample {number}")
    };
    let (first, last) = (seconds(events[0]), seconds(events[events.len() - 1]));
    let trace = [marker(0, &first)]
        .into_iter()
        .chain(events.iter().map(|line| line.to_string()))
        .chain([marker(1, &last)])
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(dir.join("trace.txt"), trace + "\n").unwrap();
    std::fs::write(dir.join("zoneinfo.before"), &zoneinfo).unwrap();
    std::fs::write(dir.join("zoneinfo.samples"), format!("pagelab-sample 0\n{zoneinfo}pagelab-sample 1\n{zoneinfo}"))
        .unwrap();
    let replayed = successful_stdout(&["replay", dir.join("trace.txt").to_str().unwrap(), "--format", "json"]);
    let json: serde_json::Value = serde_json::from_str(&replayed).unwrap();
    let pairs = json["pageset_samples"].as_array().expect("samples paired");
    let at_start: Vec<_> = pairs.iter().filter(|pair| pair["sample"] == 0).collect();
    assert_eq!(at_start.len(), 2, "both CPUs' pagesets: {pairs:?}");
    assert!(at_start.iter().all(|pair| pair["kernel_high"].as_u64().unwrap() > 0), "{pairs:?}");
    for pair in at_start {
        assert_eq!((&pair["ours_count"], &pair["ours_high"]), (&pair["kernel_count"], &pair["kernel_high"]), "{pair}");
    }
    assert!(pairs.iter().any(|pair| pair["sample"] == 1), "the last marker pairs too");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A preset dumped as a policy file, edited and passed back, runs as the preset with that
/// switch changed, and the report names the change.
#[test]
fn a_dumped_preset_edited_runs_with_its_change() {
    let dump = successful_stdout(&["presets", "--dump", "patch7"]);
    assert!(dump.contains("base = \"patch7\"") && dump.contains("\n[pcp.drain]\n"), "{dump}");
    let edited = dump.replace("\nbatch_scale_max = 5 ", "\nbatch_scale_max = 6 ");
    assert_ne!(edited, dump, "the dump has the switch");
    let path = std::env::temp_dir().join(format!("pagelab-policy-{}.toml", std::process::id()));
    std::fs::write(&path, edited).unwrap();
    let file = path.display().to_string();
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "page_fault1", "--cpus", "4", "--duration-ms", "5", "--format", "json"];
        args.extend_from_slice(extra);
        let report: serde_json::Value = serde_json::from_str(&successful_stdout(&args)).unwrap();
        (report["preset"].as_str().unwrap().to_string(), report["work_units"].as_u64().unwrap())
    };
    let (label, _) = run(&["--policy", &file]);
    assert_eq!(label, "patch7 + pcp.batch_scale_max=6");
    // --set comes after the file; back to the preset's own value, the label is the preset.
    let (label, units) = run(&["--policy", &file, "--set", "pcp.batch_scale_max=5"]);
    assert_eq!(label, "patch7");
    assert_eq!(units, run(&["--preset", "patch7"]).1, "the same policy runs the same");
    let _ = std::fs::remove_file(&path);
}

/// A sweep split into shards and merged back is the unsharded sweep, byte for byte; parts
/// missing, doubled or of another sweep are refused.
#[test]
fn a_sharded_sweep_merges_into_the_whole_sweep_byte_for_byte() {
    let dir = std::env::temp_dir().join(format!("pagelab-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str| dir.join(name).display().to_string();
    let sweep = |extra: &[&str]| {
        let mut args = vec!["sweep", "page_fault1", "--preset", "mainline", "--preset", "patch7"];
        args.extend_from_slice(&["--set", "pcp.batch_scale_max=4,6", "--param", "cpus=2,4", "--seeds", "2"]);
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "--duration-ms", "2"]);
        args.iter().map(|arg| arg.to_string()).collect::<Vec<String>>()
    };
    let pagelab = |args: &[String]| Command::new(env!("CARGO_BIN_EXE_pagelab")).args(args).output().unwrap();
    let whole = file("whole.json");
    assert!(pagelab(&sweep(&["--out", &whole])).status.success());
    let mut parts = Vec::new();
    for shard in ["0/3", "1/3", "2/3"] {
        let part = file(&format!("part{}.json", &shard[..1]));
        assert!(pagelab(&sweep(&["--shard", shard, "--out", &part])).status.success());
        parts.push(part);
    }
    let merged = file("merged.json");
    let merge = |parts: &[&String]| {
        let mut args = vec!["merge".to_string()];
        args.extend(parts.iter().map(|part| part.to_string()));
        args.extend(["--out".to_string(), merged.clone()]);
        pagelab(&args)
    };
    assert!(merge(&[&parts[2], &parts[0], &parts[1]]).status.success());
    let whole_bytes = std::fs::read(&whole).unwrap();
    assert!(whole_bytes == std::fs::read(&merged).unwrap(), "the merged parts differ from the whole sweep");
    let document: serde_json::Value = serde_json::from_slice(&whole_bytes).unwrap();
    assert_eq!(document["results"].as_array().unwrap().len(), 16);
    assert_eq!(document["results"][15]["report"]["preset"], "patch7 + pcp.batch_scale_max=6");
    // A part missing, a part twice, a part of another sweep: exit 2, a message.
    let other = file("other.json");
    let mut changed: serde_json::Value = serde_json::from_slice(&std::fs::read(&parts[1]).unwrap()).unwrap();
    changed["sweep"]["seeds"] = 3.into();
    std::fs::write(&other, changed.to_string()).unwrap();
    let refusals = [
        (vec![&parts[0], &parts[1]], "points are in no part"),
        (vec![&parts[0], &parts[1], &parts[2], &parts[2]], "is in two parts"),
        (vec![&parts[0], &other, &parts[2]], "of another sweep"),
    ];
    for (bad, why) in refusals {
        let output = merge(&bad);
        assert_eq!(output.status.code(), Some(2), "{bad:?}");
        assert!(String::from_utf8_lossy(&output.stderr).contains(why), "{bad:?}: {:?}", output.stderr);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `compare` on two files of known runs: means, deviations, the change and Welch's p, and
/// the exit code `--fail-on-regression` sets.
#[test]
fn compare_reports_means_changes_and_significance() {
    let dir = std::env::temp_dir().join(format!("pagelab-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, label: &str, work: &[f64], elapsed: &[f64]| {
        let results: Vec<serde_json::Value> = work
            .iter()
            .zip(elapsed)
            .enumerate()
            .map(|(seed, (work, elapsed))| {
                serde_json::json!({ "index": seed, "params": {}, "report": {
                    "workload": "toy", "preset": label, "cpus": 4, "params": {}, "seed": seed + 1,
                    "work_per_sec": work, "elapsed_s": elapsed } })
            })
            .collect();
        let path = dir.join(name);
        std::fs::write(
            &path,
            serde_json::json!({ "sweep": { "points": results.len() }, "results": results }).to_string(),
        )
        .unwrap();
        path.display().to_string()
    };
    let a = write("a.json", "mainline", &[1.0, 2.0, 3.0, 4.0, 5.0], &[1.0, 1.1, 0.9, 1.0, 1.0]);
    let b = write("b.json", "patch7", &[2.0, 3.0, 4.0, 5.0, 6.0], &[2.0, 2.1, 1.9, 2.0, 2.0]);
    let out = successful_stdout(&["compare", &a, &b]);
    assert!(out.contains("A: mainline (5 runs)   B: patch7 (5 runs)"), "{out}");
    // 3 -> 4: +33.33%, t = 1 on 8 degrees of freedom, p = 0.3466, not significant.
    let work = out.lines().find(|line| line.trim_start().starts_with("work_per_sec")).unwrap();
    assert!(work.contains("+33.33% ") && work.ends_with("0.3466"), "{work}");
    let elapsed = out.lines().find(|line| line.trim_start().starts_with("elapsed_s")).unwrap();
    assert!(elapsed.contains("+100.00%*"), "{elapsed}");
    let pagelab = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_pagelab")).args(args).output().unwrap();
    // Twice the time is a significant regression beyond 50%; the work's gain is not one.
    let gate = pagelab(&["compare", &a, &b, "--fail-on-regression", "50"]);
    assert_eq!(gate.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&gate.stdout).contains("regressions beyond 50%: elapsed_s +100.00%"));
    assert_eq!(pagelab(&["compare", &b, &a, "--fail-on-regression", "50"]).status.code(), Some(0));
    // Files of different configurations share nothing to compare.
    let other = write("c.json", "mainline", &[1.0], &[1.0]);
    let text = std::fs::read_to_string(&other).unwrap().replace("\"cpus\":4", "\"cpus\":8");
    std::fs::write(&other, text).unwrap();
    assert_eq!(pagelab(&["compare", &a, &other]).status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `machine capture` writes this host as a machine file that `run --machine` simulates, on
/// the host's own CPUs and, with `--machine-memory`, its own zones.
#[test]
fn a_captured_host_is_a_machine_to_run() {
    let path = std::env::temp_dir().join(format!("pagelab-machine-{}.json", std::process::id()));
    let file = path.display().to_string();
    let printed = successful_stdout(&["machine", "capture", "--out", &file]);
    assert!(printed.contains("borrowed from the reference host"), "{printed}");
    let profile: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let host_cpus = profile["host"]["cpus"].as_array().unwrap().len() as u64;
    let cpus = host_cpus.to_string();
    let report = successful_stdout(&[
        "run",
        "page_fault1",
        "--machine",
        &file,
        "--machine-memory",
        "--cpus",
        &cpus,
        "--duration-ms",
        "2",
        "--format",
        "json",
    ]);
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["cpus"].as_u64(), Some(host_cpus), "{report}");
    let _ = std::fs::remove_file(&path);
}

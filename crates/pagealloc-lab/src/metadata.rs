//! `pagelab metadata`: the allocator's metadata, part by part, for a machine of a given
//! memory and CPU count under a preset: every table the build places, over the frames.

use clap::Args;
use pagealloc::platform::StdPlatform;
use pagealloc::{AllocatorBuilder, PageAllocator, ZoneType};

#[derive(Args, Debug)]
pub struct MetadataArgs {
    /// Memory of the machine: one Normal zone.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=(u32::MAX as u64 >> 18)))]
    pub memory_gib: u64,
    /// CPUs of the machine.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=256))]
    pub cpus: u64,
    /// A preset of `pagelab presets`: its pagesets, arenas and fullest-first tables count.
    #[arg(long, default_value = "pagealloc", value_parser = crate::preset_arg::parser())]
    pub preset: String,
    #[arg(long, value_enum, default_value = "table")]
    pub format: crate::output_format::OutputFormat,
}

/// The one-line summary of a frame's record, against Linux's struct page.
pub fn metadata_line() -> String {
    format!(
        "frame metadata: {} bytes per 4 KiB frame ({:.2}% of memory; Linux's struct page: 64 bytes, 1.56%)\n",
        pagealloc::FRAME_METADATA_BYTES,
        pagealloc::FRAME_METADATA_BYTES as f64 * 100.0 / 4096.0
    )
}

pub fn show(args: &MetadataArgs) -> Result<(), String> {
    let preset = pagealloc::presets::find(&args.preset).ok_or_else(|| format!("unknown preset '{}'", args.preset))?;
    let builder = AllocatorBuilder::single_zone(ZoneType::Normal, args.memory_gib << 18).policy(preset.policy);
    let parts = PageAllocator::<StdPlatform>::metadata_parts(&builder, args.cpus as usize);
    let per_frame = |bytes: u64| bytes as f64 / parts.spanned_frames.max(1) as f64;
    if args.format != crate::output_format::OutputFormat::Table {
        let named: serde_json::Map<String, serde_json::Value> = parts
            .named()
            .iter()
            .map(|&(name, bytes)| (name.replace([' ', '-'], "_").to_lowercase(), bytes.into()))
            .collect();
        let entry = serde_json::json!({
            "frame_metadata_bytes": pagealloc::FRAME_METADATA_BYTES,
            "frame_bytes": 4096,
            "linux_struct_page_bytes": 64,
            "preset": preset.name,
            "memory_gib": args.memory_gib,
            "cpus": args.cpus,
            "parts_bytes": named,
            "total_bytes": parts.total_bytes(),
            "total_bytes_per_frame": parts.bytes_per_frame(),
        });
        return crate::output_format::print_listing(args.format, vec![entry]);
    }
    print!("{}", metadata_line());
    println!(
        "all of it, preset {}, {} GiB in one Normal zone, {} CPUs (what build_in places):",
        preset.name, args.memory_gib, args.cpus
    );
    println!("  {:<20} {:>14} {:>16}", "part", "bytes", "bytes per frame");
    for (name, bytes) in parts.named() {
        println!("  {name:<20} {bytes:>14} {:>16.4}", per_frame(bytes));
    }
    let total = parts.total_bytes();
    println!(
        "  {:<20} {total:>14} {:>16.4}  ({:.3}% of memory)",
        "total",
        parts.bytes_per_frame(),
        parts.bytes_per_frame() * 100.0 / 4096.0
    );
    Ok(())
}

//! The kernel release whose code *around* the allocator a preset's runs follow (the fault
//! path's locks, RSS counting): the allocator's own rules are the preset's policy.

use pagealloc::sizing::LinuxVersion;

/// The release a preset (name or alias) reproduces; presets beyond Linux follow mainline.
pub fn release_of(preset: &str) -> LinuxVersion {
    let name = pagealloc::presets::find(preset).map_or(preset, |preset| preset.name);
    match name {
        "lru-k1" | "lru-k2" | "lru-k3" | "lru-k4" => LinuxVersion::new(4, 15),
        "vanilla-4.20" | "lowzone" | "boost" | "stall" => LinuxVersion::new(4, 20),
        "vanilla-5.17" | "revert-highpcp" | "highpcp-patch1" | "highpcp-patch2" | "highpcp-patch3"
        | "highpcp-patch4" => LinuxVersion::new(5, 17),
        "highpcp-full" => LinuxVersion::new(5, 18),
        "base" => LinuxVersion::new(6, 6),
        patch if patch.starts_with("patch") => LinuxVersion::new(6, 6),
        _ => LinuxVersion::MAINLINE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_presets_follow_their_release_and_the_rest_mainline() {
        assert_eq!(release_of("lru-k3"), LinuxVersion::new(4, 15));
        assert_eq!(release_of("linux-5.17"), LinuxVersion::new(5, 17), "an alias resolves");
        assert_eq!(release_of("patch7"), LinuxVersion::new(6, 6));
        assert_eq!(release_of("mainline"), LinuxVersion::MAINLINE);
        assert_eq!(release_of("pagealloc"), LinuxVersion::MAINLINE);
    }
}

//! `--preset`: a name or alias from `pagelab presets`, checked while the command line is
//! parsed, so `--help` lists the choices and a wrong name fails before anything runs.

use clap::builder::PossibleValuesParser;

pub fn parser() -> PossibleValuesParser {
    let names = pagealloc::presets::PRESETS
        .iter()
        .flat_map(|preset| std::iter::once(preset.name).chain(preset.aliases.iter().copied()));
    PossibleValuesParser::new(names)
}

/// The kernel release whose code around the allocator a run of `preset` follows: the
/// preset's own ([`pagealloc::presets::Preset::release`]), mainline for a name no preset has.
pub fn release_of(preset: &str) -> pagealloc::sizing::LinuxVersion {
    pagealloc::presets::find(preset).map_or(pagealloc::sizing::LinuxVersion::MAINLINE, |preset| preset.release)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pagealloc::sizing::LinuxVersion;

    #[test]
    fn seed_presets_follow_their_release_and_the_rest_mainline() {
        assert_eq!(release_of("lru-k3"), LinuxVersion::new(4, 15));
        assert_eq!(release_of("stall"), LinuxVersion::new(4, 20));
        assert_eq!(release_of("linux-5.17"), LinuxVersion::new(5, 17), "an alias resolves");
        assert_eq!(release_of("highpcp-full"), LinuxVersion::new(5, 18));
        assert_eq!(release_of("patch7"), LinuxVersion::new(6, 6));
        assert_eq!(release_of("mainline"), LinuxVersion::MAINLINE);
        assert_eq!(release_of("pagealloc"), LinuxVersion::MAINLINE);
        assert_eq!(release_of("a-policy-file.toml"), LinuxVersion::MAINLINE);
    }
}

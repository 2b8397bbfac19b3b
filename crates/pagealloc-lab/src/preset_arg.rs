//! `--preset`: a name or alias from `pagelab presets`, checked while the command line is
//! parsed, so `--help` lists the choices and a wrong name fails before anything runs.

use clap::builder::PossibleValuesParser;

pub fn parser() -> PossibleValuesParser {
    let names = pagealloc::presets::PRESETS
        .iter()
        .flat_map(|preset| std::iter::once(preset.name).chain(preset.aliases.iter().copied()));
    PossibleValuesParser::new(names)
}

//! Policies as files: a named preset as the base, and any switch that `pagelab presets
//! --dump` writes set on top of it, from a TOML file (`--policy FILE`) or from the command
//! line (`--set KEY=VALUE`). Every key and value is checked while the command line is
//! parsed, and a switch set where it changes nothing the allocator does is refused before
//! anything runs.

mod effects;
mod switches;

use pagealloc::policy::Policy;
use pagealloc::presets::Preset;

pub use effects::check_effects;
pub use switches::{Switch, SWITCHES};

/// One switch set to a value already checked against what it accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Set {
    pub key: &'static str,
    pub value: String,
}

impl Set {
    /// `KEY=VALUE`, as `--set` takes it.
    pub fn parse(text: &str) -> Result<Set, String> {
        let (key, value) = text.split_once('=').ok_or_else(|| format!("`{text}` is not KEY=VALUE"))?;
        Set::new(key.trim(), value.trim())
    }

    /// `value` for the switch `key`, checked.
    pub fn new(key: &str, value: &str) -> Result<Set, String> {
        let switch = switches::find(key).ok_or_else(|| unknown_key(key))?;
        (switch.set)(&mut Policy::default(), value).map_err(|why| format!("{key}: {why}"))?;
        Ok(Set { key: switch.key, value: value.to_string() })
    }

    fn apply(&self, policy: &mut Policy) {
        let switch = switches::find(self.key).expect("a set names a switch");
        (switch.set)(policy, &self.value).expect("a set's value was checked when it was made");
    }
}

/// What a policy file says: its base preset, if it names one, and its switches in order.
#[derive(Clone, Debug)]
pub struct PolicyFile {
    pub base: Option<&'static Preset>,
    pub sets: Vec<Set>,
}

impl PolicyFile {
    /// Reads and checks `path` (the `--policy` value parser): every error names the file
    /// and the key.
    pub fn load(path: &str) -> Result<PolicyFile, String> {
        let text = std::fs::read_to_string(path).map_err(|error| format!("{path}: {error}"))?;
        PolicyFile::parse(&text).map_err(|error| format!("{path}: {error}"))
    }

    /// A policy file's text: `base = "PRESET"` and the switches, in tables or dotted keys.
    pub fn parse(text: &str) -> Result<PolicyFile, String> {
        let table: toml::Table = text.parse().map_err(|error: toml::de::Error| error.message().to_string())?;
        let mut file = PolicyFile { base: None, sets: Vec::new() };
        for (key, value) in &table {
            if key == "base" {
                let name = value.as_str().ok_or("base: a preset's name, as a string")?;
                let preset = pagealloc::presets::find(name)
                    .ok_or_else(|| format!("base: no preset `{name}` (see `pagelab presets`)"))?;
                file.base = Some(preset);
            } else {
                file.collect(key, value)?;
            }
        }
        Ok(file)
    }

    /// The switches under `key`: a leaf is one switch, a table holds more.
    fn collect(&mut self, key: &str, value: &toml::Value) -> Result<(), String> {
        let text = match value {
            toml::Value::Table(table) => {
                for (inner, value) in table {
                    self.collect(&format!("{key}.{inner}"), value)?;
                }
                return Ok(());
            }
            toml::Value::Boolean(flag) => flag.to_string(),
            toml::Value::Integer(number) => number.to_string(),
            toml::Value::String(text) => text.clone(),
            _ => return Err(format!("{key}: a switch is a boolean, an integer or a string")),
        };
        if self.sets.iter().any(|set| set.key == key) {
            return Err(format!("{key}: set twice"));
        }
        self.sets.push(Set::new(key, &text)?);
        Ok(())
    }
}

/// The policy a run uses: `preset`'s (or the file's base's), the file's switches, then the
/// command line's, each checked to change something the allocator does.
pub fn resolve(preset: &'static Preset, file: Option<&PolicyFile>, sets: &[Set]) -> Result<Policy, String> {
    let base = file.and_then(|file| file.base).unwrap_or(preset);
    let policy = apply(base, file, sets);
    let all: Vec<&Set> = file.map(|file| file.sets.iter()).into_iter().flatten().chain(sets).collect();
    check_effects(&base.policy, &policy, &all)?;
    // The allocator's own rules, which the builder applies too: refused here, before any run.
    if let Some(why) = policy.inert_switch() {
        return Err(format!("a switch does nothing: {why}"));
    }
    Ok(policy)
}

/// [`resolve`] without the check, for a choice already resolved once.
pub fn apply(preset: &Preset, file: Option<&PolicyFile>, sets: &[Set]) -> Policy {
    let mut policy = file.and_then(|file| file.base).unwrap_or(preset).policy;
    for set in file.map(|file| file.sets.iter()).into_iter().flatten().chain(sets) {
        set.apply(&mut policy);
    }
    policy
}

/// `preset`'s name and every switch where `policy` differs from it, in switch order.
pub fn label(preset: &Preset, policy: &Policy) -> String {
    let mut label = preset.name.to_string();
    for switch in SWITCHES.iter().filter(|switch| (switch.get)(&preset.policy) != (switch.get)(policy)) {
        label.push_str(&format!(" + {}={}", switch.key, (switch.get)(policy)));
    }
    label
}

/// `preset` as a policy file: its base and every switch, grouped in tables.
pub fn dump(preset: &Preset) -> String {
    let mut text = format!(
        "# pagelab policy: every switch of preset `{}` ({})\nbase = \"{}\"\n",
        preset.name, preset.summary, preset.name
    );
    // Each table once, in the order of its first switch; top-level switches first, as a
    // TOML key after a [table] header belongs to that table.
    let section_of = |switch: &Switch| switch.key.rsplit_once('.').map_or("", |(section, _)| section);
    let mut sections: Vec<&str> = vec![""];
    for switch in SWITCHES {
        if !sections.contains(&section_of(switch)) {
            sections.push(section_of(switch));
        }
    }
    for section in sections {
        if !section.is_empty() {
            text.push_str(&format!("\n[{section}]\n"));
        }
        for switch in SWITCHES.iter().filter(|switch| section_of(switch) == section) {
            let name = switch.key.rsplit_once('.').map_or(switch.key, |(_, name)| name);
            let value = (switch.get)(&preset.policy);
            let bare = value.parse::<bool>().is_ok() || value.parse::<i64>().is_ok();
            let value = if bare { value } else { format!("\"{value}\"") };
            text.push_str(&format!("{name} = {value}   # {}\n", switch.accepts));
        }
    }
    text
}

fn unknown_key(key: &str) -> String {
    let section = key.rsplit_once('.').map_or("", |(section, _)| section);
    let near: Vec<&str> = SWITCHES
        .iter()
        .map(|switch| switch.key)
        .filter(|other| other.starts_with(section) && !section.is_empty())
        .collect();
    if near.is_empty() {
        format!("unknown switch `{key}` (`pagelab presets --dump mainline` lists them all)")
    } else {
        format!("unknown switch `{key}`; under `{section}` there are: {}", near.join(", "))
    }
}

#[cfg(test)]
mod tests;

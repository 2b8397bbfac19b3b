//! A sweep's points: the Cartesian product of presets, switch values, `pagelab run`
//! option values and seeds, each a `pagelab run` command line checked before any runs.

use crate::run::RunArgs;

/// One axis: a name and its values, from `NAME=V1,V2,...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Axis {
    pub name: String,
    pub values: Vec<String>,
}

impl Axis {
    pub fn parse(text: &str) -> Result<Axis, String> {
        let (name, values) = text.split_once('=').ok_or_else(|| format!("`{text}` is not NAME=V1,V2,..."))?;
        let values: Vec<String> = values.split(',').map(|value| value.trim().to_string()).collect();
        if name.trim().is_empty() || values.iter().any(String::is_empty) {
            return Err(format!("`{text}`: a name and values, none empty"));
        }
        Ok(Axis { name: name.trim().to_string(), values })
    }
}

/// One point of the sweep: its place in the product and the values it takes.
#[derive(Clone, Debug)]
pub struct Point {
    pub index: usize,
    pub preset: String,
    /// (switch, value) per `--set` axis.
    pub sets: Vec<(String, String)>,
    /// (option, value) per `--param` axis.
    pub params: Vec<(String, String)>,
    pub seed: u64,
}

impl Point {
    /// The point's `pagelab run` command line after `run`.
    pub fn words(&self, workload: &str, policy: Option<&str>, run_args: &[String]) -> Vec<String> {
        let mut words = vec!["pagelab run".to_string(), workload.to_string(), "--preset".into(), self.preset.clone()];
        if let Some(file) = policy {
            words.extend(["--policy".to_string(), file.to_string()]);
        }
        for (key, value) in &self.sets {
            words.extend(["--set".to_string(), format!("{key}={value}")]);
        }
        for (name, value) in &self.params {
            words.extend([format!("--{name}"), value.clone()]);
        }
        words.extend(["--seed".to_string(), self.seed.to_string()]);
        words.extend(run_args.iter().cloned());
        words
    }
}

/// Every point, presets outermost, then each `--set` axis, each `--param` axis, and seeds
/// innermost; the index is the place in that order.
pub fn product(presets: &[String], sets: &[Axis], params: &[Axis], seeds: u64) -> Vec<Point> {
    let axes: Vec<&Axis> = sets.iter().chain(params).collect();
    let mut points = Vec::new();
    for preset in presets {
        let combinations: usize = axes.iter().map(|axis| axis.values.len()).product();
        for combination in 0..combinations {
            // Mixed radix, the last axis fastest.
            let mut rest = combination;
            let mut picked = vec![String::new(); axes.len()];
            for (slot, axis) in axes.iter().enumerate().rev() {
                picked[slot] = axis.values[rest % axis.values.len()].clone();
                rest /= axis.values.len();
            }
            let named = |axis: &Axis, value: &String| (axis.name.clone(), value.clone());
            let point_sets = sets.iter().zip(&picked).map(|(axis, value)| named(axis, value)).collect();
            let point_params =
                params.iter().zip(&picked[sets.len()..]).map(|(axis, value)| named(axis, value)).collect();
            for seed in 1..=seeds {
                let index = points.len();
                points.push(Point {
                    index,
                    preset: preset.clone(),
                    sets: Vec::clone(&point_sets),
                    params: Vec::clone(&point_params),
                    seed,
                });
            }
        }
    }
    points
}

/// Every point's run arguments, checked as `pagelab run` checks them, policy included;
/// the first bad point is the error, before anything runs.
pub fn checked(
    points: &[Point],
    workload: &str,
    policy: Option<&str>,
    run_args: &[String],
) -> Result<Vec<RunArgs>, String> {
    points
        .iter()
        .map(|point| {
            let words = point.words(workload, policy, run_args);
            let args =
                RunArgs::try_parse_words(&words).map_err(|error| format!("{}: {error}", words[1..].join(" ")))?;
            args.preset().map_err(|error| format!("{}: {error}", words[1..].join(" ")))?;
            Ok(args)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_product_runs_presets_then_sets_then_params_then_seeds() {
        let sets = [Axis::parse("pcp.batch_scale_max=4,6").unwrap()];
        let params = [Axis::parse("cpus=2,4,8").unwrap()];
        let points = product(&["mainline".into(), "patch7".into()], &sets, &params, 2);
        assert_eq!(points.len(), 2 * 2 * 3 * 2);
        let first = &points[0];
        assert_eq!((first.preset.as_str(), first.seed), ("mainline", 1));
        assert_eq!(first.sets, [("pcp.batch_scale_max".to_string(), "4".to_string())]);
        assert_eq!(first.params, [("cpus".to_string(), "2".to_string())]);
        assert_eq!(points[1].seed, 2);
        assert_eq!(points[2].params[0].1, "4");
        assert_eq!(points[6].sets[0].1, "6");
        assert_eq!(points[12].preset, "patch7");
        assert!(points.iter().enumerate().all(|(i, point)| point.index == i));
    }

    #[test]
    fn axes_are_name_and_values() {
        assert_eq!(Axis::parse("cpus=8, 16").unwrap().values, ["8", "16"]);
        assert!(Axis::parse("cpus").is_err());
        assert!(Axis::parse("cpus=8,,16").is_err());
        assert!(Axis::parse("=8").is_err());
    }
}

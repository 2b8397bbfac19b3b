//! `reproduce --seeds N`: each preset's rows run with N seeds (the given one and the next
//! N-1) and combined row by row: every metric becomes the seeds' mean, with its sample
//! standard deviation beside it as `<metric>_sd`. One seed leaves the rows as they are.

use std::collections::BTreeMap;

use super::experiment::Row;

/// The suffix of a metric's standard deviation over the seeds.
pub(super) const SD_SUFFIX: &str = "_sd";

/// Rows of several seeds (each seed's rows in the same order) as one set of rows.
pub(super) fn combine(mut per_seed: Vec<Vec<Row>>) -> Result<Vec<Row>, String> {
    if per_seed.len() <= 1 {
        return Ok(per_seed.pop().unwrap_or_default());
    }
    let seeds = per_seed.len();
    let first = per_seed.remove(0);
    if per_seed.iter().any(|rows| rows.len() != first.len()) {
        return Err("seeds gave different numbers of rows".into());
    }
    let mut combined = Vec::with_capacity(first.len());
    for (index, row) in first.into_iter().enumerate() {
        let others: Vec<&Row> = per_seed.iter().map(|rows| &rows[index]).collect();
        let mut metrics = BTreeMap::new();
        for (name, &value) in &row.metrics {
            let values: Vec<f64> = std::iter::once(value)
                .chain(others.iter().filter_map(|other| other.metrics.get(name).copied()))
                .collect();
            let (mean, sd) = crate::stats::mean_and_stddev(&values);
            metrics.insert(name.clone(), mean);
            metrics.insert(format!("{name}{SD_SUFFIX}"), sd);
        }
        let mut params = row.params;
        if let Some(object) = params.as_object_mut() {
            object.insert("seeds".into(), serde_json::json!(seeds));
        }
        combined.push(Row { preset: row.preset, params, metrics });
    }
    Ok(combined)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(score: f64) -> Row {
        Row {
            preset: "p".into(),
            params: serde_json::json!({ "cpus": 2 }),
            metrics: [("score".to_string(), score)].into_iter().collect(),
        }
    }

    #[test]
    fn seeds_combine_into_mean_and_sample_sd() {
        let combined = combine(vec![vec![row(1.0)], vec![row(2.0)], vec![row(3.0)]]).unwrap();
        assert_eq!(combined[0].metrics["score"], 2.0);
        assert_eq!(combined[0].metrics["score_sd"], 1.0);
        assert_eq!(combined[0].params["seeds"], 3);
        let single = combine(vec![vec![row(5.0)]]).unwrap();
        assert_eq!(single[0].metrics.len(), 1, "one seed: the rows as they are");
        assert!(combine(vec![vec![row(1.0)], vec![]]).is_err());
    }
}

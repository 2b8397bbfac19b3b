//! Our rows and the published ones as displayed: columns normalised to the first preset
//! (= 100) as the seeds print them, and the two tables printed one above the other.

use std::collections::BTreeMap;

use super::experiment::{Experiment, Row};
use super::published::PublishedTable;

/// Metrics shown normalised to the first preset (= 100), as the seeds print them.
fn normalised(column: &str) -> bool {
    !(column.contains("pct")
        || column.starts_with("top_pfn")
        || column.contains("pcp_pages")
        || column.starts_with("cycles")
        || column.contains("per_kpair"))
}

/// Rows with normalised metrics replaced by their ratio to the first row; as they are for
/// an experiment whose rows are several parameter points per preset.
pub(super) fn shown_rows(experiment: &Experiment, rows: &[Row]) -> Vec<BTreeMap<String, f64>> {
    if experiment.speedup_of.is_some() || experiment.real_threads {
        rows.iter().map(|row| row.metrics.clone()).collect()
    } else {
        normalise(rows)
    }
}

/// Rows with normalised metrics replaced by their ratio to the first row.
pub(super) fn normalise(rows: &[Row]) -> Vec<BTreeMap<String, f64>> {
    let Some(first) = rows.first() else { return Vec::new() };
    rows.iter()
        .map(|row| {
            row.metrics
                .iter()
                .map(|(column, &value)| {
                    // A standard deviation over seeds is shown on its metric's scale.
                    let metric = column.strip_suffix(super::seeds::SD_SUFFIX).unwrap_or(column);
                    let shown = if normalised(metric) {
                        let base = first.metrics.get(metric).copied().unwrap_or(0.0);
                        if base == 0.0 {
                            0.0
                        } else {
                            value * 100.0 / base
                        }
                    } else {
                        value
                    };
                    (column.clone(), shown)
                })
                .collect()
        })
        .collect()
}

/// Published values as displayed: normalised columns relative to the first row.
pub(super) fn published_shown(table: &PublishedTable) -> Vec<Vec<Option<f64>>> {
    let base_row = table.rows.first().map(|r| r.1);
    table
        .rows
        .iter()
        .map(|(_, values)| {
            table
                .columns
                .iter()
                .zip(values.iter())
                .enumerate()
                .map(|(i, (column, value))| {
                    Some(match base_row {
                        Some(base) if normalised(column) && base[i] != 0.0 => value * 100.0 / base[i],
                        _ => *value,
                    })
                })
                .collect()
        })
        .collect()
}

pub(super) fn print_tables(experiment: &Experiment, rows: &[Row]) {
    let table = experiment.published;
    let shown = shown_rows(experiment, rows);
    println!("\n== {}: {}", experiment.name, experiment.summary);
    if table.rows.is_empty() {
        println!("published: none shown ({})", table.source);
    } else {
        println!("published ({}), normalised columns as printed there:", table.source);
    }
    print!("  {:<16}", "preset");
    for column in table.columns {
        print!(" {column:>18}");
    }
    println!();
    // The 2022 tables print absolute values; they are shown relative to the first row too.
    for ((preset, _), values) in table.rows.iter().zip(published_shown(table)) {
        print!("  {preset:<16}");
        for value in values.into_iter().flatten() {
            print!(" {value:>18.1}");
        }
        println!();
    }
    if experiment.real_threads {
        println!("ours (real threads on this machine; raw values):");
    } else if experiment.speedup_of.is_some() {
        println!("ours (simulated; raw values, speedup_pct against the first preset at the same parameters):");
    } else {
        println!("ours (simulated; normalised columns: first preset = 100):");
    }
    // The real-thread tables name long presets (`mainline+fullest-first`).
    let width = if experiment.real_threads { 24 } else { 16 };
    print!("  {:<width$}", "preset");
    for column in table.columns {
        print!(" {column:>18}");
    }
    println!("  extra");
    for (row, metrics) in rows.iter().zip(&shown) {
        print!("  {:<width$}", row.preset);
        let sd = |column: &str| metrics.get(&format!("{column}{}", super::seeds::SD_SUFFIX)).copied();
        for column in table.columns {
            match (metrics.get(*column), sd(column)) {
                (Some(value), Some(sd)) => print!(" {:>18}", format!("{value:.1}±{sd:.1}")),
                (Some(value), None) => print!(" {value:>18.1}"),
                (None, _) => print!(" {:>18}", "-"),
            }
        }
        let extra: Vec<String> = metrics
            .iter()
            .filter(|(column, _)| {
                !table.columns.contains(&column.as_str()) && !column.ends_with(super::seeds::SD_SUFFIX)
            })
            .map(|(column, value)| match sd(column) {
                Some(sd) => format!("{column}={value:.1}±{sd:.1}"),
                None => format!("{column}={value:.1}"),
            })
            .collect();
        println!("  {}", extra.join(" "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation_divides_by_the_first_row_except_percentages() {
        let row = |preset: &str, score: f64, pct: f64| Row {
            preset: preset.into(),
            params: serde_json::Value::Null,
            metrics: [("score".to_string(), score), ("lock_contend_pct".to_string(), pct)].into_iter().collect(),
        };
        let shown = normalise(&[row("base", 50.0, 10.0), row("patch1", 75.0, 4.0)]);
        assert_eq!(shown[0]["score"], 100.0);
        assert_eq!(shown[1]["score"], 150.0);
        assert_eq!(shown[1]["lock_contend_pct"], 4.0);
    }
}

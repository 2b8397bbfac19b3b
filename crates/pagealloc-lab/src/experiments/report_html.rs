//! `report.html`: one self-contained page of a reproduction, every experiment's tables
//! (ours, then the published figures) and its figure, built from the files the experiments
//! wrote to the output directory.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use std::collections::BTreeMap;

use super::experiment::{Experiment, Row};
use super::table::shown_rows;

/// Writes `out/report.html` for `experiments`, whose JSON and SVG files are in `out`.
pub(super) fn write_report(experiments: &[&Experiment], out: &Path) -> Result<(), String> {
    let mut page = String::from(HEAD);
    page.push_str("<h1>pagelab reproduction</h1>\n<ul class=\"toc\">\n");
    for experiment in experiments {
        let _ = writeln!(page, "<li><a href=\"#{0}\">{0}</a>: {1}</li>", experiment.name, escape(experiment.summary));
    }
    page.push_str("</ul>\n");
    for experiment in experiments {
        section(&mut page, experiment, out)?;
    }
    page.push_str("</body>\n</html>\n");
    let path = out.join("report.html");
    std::fs::write(&path, page).map_err(|error| format!("{}: {error}", path.display()))
}

/// One experiment: its heading, our table, the published one, and the figure.
fn section(page: &mut String, experiment: &Experiment, out: &Path) -> Result<(), String> {
    let read = |extension: &str| {
        let path = out.join(format!("{}.{extension}", experiment.name));
        std::fs::read_to_string(&path).map_err(|error| format!("{}: {error}", path.display()))
    };
    let json: Value = serde_json::from_str(&read("json")?).map_err(|error| format!("{}: {error}", experiment.name))?;
    let _ =
        writeln!(page, "<section id=\"{0}\">\n<h2>{0}</h2>\n<p>{1}</p>", experiment.name, escape(experiment.summary));
    let _ = writeln!(
        page,
        "<p class=\"meta\">{} CPUs, seed {}{}; costs: {}</p>",
        json["cpus"],
        json["seed"],
        if json["quick"] == true { ", quick" } else { "" },
        escape(json["cost_model"].as_str().unwrap_or_default())
    );
    let rows: Vec<Row> =
        serde_json::from_value(json["rows"].clone()).map_err(|error| format!("{}: {error}", experiment.name))?;
    page.push_str("<h3>Ours</h3>\n<p class=\"meta\">As the text tables show them: columns the seeds normalise are relative to the first row (= 100).</p>\n");
    ours_table(page, &rows, &shown_rows(experiment, &rows));
    let published = &json["published"];
    let _ = writeln!(
        page,
        "<h3>Published</h3>\n<p class=\"meta\">{}</p>",
        escape(published["source"].as_str().unwrap_or_default())
    );
    published_table(page, published);
    let _ = writeln!(page, "<figure>{}</figure>\n</section>", read("svg")?);
    Ok(())
}

/// Our rows: the preset, the parameters that differ between rows, and every metric as
/// shown; the parameters every row shares are listed once above.
fn ours_table(page: &mut String, rows: &[Row], shown: &[BTreeMap<String, f64>]) {
    let params = |row: &Row| row.params.as_object().cloned().unwrap_or_default();
    let first = rows.first().map(params).unwrap_or_default();
    let varying: Vec<&String> =
        first.keys().filter(|key| rows.iter().any(|row| params(row).get(*key) != first.get(*key))).collect();
    let shared: Vec<String> =
        first.iter().filter(|(key, _)| !varying.contains(key)).map(|(key, value)| format!("{key}={value}")).collect();
    if !shared.is_empty() {
        let _ = writeln!(
            page,
            "<details><summary>parameters of every row</summary><p class=\"meta\">{}</p></details>",
            escape(&shared.join(", "))
        );
    }
    let mut metrics: Vec<&str> = Vec::new();
    for metric in shown.iter().flat_map(|row| row.keys()) {
        if !metrics.contains(&metric.as_str()) {
            metrics.push(metric);
        }
    }
    page.push_str("<table class=\"ours\">\n<tr><th>preset</th>");
    for name in varying.iter().map(|key| key.as_str()).chain(metrics.iter().copied()) {
        let _ = write!(page, "<th>{}</th>", escape(name));
    }
    page.push_str("</tr>\n");
    for (row, values) in rows.iter().zip(shown) {
        let _ = write!(page, "<tr><td>{}</td>", escape(&row.preset));
        for key in &varying {
            let _ =
                write!(page, "<td>{}</td>", escape(&params(row).get(*key).map(Value::to_string).unwrap_or_default()));
        }
        for metric in &metrics {
            let _ =
                write!(page, "<td>{}</td>", values.get(*metric).map(|v| number(&Value::from(*v))).unwrap_or_default());
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</table>\n");
}

/// The published table as its source gives it.
fn published_table(page: &mut String, published: &Value) {
    page.push_str("<table class=\"published\">\n<tr><th>preset</th>");
    for column in published["columns"].as_array().into_iter().flatten() {
        let _ = write!(page, "<th>{}</th>", escape(column.as_str().unwrap_or_default()));
    }
    page.push_str("</tr>\n");
    for row in published["rows"].as_array().into_iter().flatten() {
        let _ = write!(page, "<tr><td>{}</td>", escape(row[0].as_str().unwrap_or_default()));
        for value in row[1].as_array().into_iter().flatten() {
            let _ = write!(page, "<td>{}</td>", number(value));
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</table>\n");
}

/// A number as tables print it: at most four decimals, trailing zeros dropped.
fn number(value: &Value) -> String {
    match value.as_f64() {
        Some(number) => {
            let text = format!("{number:.4}");
            text.trim_end_matches('0').trim_end_matches('.').to_string()
        }
        None => String::new(),
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

const HEAD: &str = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<title>pagelab reproduction</title>\n<style>\n\
body { font-family: sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem; color: #222; }\n\
table { border-collapse: collapse; margin: 0.5rem 0 1rem; font-size: 0.85rem; }\n\
th, td { border: 1px solid #ccc; padding: 0.2rem 0.5rem; text-align: right; }\n\
th:first-child, td:first-child { text-align: left; }\n\
.meta { color: #666; font-size: 0.85rem; }\n\
figure { margin: 0; } figure svg { max-width: 100%; height: auto; }\n\
section { border-top: 2px solid #ddd; margin-top: 2rem; }\n\
</style>\n</head>\n<body>\n";

#[cfg(test)]
mod tests {
    use super::super::outputs::write_outputs;
    use super::super::registry::EXPERIMENTS;
    use super::*;

    /// Every experiment, with a row of ours per preset, gets its section: heading, our table
    /// with each preset, the published table with its source, and its figure inline.
    #[test]
    fn the_report_has_every_experiments_tables_and_figure() {
        let out = std::env::temp_dir().join(format!("pagelab-report-{}", std::process::id()));
        for experiment in EXPERIMENTS.iter() {
            let rows: Vec<Row> = experiment
                .presets
                .iter()
                .enumerate()
                .map(|(index, preset)| Row {
                    preset: preset.to_string(),
                    params: serde_json::json!({ "seed_param": 1 }),
                    metrics: experiment.published.columns.iter().map(|c| (c.to_string(), 1.0 + index as f64)).collect(),
                })
                .collect();
            write_outputs(experiment, &rows, (true, 1, None), &out).unwrap();
        }
        let all: Vec<&Experiment> = EXPERIMENTS.iter().collect();
        write_report(&all, &out).unwrap();
        let report = std::fs::read_to_string(out.join("report.html")).unwrap();
        for experiment in EXPERIMENTS.iter() {
            let start = report.find(&format!("<section id=\"{}\">", experiment.name)).expect(experiment.name);
            let section = &report[start..start + report[start..].find("</section>").unwrap()];
            let ours = section.find("<table class=\"ours\">").expect("our table");
            let published = section.find("<table class=\"published\">").expect("the published table");
            let figure = section.find("<figure><svg").expect("the figure");
            assert!(ours < published && published < figure, "{}: tables, then the figure", experiment.name);
            for preset in experiment.presets {
                assert!(section.contains(&format!("<td>{}</td>", escape(preset))), "{}: {preset}", experiment.name);
            }
            assert!(section.contains(&escape(experiment.published.source)), "{}: the source", experiment.name);
        }
        std::fs::remove_dir_all(out).ok();
    }
}

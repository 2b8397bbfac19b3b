//! Line charts, drawn with plotters, for experiments whose rows scale one numeric
//! parameter (tasks, CPUs): the parameter on the x axis, a line per preset, a panel per
//! metric. Experiments without such a parameter keep the paired bars of `svg`.

use std::collections::BTreeMap;

use plotters::prelude::*;

use super::registry::Row;

const PANEL: (u32, u32) = (440, 280);
const COLUMNS: usize = 2;

/// The one numeric parameter that varies between rows, if exactly one does (and takes at
/// least two values).
pub(super) fn scaling_parameter(rows: &[Row]) -> Option<String> {
    let first = rows.first()?.params.as_object()?;
    let varying: Vec<&String> = first
        .keys()
        .filter(|key| rows.iter().all(|row| row.params[key.as_str()].is_number()))
        .filter(|key| rows.iter().any(|row| row.params[key.as_str()] != first[key.as_str()]))
        .collect();
    match varying.as_slice() {
        [only] => Some((*only).clone()),
        _ => None,
    }
}

/// The series a row belongs to: its label without the token that names its x value
/// (`lru-k4 batch-56 process x16` at 16 tasks is `lru-k4 batch-56 process`).
fn series_of(row: &Row, x: f64) -> String {
    let names_x = |token: &&str| {
        let digits: String = token.chars().filter(char::is_ascii_digit).collect();
        digits.parse::<f64>().is_ok_and(|value| value == x) && token.len() <= digits.len() + 1
    };
    row.preset.split(' ').filter(|token| !names_x(token)).collect::<Vec<_>>().join(" ")
}

/// One panel per metric of `metrics`, `x` on the x axis (log 2 where it spans a factor of
/// 8 or more), our value on the y axis, a line per series.
pub(super) fn figure(title: &str, rows: &[Row], x: &str, metrics: &[&str]) -> Result<String, String> {
    let mut series: BTreeMap<String, Vec<(f64, &Row)>> = BTreeMap::new();
    for row in rows {
        let value = row.params[x].as_f64().ok_or("the x parameter is numeric")?;
        series.entry(series_of(row, value)).or_default().push((value, row));
    }
    let panels = metrics.len().max(1);
    let size = (PANEL.0 * COLUMNS as u32, 40 + PANEL.1 * panels.div_ceil(COLUMNS) as u32);
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, size).into_drawing_area();
        root.fill(&WHITE).map_err(|error| error.to_string())?;
        let root = root.titled(title, ("sans-serif", 18)).map_err(|error| error.to_string())?;
        let areas = root.split_evenly((panels.div_ceil(COLUMNS), COLUMNS));
        for (index, (area, metric)) in areas.iter().zip(metrics).enumerate() {
            panel(area, &series, x, metric, index == 0)?;
        }
        root.present().map_err(|error| error.to_string())?;
    }
    Ok(text)
}

fn panel(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    series: &BTreeMap<String, Vec<(f64, &Row)>>,
    x: &str,
    metric: &str,
    legend: bool,
) -> Result<(), String> {
    let points = |rows: &Vec<(f64, &Row)>| -> Vec<(f64, f64)> {
        let mut points: Vec<(f64, f64)> =
            rows.iter().filter_map(|(x, row)| row.metrics.get(metric).map(|y| (*x, *y))).collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        points
    };
    let all: Vec<(f64, f64)> = series.values().flat_map(points).collect();
    let (x_min, x_max) = all.iter().fold((f64::MAX, f64::MIN), |(lo, hi), (x, _)| (lo.min(*x), hi.max(*x)));
    let y_max = all.iter().map(|(_, y)| *y).fold(0.0, f64::max).max(1e-9) * 1.1;
    if all.is_empty() {
        return Ok(());
    }
    let caption = (format!("{metric} ({})", unit(metric)), ("sans-serif", 14));
    let mut builder = ChartBuilder::on(area);
    builder.caption(caption.0, caption.1).margin(8).x_label_area_size(32).y_label_area_size(56);
    let log = x_min > 0.0 && x_max / x_min >= 8.0;
    let error = |error: DrawingAreaErrorKind<_>| error.to_string();
    macro_rules! draw {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .light_line_style(WHITE)
                .x_desc(x)
                .y_desc(unit(metric))
                .x_label_formatter(&|x| tick_label(*x, 2))
                .y_label_formatter(&|y| tick_label(*y, 2))
                .draw()
                .map_err(error)?;
            for (index, (name, rows)) in series.iter().enumerate() {
                let colour = Palette99::pick(index).to_rgba();
                let line = points(rows);
                chart
                    .draw_series(LineSeries::new(line.clone(), colour.stroke_width(2)))
                    .map_err(error)?
                    .label(name.as_str())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour.stroke_width(2)));
                chart.draw_series(line.iter().map(|point| Circle::new(*point, 3, colour.filled()))).map_err(error)?;
            }
            if legend {
                chart
                    .configure_series_labels()
                    .position(SeriesLabelPosition::UpperLeft)
                    .border_style(BLACK)
                    .background_style(WHITE.mix(0.8))
                    .label_font(("sans-serif", 10))
                    .draw()
                    .map_err(error)?;
            }
        }};
    }
    if log {
        draw!(builder.build_cartesian_2d((x_min..x_max).log_scale(), 0.0..y_max).map_err(error)?);
    } else {
        draw!(builder.build_cartesian_2d(x_min..x_max.max(x_min + 1.0), 0.0..y_max).map_err(error)?);
    }
    Ok(())
}

/// A tick label: whole numbers plain, large ones with k or M, others to `decimals` places.
pub(super) fn tick_label(value: f64, decimals: usize) -> String {
    let magnitude = value.abs();
    if magnitude >= 1e6 {
        format!("{:.1}M", value / 1e6)
    } else if magnitude >= 1e4 {
        format!("{:.0}k", value / 1e3)
    } else if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.decimals$}")
    }
}

/// The unit a metric's name gives.
fn unit(metric: &str) -> &'static str {
    if metric.ends_with("_pct") {
        "%"
    } else if metric.ends_with("_ms") {
        "ms"
    } else if metric.ends_with("_per_sec") {
        "per second"
    } else if metric.ends_with("_s") {
        "s"
    } else {
        "count"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(label: &str, params: serde_json::Value, faults: f64) -> Row {
        Row { preset: label.into(), params, metrics: BTreeMap::from([("faults_per_sec".to_string(), faults)]) }
    }

    fn scaling_rows() -> Vec<Row> {
        let mut rows = Vec::new();
        for (preset, slope) in [("lru-k1", 1.0), ("lru-k4 batch-56", 2.0)] {
            for tasks in [1u64, 4, 16] {
                let params = serde_json::json!({ "mode": "process", "tasks": tasks });
                rows.push(row(&format!("{preset} process x{tasks}"), params, slope * tasks as f64));
            }
        }
        rows
    }

    #[test]
    fn one_numeric_parameter_that_varies_is_the_x_axis() {
        assert_eq!(scaling_parameter(&scaling_rows()).as_deref(), Some("tasks"));
        let two = [
            row("a", serde_json::json!({ "tasks": 1, "cpus": 2 }), 1.0),
            row("b", serde_json::json!({ "tasks": 2, "cpus": 4 }), 1.0),
        ];
        assert_eq!(scaling_parameter(&two), None, "two numbers vary: no single axis");
        let named = [
            row("a", serde_json::json!({ "stats": "threshold-32" }), 1.0),
            row("b", serde_json::json!({ "stats": "per-cpu" }), 1.0),
        ];
        assert_eq!(scaling_parameter(&named), None, "names are not an axis");
        assert_eq!(series_of(&scaling_rows()[5], 16.0), "lru-k4 batch-56 process");
    }

    #[test]
    fn a_scaling_figure_has_a_line_per_series_and_labelled_axes() {
        let rows = scaling_rows();
        let svg = figure("page_fault1", &rows, "tasks", &["faults_per_sec"]).unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        let wide_lines =
            svg.lines().filter(|line| line.starts_with("<polyline") && line.contains("stroke-width=\"2\"")).count();
        assert_eq!(wide_lines, 2 * 2, "a line per series, and its legend entry");
        let texts: Vec<&str> = svg.lines().map(str::trim).collect();
        for label in ["tasks", "per second", "lru-k4 batch-56 process", "faults_per_sec (per second)"] {
            assert!(texts.contains(&label), "no text {label:?}");
        }
        assert_eq!(
            svg,
            figure("page_fault1", &rows, "tasks", &["faults_per_sec"]).unwrap(),
            "the same bytes each time"
        );
    }
}

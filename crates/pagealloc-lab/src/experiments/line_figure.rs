//! Line charts, drawn with plotters, for experiments whose rows scale one quantity (tasks,
//! CPUs, a threshold): the quantity on the x axis, a line per preset, a panel per metric,
//! and the published values, where there are any, as crosses in their preset's colour.
//! Experiments without such a quantity keep the paired bars of `bar_figure`.

use std::collections::BTreeMap;

use plotters::prelude::*;

use super::experiment::Row;
use super::published::PublishedTable;

const PANEL: (u32, u32) = (440, 280);
const COLUMNS: usize = 2;

/// What a line chart's x axis is.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Axis {
    /// A numeric parameter that varies between rows.
    Param(String),
    /// A text parameter whose values name a number after a dash (`threshold-125`); rows
    /// whose value names none (`per-cpu`) are drawn as flat reference lines.
    Named(String),
    /// Columns named `<metric>_<number>` (`faults_per_sec_8`): one metric over the number.
    Columns(String),
}

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

/// The number a text value names after its last dash (`threshold-125` is 125).
fn named_number(value: &serde_json::Value) -> Option<f64> {
    value.as_str()?.rsplit_once('-')?.1.parse().ok()
}

/// The x axis of `rows` (with `columns`, the published columns), if they scale one
/// quantity: a numeric parameter, a text parameter naming at least three numbers, or
/// columns that all name one metric at several numbers.
pub(super) fn axis(rows: &[Row], columns: &[&str]) -> Option<Axis> {
    if let Some(parameter) = scaling_parameter(rows) {
        return Some(Axis::Param(parameter));
    }
    let first = rows.first()?.params.as_object()?;
    let named = first.keys().find(|key| {
        let mut numbers: Vec<f64> = rows.iter().filter_map(|row| named_number(&row.params[key.as_str()])).collect();
        numbers.sort_by(f64::total_cmp);
        numbers.dedup();
        numbers.len() >= 3
    });
    if let Some(parameter) = named {
        return Some(Axis::Named(parameter.clone()));
    }
    let stems: Vec<&str> = columns.iter().filter_map(|column| Some(column.rsplit_once('_')?.0)).collect();
    let numbered = columns.iter().all(|column| column.rsplit_once('_').is_some_and(|(_, n)| n.parse::<f64>().is_ok()));
    (numbered && columns.len() >= 2 && stems.iter().all(|stem| *stem == stems[0]))
        .then(|| Axis::Columns(stems[0].to_string()))
}

/// The series a row belongs to: its label without the token that names its x value
/// (`lru-k4 batch-56 process x16` at 16 tasks is `lru-k4 batch-56 process`).
fn series_of(row: &Row, x: f64) -> String {
    let names_x = |token: &&str| {
        let digits: String = token.chars().filter(char::is_ascii_digit).collect();
        digits.parse::<f64>().is_ok_and(|value| value == x) && token.len() <= digits.len() + 1
            || named_number(&serde_json::Value::from(*token)) == Some(x)
    };
    row.preset.split(' ').filter(|token| !names_x(token)).collect::<Vec<_>>().join(" ")
}

/// One metric's panel: a line per series, flat reference lines, published crosses.
#[derive(Default)]
struct Panel {
    metric: String,
    lines: BTreeMap<String, Vec<(f64, f64)>>,
    flat: Vec<(String, f64)>,
    published: BTreeMap<String, Vec<(f64, f64)>>,
}

impl Panel {
    /// The x range of its points and the top of its y axis (10% above the highest value);
    /// `None` without points.
    fn extent(&self) -> Option<((f64, f64), f64)> {
        let all: Vec<(f64, f64)> = self.lines.values().chain(self.published.values()).flatten().copied().collect();
        let x_range = all.iter().fold((f64::MAX, f64::MIN), |(lo, hi), (x, _)| (lo.min(*x), hi.max(*x)));
        let flat_max = self.flat.iter().map(|(_, y)| *y).fold(0.0, f64::max);
        let y_max = all.iter().map(|(_, y)| *y).fold(flat_max, f64::max).max(1e-9) * 1.1;
        (!all.is_empty()).then_some((x_range, y_max))
    }
}

/// The panels of `rows` over `axis`: one per metric of `metrics` (the one metric, for
/// columns), with `published`'s values where they sit on the axis.
fn panels(rows: &[Row], axis: &Axis, metrics: &[&str], published: &PublishedTable) -> Vec<Panel> {
    let mut panels: Vec<Panel> = match axis {
        Axis::Columns(metric) => vec![Panel { metric: metric.clone(), ..Panel::default() }],
        _ => metrics.iter().map(|metric| Panel { metric: metric.to_string(), ..Panel::default() }).collect(),
    };
    let column_x = |column: &str| column.rsplit_once('_').and_then(|(_, n)| n.parse::<f64>().ok());
    for panel in &mut panels {
        for row in rows {
            let y = row.metrics.get(&panel.metric).copied();
            match axis {
                Axis::Param(parameter) | Axis::Named(parameter) => {
                    let value = &row.params[parameter.as_str()];
                    match (value.as_f64().or_else(|| named_number(value)), y) {
                        (Some(x), Some(y)) => panel.lines.entry(series_of(row, x)).or_default().push((x, y)),
                        (None, Some(y)) => panel.flat.push((row.preset.clone(), y)),
                        _ => {}
                    }
                }
                Axis::Columns(_) => {
                    let points = row.metrics.iter().filter_map(|(column, y)| Some((column_x(column)?, *y)));
                    panel.lines.entry(row.preset.clone()).or_default().extend(points);
                }
            }
        }
        for (preset, values) in published.rows {
            for (column, value) in published.columns.iter().zip(values.iter()) {
                let x = match axis {
                    Axis::Columns(_) => column_x(column),
                    _ => None,
                };
                if let Some(x) = x.filter(|_| panel.lines.contains_key(*preset)) {
                    panel.published.entry(preset.to_string()).or_default().push((x, *value));
                }
            }
        }
        for points in panel.lines.values_mut().chain(panel.published.values_mut()) {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
    }
    panels
}

/// The x axis's name on the chart.
fn axis_name(axis: &Axis) -> &str {
    match axis {
        Axis::Param(name) | Axis::Named(name) => name,
        Axis::Columns(_) => "tasks",
    }
}

/// One panel per metric of `metrics`, `axis` on the x axis (log 2 where it spans a factor
/// of 8 or more), our values on the y axis, a line per series.
pub(super) fn figure(
    title: &str,
    rows: &[Row],
    axis: &Axis,
    metrics: &[&str],
    published: &PublishedTable,
) -> Result<String, String> {
    let panels = panels(rows, axis, metrics, published);
    let count = panels.len().max(1);
    let size = (PANEL.0 * COLUMNS as u32, 40 + PANEL.1 * count.div_ceil(COLUMNS) as u32);
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, size).into_drawing_area();
        root.fill(&WHITE).map_err(|error| error.to_string())?;
        let root = root.titled(title, ("sans-serif", 18)).map_err(|error| error.to_string())?;
        let areas = root.split_evenly((count.div_ceil(COLUMNS), COLUMNS));
        for (index, (area, panel)) in areas.iter().zip(&panels).enumerate() {
            draw_panel(area, panel, axis_name(axis), index == 0)?;
        }
        root.present().map_err(|error| error.to_string())?;
    }
    Ok(text)
}

fn draw_panel(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    panel: &Panel,
    x: &str,
    legend: bool,
) -> Result<(), String> {
    let Some(((x_min, x_max), y_max)) = panel.extent() else { return Ok(()) };
    let metric = panel.metric.as_str();
    let mut builder = ChartBuilder::on(area);
    let caption = format!("{metric} ({})", unit(metric));
    builder.caption(caption, ("sans-serif", 14)).margin(8).x_label_area_size(32).y_label_area_size(56);
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
            for (index, (name, line)) in panel.lines.iter().enumerate() {
                let colour = Palette99::pick(index).to_rgba();
                chart
                    .draw_series(LineSeries::new(line.clone(), colour.stroke_width(2)))
                    .map_err(error)?
                    .label(name.as_str())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour.stroke_width(2)));
                chart.draw_series(line.iter().map(|point| Circle::new(*point, 3, colour.filled()))).map_err(error)?;
                let published = panel.published.get(name).into_iter().flatten();
                chart
                    .draw_series(published.map(|point| Cross::new(*point, 6, colour.stroke_width(2))))
                    .map_err(error)?;
            }
            for (index, (name, y)) in panel.flat.iter().enumerate() {
                let colour = Palette99::pick(panel.lines.len() + index).to_rgba();
                let style = colour.stroke_width(1);
                chart
                    .draw_series(DashedLineSeries::new(vec![(x_min, *y), (x_max, *y)], 6, 4, style))
                    .map_err(error)?
                    .label(name.as_str())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], style));
            }
            if !panel.published.is_empty() {
                let legend_only = chart.draw_series(std::iter::empty::<Cross<(f64, f64), i32>>()).map_err(error)?;
                legend_only
                    .label("published (crosses)")
                    .legend(|(x, y)| Cross::new((x + 8, y), 5, BLACK.stroke_width(2)));
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
    // Log 2 where the points span a factor of 8 or more.
    if x_min > 0.0 && x_max / x_min >= 8.0 {
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

    const NONE: PublishedTable = PublishedTable { source: "none", columns: &["faults_per_sec"], rows: &[] };

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
        assert_eq!(axis(&named, &[]), None, "nor one number among names");
        assert_eq!(series_of(&scaling_rows()[5], 16.0), "lru-k4 batch-56 process");
    }

    #[test]
    fn a_scaling_figure_has_a_line_per_series_and_labelled_axes() {
        let rows = scaling_rows();
        let axis = axis(&rows, &["faults_per_sec"]).unwrap();
        assert_eq!(axis, Axis::Param("tasks".into()));
        let svg = figure("page_fault1", &rows, &axis, &["faults_per_sec"], &NONE).unwrap();
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
            figure("page_fault1", &rows, &axis, &["faults_per_sec"], &NONE).unwrap(),
            "the same bytes each time"
        );
    }

    #[test]
    fn thresholds_named_in_text_are_an_axis_and_other_designs_flat_lines() {
        let rows: Vec<Row> = ["threshold-32", "threshold-125", "threshold-4096", "per-cpu"]
            .iter()
            .enumerate()
            .map(|(index, stats)| {
                row(&format!("revert-highpcp {stats}"), serde_json::json!({ "numa_stats": stats }), index as f64)
            })
            .collect();
        let axis = axis(&rows, &["faults_per_sec"]).unwrap();
        assert_eq!(axis, Axis::Named("numa_stats".into()));
        let panels = panels(&rows, &axis, &["faults_per_sec"], &NONE);
        assert_eq!(panels[0].lines["revert-highpcp"], [(32.0, 0.0), (125.0, 1.0), (4096.0, 2.0)]);
        assert_eq!(panels[0].flat, [("revert-highpcp per-cpu".to_string(), 3.0)]);
        let svg = figure("page_bench03", &rows, &axis, &["faults_per_sec"], &NONE).unwrap();
        let texts: Vec<&str> = svg.lines().map(str::trim).collect();
        assert!(texts.contains(&"revert-highpcp per-cpu"), "the flat line is in the legend");
    }

    #[test]
    fn numbered_columns_are_an_axis_with_the_published_values_as_crosses() {
        const PUBLISHED: PublishedTable = PublishedTable {
            source: "test",
            columns: &["faults_per_sec_2", "faults_per_sec_8", "faults_per_sec_30"],
            rows: &[("vanilla", &[2.0, 8.0, 25.0]), ("absent", &[1.0, 1.0, 1.0])],
        };
        let metrics = |values: [f64; 3]| {
            PUBLISHED.columns.iter().map(|column| column.to_string()).zip(values).collect::<BTreeMap<_, _>>()
        };
        let rows = vec![
            Row { preset: "vanilla".into(), params: serde_json::json!({}), metrics: metrics([2.1, 7.9, 24.0]) },
            Row { preset: "highpcp".into(), params: serde_json::json!({}), metrics: metrics([2.2, 8.1, 26.0]) },
        ];
        let axis = axis(&rows, PUBLISHED.columns).unwrap();
        assert_eq!(axis, Axis::Columns("faults_per_sec".into()));
        let panels = panels(&rows, &axis, PUBLISHED.columns, &PUBLISHED);
        assert_eq!(panels.len(), 1);
        assert_eq!(panels[0].lines["highpcp"], [(2.0, 2.2), (8.0, 8.1), (30.0, 26.0)]);
        assert_eq!(panels[0].published["vanilla"], [(2.0, 2.0), (8.0, 8.0), (30.0, 25.0)]);
        assert!(!panels[0].published.contains_key("absent"), "a published preset we did not run has no line");
        let svg = figure("page_fault1", &rows, &axis, PUBLISHED.columns, &PUBLISHED).unwrap();
        assert!(svg.contains("published (crosses)"));
    }
}

//! Preset comparisons, drawn with plotters: a panel per published column, the presets
//! down the side, our value as a bar and the published one as a marker on it (both as
//! the tables show them, normalised alike).

use std::collections::BTreeMap;

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

use super::line_figure::tick_label;
use super::published::PublishedTable;

const PANEL_WIDTH: u32 = 400;
const PANELS_PER_ROW: usize = 3;
const OURS: RGBColor = RGBColor(31, 119, 180);
const PUBLISHED: RGBColor = RGBColor(80, 80, 80);

/// `published[i][j]` and `ours[i][j]`: preset i, column j (already normalised for display).
pub fn figure(
    title: &str,
    table: &PublishedTable,
    presets: &[&str],
    published: &[Vec<Option<f64>>],
    ours: &[BTreeMap<String, f64>],
) -> Result<String, String> {
    let columns = table.columns;
    let per_row = PANELS_PER_ROW.min(columns.len().max(1));
    let panel_height = 64 + 22 * presets.len() as u32;
    let panel_rows = columns.len().max(1).div_ceil(per_row);
    let size = (PANEL_WIDTH * per_row as u32, 40 + panel_height * panel_rows as u32 + 24);
    let label_width = presets.iter().map(|preset| preset.len()).max().unwrap_or(8).clamp(8, 30) as u32 * 6 + 10;
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, size).into_drawing_area();
        root.fill(&WHITE).map_err(|error| error.to_string())?;
        let footer = format!("Bars: ours (simulated). Crosses: published, {}", table.source);
        root.draw(&Text::new(footer, (8, size.1 as i32 - 16), ("sans-serif", 11).into_font().color(&PUBLISHED)))
            .map_err(|error| error.to_string())?;
        let root = root.titled(title, ("sans-serif", 16)).map_err(|error| error.to_string())?;
        let (panels, _) = root.split_vertically(size.1 - 64);
        let areas = panels.split_evenly((panel_rows, per_row));
        for (column_index, (area, column)) in areas.iter().zip(columns).enumerate() {
            let values = Panel {
                ours: ours.iter().map(|row| row.get(*column).copied()).collect(),
                published: published.iter().map(|row| row.get(column_index).copied().flatten()).collect(),
            };
            panel(area, column, presets, &values, label_width)?;
        }
        root.present().map_err(|error| error.to_string())?;
    }
    Ok(text)
}

/// One column's values, per preset.
struct Panel {
    ours: Vec<Option<f64>>,
    published: Vec<Option<f64>>,
}

fn panel(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    column: &str,
    presets: &[&str],
    values: &Panel,
    label_width: u32,
) -> Result<(), String> {
    let error = |error: DrawingAreaErrorKind<_>| error.to_string();
    let max = values.ours.iter().chain(&values.published).flatten().fold(1e-9f64, |max, value| max.max(*value));
    let rows = presets.len().max(1) as u32;
    let mut chart = ChartBuilder::on(area)
        .caption(column, ("sans-serif", 13))
        .margin(6)
        .x_label_area_size(22)
        .y_label_area_size(label_width)
        .build_cartesian_2d(0.0..max * 1.15, (0..rows).into_segmented())
        .map_err(error)?;
    // The first preset at the top: preset i sits in segment rows - 1 - i.
    let slot = |index: usize| rows - 1 - index as u32;
    let name = |segment: &SegmentValue<u32>| match segment {
        SegmentValue::CenterOf(segment) if *segment < rows => {
            presets.get((rows - 1 - segment) as usize).copied().unwrap_or_default().to_string()
        }
        _ => String::new(),
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(WHITE)
        .y_labels(presets.len())
        .y_label_formatter(&name)
        .x_label_formatter(&|value| tick_label(*value, 1))
        .label_style(("sans-serif", 10))
        .draw()
        .map_err(error)?;
    let bar = |(index, value): (usize, &Option<f64>)| {
        value.map(|value| {
            let (top, bottom) = (SegmentValue::Exact(slot(index)), SegmentValue::Exact(slot(index) + 1));
            let mut rectangle = Rectangle::new([(0.0, top), (value.max(0.0), bottom)], OURS.filled());
            rectangle.set_margin(4, 4, 0, 0);
            rectangle
        })
    };
    chart.draw_series(values.ours.iter().enumerate().filter_map(bar)).map_err(error)?;
    let marker = |(index, value): (usize, &Option<f64>)| {
        value.map(|value| Cross::new((value, SegmentValue::CenterOf(slot(index))), 5, PUBLISHED.stroke_width(2)))
    };
    chart.draw_series(values.published.iter().enumerate().filter_map(marker)).map_err(error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: PublishedTable =
        PublishedTable { source: "a seed", columns: &["score", "lock_pct"], rows: &[("base", &[100.0, 4.0])] };

    #[test]
    fn a_bar_per_preset_a_cross_per_published_value_and_the_presets_in_order() {
        let ours: Vec<BTreeMap<String, f64>> = [(100.0, 3.0), (120.0, 1.5)]
            .iter()
            .map(|&(score, lock)| BTreeMap::from([("score".to_string(), score), ("lock_pct".to_string(), lock)]))
            .collect();
        let published = vec![vec![Some(100.0), Some(4.0)], vec![None, None]];
        let svg = figure("toy", &TABLE, &["base", "patched"], &published, &ours).unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        let ours_fill = format!("fill=\"#{:02X}{:02X}{:02X}\"", OURS.0, OURS.1, OURS.2);
        let bars = svg.lines().filter(|line| line.starts_with("<rect") && line.contains(&ours_fill)).count();
        assert_eq!(bars, 2 * 2, "a bar per preset in each of two panels");
        let texts: Vec<&str> = svg.lines().map(str::trim).collect();
        // A label's height on the page: the y of the <text> element just before it.
        let height_of = |label: &str| -> f64 {
            let at = texts.iter().position(|text| *text == label).unwrap();
            let element = texts[at - 1];
            let y = element.split(" y=\"").nth(1).unwrap().split('"').next().unwrap();
            y.parse().unwrap()
        };
        assert!(height_of("base") < height_of("patched"), "the first preset at the top");
        assert!(texts.iter().any(|text| text.contains("Crosses: published, a seed")));
        assert_eq!(svg, figure("toy", &TABLE, &["base", "patched"], &published, &ours).unwrap());
    }
}

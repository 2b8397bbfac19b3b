//! A small SVG figure per experiment: one panel per published column, presets down the
//! side, the published value and ours as paired bars (same normalisation as the tables).

use std::collections::BTreeMap;
use std::fmt::Write;

use super::published::PublishedTable;

const PANEL_WIDTH: f64 = 230.0;
const LABEL_WIDTH: f64 = 110.0;
const ROW_HEIGHT: f64 = 30.0;
const TOP: f64 = 56.0;
const PUBLISHED_COLOUR: &str = "#9e9e9e";
const OURS_COLOUR: &str = "#1f77b4";

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// `published[i][j]` and `ours[i][j]`: preset i, column j (already normalised for display).
pub fn figure(
    title: &str,
    table: &PublishedTable,
    presets: &[&str],
    published: &[Vec<Option<f64>>],
    ours: &[BTreeMap<String, f64>],
) -> String {
    let columns = table.columns;
    let width = LABEL_WIDTH + PANEL_WIDTH * columns.len() as f64 + 20.0;
    let height = TOP + ROW_HEIGHT * presets.len() as f64 + 40.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(svg, r#"<text x="8" y="18" font-size="13" font-weight="bold">{}</text>"#, escape(title));
    let _ = writeln!(
        svg,
        r#"<rect x="8" y="28" width="10" height="10" fill="{PUBLISHED_COLOUR}"/><text x="22" y="37">published</text><rect x="92" y="28" width="10" height="10" fill="{OURS_COLOUR}"/><text x="106" y="37">ours (simulated)</text>"#
    );
    for (row, preset) in presets.iter().enumerate() {
        let y = TOP + ROW_HEIGHT * row as f64;
        let _ = writeln!(svg, r#"<text x="8" y="{:.1}">{}</text>"#, y + 17.0, escape(preset));
    }
    for (column_index, column) in columns.iter().enumerate() {
        let x0 = LABEL_WIDTH + PANEL_WIDTH * column_index as f64;
        let values = presets.iter().enumerate().flat_map(|(row, _)| {
            let published_value = published.get(row).and_then(|p| p.get(column_index).copied().flatten());
            let our_value = ours.get(row).and_then(|o| o.get(*column).copied());
            [published_value, our_value]
        });
        let max = values.flatten().fold(1e-9f64, f64::max);
        let bar_space = PANEL_WIDTH - 60.0;
        let _ = writeln!(svg, r#"<text x="{x0:.1}" y="{:.1}" font-weight="bold">{}</text>"#, TOP - 6.0, escape(column));
        for row in 0..presets.len() {
            let y = TOP + ROW_HEIGHT * row as f64;
            let bars = [
                (published.get(row).and_then(|p| p.get(column_index).copied().flatten()), PUBLISHED_COLOUR, 3.0),
                (ours.get(row).and_then(|o| o.get(*column).copied()), OURS_COLOUR, 14.0),
            ];
            for (value, colour, offset) in bars {
                let Some(value) = value else { continue };
                let length = (value.max(0.0) / max * bar_space).max(0.5);
                let _ = writeln!(
                    svg,
                    r#"<rect x="{x0:.1}" y="{:.1}" width="{length:.1}" height="10" fill="{colour}"/><text x="{:.1}" y="{:.1}">{value:.1}</text>"#,
                    y + offset,
                    x0 + length + 3.0,
                    y + offset + 9.0
                );
            }
        }
    }
    let _ = writeln!(
        svg,
        r#"<text x="8" y="{:.1}" fill="dimgray">{}</text>"#,
        height - 12.0,
        escape(&format!("Published: {}", table.source))
    );
    svg.push_str("</svg>\n");
    svg
}

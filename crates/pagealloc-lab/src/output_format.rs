//! How a command prints its report: a table for people, JSON for programs, or the JSON
//! flattened to `key,value` rows (`flat_csv`). Every command that prints results takes it.

use clap::ValueEnum;

/// How a command prints its report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Table,
    Json,
    /// One `key,value` row per number of the JSON report.
    Csv,
}

/// Prints a report as `format` asks: `table` writes the people's form; JSON is `report`
/// pretty-printed; CSV is `report` flattened (`flat_csv`). The one place a command's
/// output is dispatched.
pub fn print_report<T: serde::Serialize + ?Sized>(
    format: OutputFormat,
    report: &T,
    table: impl FnOnce() -> Result<(), String>,
) -> Result<(), String> {
    match format {
        OutputFormat::Table => table(),
        OutputFormat::Json => print_json(report),
        OutputFormat::Csv => crate::flat_csv::print(&report),
    }
}

/// A listing (experiments, presets, metadata entries) as a JSON array, or as CSV rows when
/// asked; the listing commands print their tables themselves.
pub fn print_listing(format: OutputFormat, items: Vec<serde_json::Value>) -> Result<(), String> {
    let listing = serde_json::Value::Array(items);
    match format {
        OutputFormat::Csv => crate::flat_csv::print(&listing),
        OutputFormat::Table | OutputFormat::Json => print_json(&listing),
    }
}

fn print_json<T: serde::Serialize + ?Sized>(report: &T) -> Result<(), String> {
    println!("{}", serde_json::to_string_pretty(report).map_err(|error| error.to_string())?);
    Ok(())
}

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

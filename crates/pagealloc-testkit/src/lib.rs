//! Test scaffolding shared by the workspace's crates (a dev-dependency only).
//!
//! - [`layers`]: reads a crate's sources and checks that its modules import only downward,
//!   file by file, with no cycle between files.

pub mod layers;

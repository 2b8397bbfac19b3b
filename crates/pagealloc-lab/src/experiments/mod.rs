//! The seeds' experiments: presets x parameters run on the simulator, our table printed
//! beside the published one, JSON, CSV and an SVG figure written to an output directory.
//!
//! Every experiment uses the single calibration of `pagealloc-sim`; nothing is fitted per
//! experiment. The seeds measured Linux, so every reproduction charges frame metadata as
//! Linux lays it out (a 64-byte `struct page` per frame,
//! [`REPRODUCTION_LAYOUT`](simulate::REPRODUCTION_LAYOUT)). Normalised columns follow the
//! seed (the first preset = 100).

mod bar_figure;
mod experiment;
mod frag_thpcompact;
mod frag_thpfioscale;
mod frag_thpfioscale_sweep;
mod kbuild;
mod line_figure;
mod llfree_frag;
mod lru_page_fault;
mod netperf;
mod ordered;
mod outputs;
mod page_fault;
mod pairs;
mod published;
mod registry;
mod report_html;
mod reproduce;
mod run_memo;
mod seeds;
mod simulate;
mod table;
mod trunc;
mod vmstat;

pub use registry::EXPERIMENTS;
pub use reproduce::{reproduce, Plan};

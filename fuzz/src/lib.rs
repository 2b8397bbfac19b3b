//! Shared code of the fuzz targets (`fuzz_targets/`): the structured inputs, decoded from
//! libFuzzer's bytes with `arbitrary`, the checks each target runs, and the seed corpus
//! generator (`examples/seed_corpus.rs`) with the encoder it needs.

pub mod description;
pub mod encode;
mod frames;
pub mod operations;
pub mod seeds;
mod shortcuts;

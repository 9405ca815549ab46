//! Reads: every report and API answered from raw events, segments and rollups, checked against the reference counters.
//!
//! One test binary of several areas (each a module), so CI links it once.

// The query handler's futures nest deeply: laying out goals_rich's
// `check` exceeds the default depth.
#![recursion_limit = "256"]

mod affiliates;
mod annotations;
mod conversions;
mod engagement;
mod events_api;
mod funnels;
mod goals_rich;
mod hot_site;
mod journeys;
mod overview;
mod props;
mod query;
mod read_paths;
mod revenue;
mod rollup;
mod segment_layout;
mod segments_saved;
mod share;
mod sources;
mod stats_api;
mod transfer;
mod visits;
mod vitals;

//! The drawings of the pages, server-rendered as inline SVG with no chart library and no
//! script: the throughput charts (`charts.rs`) and the map of zones (`map.rs`) of the
//! Transfers page. The geometry is a few functions, each tested where it is written.

pub mod charts;
pub mod map;

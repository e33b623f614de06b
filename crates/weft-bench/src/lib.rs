//! `weft bench`: measures a zone the way seeds/003 and seeds/002 measured iRODS and Globus,
//! through the REST API like any client, and writes what it found as JSON, CSV, SVG plots
//! and a Markdown report.

pub mod bench;
pub mod load;
pub mod model;
pub mod peers;
pub mod plot;
pub mod procstat;
pub mod report;
pub mod run;
pub mod scenarios;
pub mod stats;

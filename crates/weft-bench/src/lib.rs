//! `weft bench`: measures a zone the way Hünich & Müller-Pfefferkorn measured iRODS and
//! Liu et al. modelled Globus transfers ([`scenarios::IRODS_ANALYSIS`],
//! [`scenarios::CONNECTOR_MODEL`]), through the REST API like any client, and writes what
//! it found as JSON, CSV, SVG plots and a Markdown report.

pub mod bench;
pub mod load;
pub mod model;
pub mod mount;
pub mod peers;
pub mod plot;
pub mod procstat;
pub mod report;
pub mod run;
pub mod scenarios;
pub mod stats;

//! Background work: the one loop every worker runs in, and the leases that make each unit
//! of work run on exactly one server of the zone.

pub(crate) mod leases;
pub(crate) mod worker;

pub use leases::LEASE_TTL_DEFAULT;
pub use worker::{Phase, WorkerStatus};

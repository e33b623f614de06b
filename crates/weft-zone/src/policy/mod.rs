//! Policies and QoS: rules administrators load, the engine that carries them out, and the
//! QoS requirements it keeps fulfilled.

pub(crate) mod engine;
pub(crate) mod qos;
pub(crate) mod rules;

pub use qos::QosInfo;
pub use rules::{describe, describe_trigger, ActionTest, PolicyRuleInfo, RuleStatus, RuleTest};
pub use weft_catalog::{PolicyTask, QosId, QosRecord};
pub use weft_policy::{Action, QosExpr, Rule, Trigger};

use crate::Zone;
use std::sync::Arc;

/// The zone's policies and QoS requirements; borrowed from the zone with [`Zone::policy`].
#[derive(Clone, Copy)]
pub struct Policy<'a> {
    pub(crate) zone: &'a Arc<Zone>,
}

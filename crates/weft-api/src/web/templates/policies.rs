//! The Policies page: the loaded rules with their tasks by state and the causes of the
//! latest failures (administrators), and the QoS requirements with their status and reason.

use super::state;
use super::{layout_in, time, PageUser, Section};
use axum::response::Html;
use maud::html;
use weft_types::TaskState;
use weft_zone::policy::{describe, describe_trigger, PolicyRuleInfo, QosInfo, RuleStatus};

pub struct Policies<'a> {
    /// The rules and their status; `None` for users who are not administrators.
    pub rules: Option<(&'a [PolicyRuleInfo], &'a [RuleStatus])>,
    pub qos: &'a [QosInfo],
    /// Where the QoS requirements shown apply: the zone for administrators, else the
    /// user's home.
    pub qos_scope: &'a str,
}

pub fn page(user: &PageUser<'_>, v: &Policies<'_>) -> Html<String> {
    let main = html! {
        div.heading { h1 { "Policies and QoS" } }
        section aria-labelledby="rules-title" {
            h2 #rules-title { "Rules" }
            @match v.rules {
                None => {
                    p.hint { "The zone's rules are loaded and read by its administrators (" code { "weft policy apply" } "). Your QoS requirements are below." }
                }
                Some(([], _)) => {
                    p.empty { "No rules loaded. Load a policy file with " code { "weft policy apply FILE" } "." }
                }
                Some((rules, status)) => {
                    div.table-scroll {
                        table.rules {
                            thead {
                                tr {
                                    th scope="col" { "Rule" } th scope="col" { "When" } th scope="col" { "Then" }
                                    th scope="col" { "Last run" } th scope="col" { "Tasks" }
                                }
                            }
                            tbody {
                                @for r in rules {
                                    @let st = status.iter().find(|s| s.rule == r.rule.name);
                                    tr data-rule=(r.rule.name) {
                                        td.name { (r.rule.name) }
                                        td { (describe_trigger(&r.rule.trigger)) }
                                        td { @for (i, a) in r.rule.actions.iter().enumerate() { @if i > 0 { br; } (describe(a)) } }
                                        td.when { @if let Some(t) = r.last_run { (time(t)) } @else { span.muted { "not yet" } } }
                                        td.tasks {
                                            @for s in TaskState::ALL {
                                                @let n = st.and_then(|st| st.counts.iter().find(|(k, _)| k == s)).map_or(0, |(_, n)| *n);
                                                span.task-count { (state(s.as_str())) " " (n) } " "
                                            }
                                        }
                                    }
                                    @if let Some(st) = st.filter(|st| !st.failures.is_empty()) {
                                        tr.failures {
                                            td colspan="5" {
                                                p.muted { "Latest failures" }
                                                ul.causes {
                                                    @for f in &st.failures {
                                                        li {
                                                            code { (f.path.as_str()) } " — "
                                                            (f.error.as_deref().unwrap_or("failed")) " "
                                                            span.muted { "(" (f.attempts) " attempts, " (time(f.updated)) ")" }
                                                        }
                                                    }
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        section aria-labelledby="qos-title" {
            h2 #qos-title { "QoS requirements" span.muted { " on or below " code { (v.qos_scope) } } }
            @if v.qos.is_empty() {
                p.empty { "No QoS requirements. Add one with " code { "weft qos add PATH 'replicas=2'" } "." }
            } @else {
                div.table-scroll {
                    table.qos {
                        thead {
                            tr {
                                th scope="col" { "Path" } th scope="col" { "Requirement" } th scope="col" { "Status" }
                                th scope="col" { "Reason" } th scope="col" { "Evaluated" }
                            }
                        }
                        tbody {
                            @for q in v.qos {
                                tr data-qos=(q.record.id) {
                                    td.path { (q.record.path.as_str()) }
                                    td { code { (q.record.expression) } }
                                    td { (state(q.record.status.as_str())) }
                                    td.cause { (q.record.reason) }
                                    td.when { @if let Some(t) = q.record.evaluated { (time(t)) } @else { span.muted { "not yet" } } }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    layout_in(Section::Policies, "Policies", Some(user), user.zone, main)
}

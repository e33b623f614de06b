//! Domain values to wire values.

use weft_types::wire::{AclWire, AvuWire, NodeStat, PrincipalWire, ReplicaWire, ResourceWire};
use weft_types::{FileState, TransferState};
use weft_zone::access::Principal;
use weft_zone::namespace::{Avu, Node, NodeInfo, ReplicaInfo};
use weft_zone::resources::ResourceInfo;

pub fn node(n: &Node) -> NodeStat {
    NodeStat {
        path: n.path.to_string(),
        name: n.path.name().to_owned(),
        kind: n.kind.as_str().to_owned(),
        size: n.size as u64,
        checksum: n.checksum.as_ref().map(|c| c.to_string()),
        owner: n.owner.to_string(),
        created: n.created,
        modified: n.modified,
        replicas: Vec::new(),
        pid: None,
        access: None,
    }
}

pub fn node_info(i: &NodeInfo) -> NodeStat {
    NodeStat {
        replicas: i.replicas.iter().map(replica).collect(),
        pid: i.pid.clone(),
        access: i.access.map(|a| a.as_str().to_owned()),
        ..node(&i.node)
    }
}

pub fn replica(r: &ReplicaInfo) -> ReplicaWire {
    ReplicaWire {
        zone: r.zone.clone(),
        resource: r.resource.clone(),
        state: r.state.as_str().to_owned(),
        size: r.size as u64,
        checksum: r.checksum.as_ref().map(|c| c.to_string()),
        created: r.created,
        verified: r.verified,
    }
}

pub fn principal(p: &Principal) -> PrincipalWire {
    PrincipalWire {
        name: p.name.to_string(),
        kind: p.kind.as_str().to_owned(),
        admin: p.is_admin,
        created: p.created,
    }
}

pub fn avu(a: &Avu) -> AvuWire {
    AvuWire {
        attr: a.attr.clone(),
        value: a.value.clone(),
        unit: a.unit.clone(),
    }
}

pub fn acl(a: &weft_zone::access::AclEntry) -> AclWire {
    AclWire {
        principal: a.principal.to_string(),
        kind: a.kind.as_str().to_owned(),
        permission: a.permission.as_str().to_owned(),
    }
}

pub fn import_report(r: weft_zone::resources::ImportReport) -> weft_types::wire::ImportReportWire {
    weft_types::wire::ImportReportWire {
        registered: r.registered,
        updated: r.updated,
        unchanged: r.unchanged,
        bytes: r.bytes,
        refused: r.refused,
        refusals: r
            .refusals
            .into_iter()
            .map(|f| weft_types::wire::RefusalWire {
                path: f.key,
                why: f.why,
            })
            .collect(),
    }
}

pub fn resource(r: &ResourceInfo) -> ResourceWire {
    ResourceWire {
        name: r.resource.name.to_string(),
        kind: r.resource.kind.as_str().to_owned(),
        tier: r.resource.tier.clone(),
        default: r.resource.is_default,
        settings: r.settings.clone(),
    }
}

pub fn peer_zone(p: &weft_zone::federation::PeerInfo) -> weft_types::wire::PeerZoneWire {
    use weft_zone::federation::Reachability;
    let (reachable, rtt_ms, version, error) = match &p.reachability {
        Some(Reachability::Up { rtt, version }) => {
            (true, Some(rtt.as_secs_f64() * 1e3), Some(version.clone()), None)
        }
        Some(Reachability::Down { cause }) => (false, None, None, Some(cause.clone())),
        None => (false, None, None, Some("not probed".into())),
    };
    weft_types::wire::PeerZoneWire {
        name: p.name.to_string(),
        url: p.url.clone(),
        created: p.created,
        reachable,
        rtt_ms,
        version,
        error,
    }
}

pub fn transfer_file(f: &weft_zone::transfers::TransferFile) -> weft_types::wire::TransferFileWire {
    weft_types::wire::TransferFileWire {
        seq: f.seq,
        source: f.source.to_string(),
        destination: f.destination.to_string(),
        size: f.size,
        state: f.state.to_string(),
        bytes_done: f.bytes_done,
        attempts: f.attempts,
        error: f.error.as_ref().map(ToString::to_string),
        checksum: f.checksum.as_ref().map(ToString::to_string),
    }
}

pub fn transfer(t: &weft_zone::transfers::TransferInfo) -> weft_types::wire::TransferWire {
    let r = &t.record;
    let count = |state: FileState| {
        t.counts
            .files_by_state
            .iter()
            .find(|(s, _)| *s == state)
            .map_or(0, |(_, n)| *n)
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let elapsed_s = r
        .started
        .map(|s| (r.finished.unwrap_or(now) - s).max(1) as f64 / 1e3);
    let rate = elapsed_s.map(|e| t.counts.bytes_done as f64 / e);
    let left = r.bytes_total.saturating_sub(t.counts.bytes_done);
    let eta = match (r.state, rate) {
        (TransferState::Active, Some(rate)) if rate > 0.0 => Some(left as f64 / rate),
        _ => None,
    };
    weft_types::wire::TransferWire {
        id: r.id.to_string(),
        owner: r.owner.to_string(),
        state: r.state.to_string(),
        error: r.error.clone(),
        sources: t.spec.sources.clone(),
        destination: t.spec.destination.clone(),
        files_total: r.files_total,
        files_done: count(FileState::Done),
        files_skipped: count(FileState::Skipped),
        files_failed: count(FileState::Failed),
        bytes_total: r.bytes_total,
        bytes_done: t.counts.bytes_done,
        attempts: t.counts.attempts,
        rate_bytes_per_s: rate,
        eta_s: eta,
        created: r.created,
        started: r.started,
        finished: r.finished,
    }
}

pub fn staging(a: &weft_zone::transfers::StagingInfo) -> weft_types::wire::StagingAreaWire {
    weft_types::wire::StagingAreaWire {
        name: a.name.to_string(),
        kind: a.kind.as_str().to_owned(),
        url: a.url.clone(),
        endpoint: a.endpoint.clone(),
        allow: a.allow.iter().map(|p| p.to_string()).collect(),
        created: a.created,
    }
}

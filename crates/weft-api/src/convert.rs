//! Domain values to wire values.

use weft_types::wire::{AclWire, AvuWire, NodeStat, PrincipalWire, ReplicaWire, ResourceWire};
use weft_zone::{Avu, Node, NodeInfo, Principal, ReplicaInfo, ResourceInfo};

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
    }
}

pub fn node_info(i: &NodeInfo) -> NodeStat {
    NodeStat {
        replicas: i.replicas.iter().map(replica).collect(),
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

pub fn acl(a: &weft_zone::AclEntry) -> AclWire {
    AclWire {
        principal: a.principal.to_string(),
        kind: a.kind.as_str().to_owned(),
        permission: a.permission.as_str().to_owned(),
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

pub fn peer_zone(p: &weft_zone::PeerInfo) -> weft_types::wire::PeerZoneWire {
    use weft_zone::Reachability;
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

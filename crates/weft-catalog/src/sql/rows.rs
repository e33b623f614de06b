//! Column lists and row decoding shared by the statements. Columns are read by position, in
//! the order of the `*_COLS` constants.

use crate::{
    Node, OidcClaims, PeerZone, Principal, PrincipalKind, RemoteReplica, Replica, Resource, Sealer,
    StagingArea, StoreSettingsJson, TokenRecord, TransferFile, TransferRecord, TransferSpecJson,
};
use sqlx::any::AnyRow;
use sqlx::{Decode, Row, Type};
use weft_types::{
    Checksum, Endpoint, Error, ErrorCode, LogicalPath, NodeKind, PrincipalName, ReplicaState, ResourceKind,
    ResourceName, StagingName, TransferId, ZoneName,
};

pub(crate) const NODE_COLS: &str =
    "n.id, n.parent_id, n.path, n.kind, n.size, n.checksum, n.owner_id, p.name, n.created, n.modified";
pub(crate) const NODE_FROM: &str = "nodes n JOIN principals p ON p.id = n.owner_id";

pub(crate) const PRINCIPAL_COLS: &str = "p.id, p.name, p.kind, p.is_admin, p.created";

pub(crate) const TOKEN_COLS: &str = "t.id, t.user_id, t.label, t.created, t.expires";

pub(crate) const RESOURCE_COLS: &str = "s.id, s.name, s.kind, s.config, s.tier, s.is_default, s.created";

pub(crate) const ZONE_COLS: &str = "name, url, secret, created";
pub(crate) const STAGING_COLS: &str = "name, kind, url, settings, allow, created";

pub(crate) const TRANSFER_COLS: &str = "t.id, t.owner_id, p.name, t.spec, t.state, t.error, t.files_total, \
     t.bytes_total, t.created, t.started, t.finished, t.via_zone, t.kind, \
     t.oidc_groups, t.oidc_admin";
pub(crate) const TRANSFER_FROM: &str = "transfers t JOIN principals p ON p.id = t.owner_id";
pub(crate) const TRANSFER_FILE_COLS: &str =
    "seq, source, destination, size, state, bytes_done, attempts, error, checksum, resume";

pub(crate) const REPLICA_COLS: &str =
    "r.id, r.node_id, r.resource_id, s.name, r.physical_key, r.size, r.checksum, r.state, r.created, r.verified";
pub(crate) const REPLICA_FROM: &str = "replicas r JOIN resources s ON s.id = r.resource_id";
pub(crate) const REMOTE_REPLICA_COLS: &str =
    "id, node_id, zone, resource, location, size, checksum, state, created, verified";

pub(super) fn corrupt(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::CatalogError,
        format!("catalog holds a bad {what}: {e}"),
    )
}

pub(crate) fn get<'r, T>(row: &'r AnyRow, i: usize) -> Result<T, Error>
where
    T: Decode<'r, sqlx::Any> + Type<sqlx::Any>,
{
    row.try_get(i).map_err(|e| {
        Error::new(
            ErrorCode::CatalogError,
            format!("catalog: reading column {i}: {e}"),
        )
    })
}

/// A row as either way of running a statement hands it over: sqlx's, or the catalog's own
/// SQLite connection (`own.rs`). Decoders taking `impl Columns` serve both.
pub(crate) trait Columns {
    fn column<T: Column>(&self, i: usize) -> Result<T, Error>;
}

/// A value both ways decode.
pub(crate) trait Column:
    rusqlite::types::FromSql + for<'r> Decode<'r, sqlx::Any> + Type<sqlx::Any>
{
}

impl<T> Column for T where T: rusqlite::types::FromSql + for<'r> Decode<'r, sqlx::Any> + Type<sqlx::Any> {}

impl Columns for AnyRow {
    fn column<T: Column>(&self, i: usize) -> Result<T, Error> {
        get(self, i)
    }
}

impl Columns for rusqlite::Row<'_> {
    fn column<T: Column>(&self, i: usize) -> Result<T, Error> {
        self.get(i).map_err(|e| {
            Error::new(
                ErrorCode::CatalogError,
                format!("catalog: reading column {i}: {e}"),
            )
        })
    }
}

/// A boolean column: SQLite hands back integers, PostgreSQL booleans.
pub(crate) fn get_flag(row: &impl Columns, i: usize) -> Result<bool, Error> {
    match row.column::<i64>(i) {
        Ok(v) => Ok(v != 0),
        Err(_) => row.column::<bool>(i),
    }
}

pub(crate) fn checksum(s: Option<String>) -> Result<Option<Checksum>, Error> {
    s.map(|s| Checksum::parse(&s).map_err(|e| corrupt("checksum", e.message)))
        .transpose()
}

pub(crate) fn path(s: &str) -> Result<LogicalPath, Error> {
    LogicalPath::parse(s).map_err(|e| corrupt("path", e.message))
}

pub(crate) fn node_kind(s: &str) -> Result<NodeKind, Error> {
    NodeKind::parse(s).map_err(|e| corrupt("node kind", e.message))
}

pub(crate) fn principal_name(s: &str) -> Result<PrincipalName, Error> {
    PrincipalName::parse(s).map_err(|e| corrupt("principal name", e.message))
}

pub(crate) fn principal_kind(s: &str) -> Result<PrincipalKind, Error> {
    match s {
        "user" => Ok(PrincipalKind::User),
        "group" => Ok(PrincipalKind::Group),
        other => Err(corrupt("principal kind", other)),
    }
}

/// A node from `NODE_COLS`.
pub(crate) fn node(row: &impl Columns) -> Result<Node, Error> {
    let path_s: String = row.column(2)?;
    let kind_s: String = row.column(3)?;
    let owner_s: String = row.column(7)?;
    Ok(Node {
        id: row.column(0)?,
        parent_id: row.column(1)?,
        path: path(&path_s)?,
        kind: node_kind(&kind_s)?,
        size: row.column(4)?,
        checksum: checksum(row.column(5)?)?,
        owner_id: row.column(6)?,
        owner: principal_name(&owner_s)?,
        created: row.column(8)?,
        modified: row.column(9)?,
    })
}

/// A principal from `PRINCIPAL_COLS` starting at column `at`.
pub(crate) fn principal(row: &AnyRow, at: usize) -> Result<Principal, Error> {
    let name: String = get(row, at + 1)?;
    let kind: String = get(row, at + 2)?;
    Ok(Principal {
        id: get(row, at)?,
        name: principal_name(&name)?,
        kind: principal_kind(&kind)?,
        is_admin: get_flag(row, at + 3)?,
        created: get(row, at + 4)?,
    })
}

/// A token from `TOKEN_COLS` starting at column `at`.
pub(crate) fn token(row: &AnyRow, at: usize) -> Result<TokenRecord, Error> {
    Ok(TokenRecord {
        id: get(row, at)?,
        user_id: get(row, at + 1)?,
        label: get(row, at + 2)?,
        created: get(row, at + 3)?,
        expires: get(row, at + 4)?,
    })
}

/// Settings as stored (`seal.rs`), their secrets opened.
fn settings(sealer: &Sealer, stored: &str) -> Result<StoreSettingsJson, Error> {
    Ok(StoreSettingsJson::stored(sealer.open_settings(stored)?))
}

/// A resource from `RESOURCE_COLS`, its settings opened.
pub(crate) fn resource(row: &AnyRow, sealer: &Sealer) -> Result<Resource, Error> {
    let name: String = get(row, 1)?;
    let kind: String = get(row, 2)?;
    let config: String = get(row, 3)?;
    Ok(Resource {
        id: get(row, 0)?,
        name: ResourceName::parse(&name).map_err(|e| corrupt("resource name", e.message))?,
        kind: ResourceKind::parse(&kind).map_err(|e| corrupt("resource kind", e.message))?,
        config: settings(sealer, &config)?,
        tier: get(row, 4)?,
        is_default: get_flag(row, 5)?,
        created: get(row, 6)?,
    })
}

pub(crate) fn zone(row: &AnyRow) -> Result<PeerZone, Error> {
    let name: String = get(row, 0)?;
    Ok(PeerZone {
        name: ZoneName::parse(&name).map_err(|e| corrupt("zone name", e.message))?,
        url: get(row, 1)?,
        secret: get(row, 2)?,
        created: get(row, 3)?,
    })
}

/// A staging area from `STAGING_COLS`, its settings opened.
pub(crate) fn staging(row: &AnyRow, sealer: &Sealer) -> Result<StagingArea, Error> {
    let name: String = get(row, 0)?;
    let kind: String = get(row, 1)?;
    let stored: String = get(row, 3)?;
    let allow: String = get(row, 4)?;
    let allow: Vec<String> =
        serde_json::from_str(&allow).map_err(|e| corrupt("staging allow list", e.to_string()))?;
    Ok(StagingArea {
        name: StagingName::parse(&name).map_err(|e| corrupt("staging area name", e.message))?,
        kind: ResourceKind::parse(&kind).map_err(|e| corrupt("staging area kind", e.message))?,
        url: get(row, 2)?,
        settings: settings(sealer, &stored)?,
        allow: allow
            .iter()
            .map(|p| PrincipalName::parse(p).map_err(|e| corrupt("staging allow list", e.message)))
            .collect::<Result<_, _>>()?,
        created: get(row, 5)?,
    })
}

/// A column holding one of the domain's string forms (a state, a status), parsed.
pub(crate) fn parsed<T: std::str::FromStr<Err = Error>>(
    row: &AnyRow,
    i: usize,
    what: &str,
) -> Result<T, Error> {
    get::<String>(row, i)?
        .parse()
        .map_err(|e: Error| corrupt(what, e.message))
}

fn endpoint(s: &str) -> Result<Endpoint, Error> {
    Endpoint::parse(s).map_err(|e| corrupt("transfer endpoint", e.message))
}

pub(crate) fn transfer(row: &AnyRow) -> Result<TransferRecord, Error> {
    let id = TransferId::new(get::<String>(row, 0)?);
    let owner: String = get(row, 2)?;
    Ok(TransferRecord {
        spec: TransferSpecJson::stored(get(row, 3)?),
        id,
        owner_id: get(row, 1)?,
        owner: PrincipalName::parse(&owner).map_err(|e| corrupt("principal name", e.message))?,
        state: parsed(row, 4, "transfer state")?,
        error: get(row, 5)?,
        files_total: get::<i64>(row, 6)? as u64,
        bytes_total: get::<i64>(row, 7)? as u64,
        created: get(row, 8)?,
        started: get(row, 9)?,
        finished: get(row, 10)?,
        via_zone: get::<Option<String>>(row, 11)?
            .map(|z| ZoneName::parse(&z).map_err(|e| corrupt("zone name", e.message)))
            .transpose()?,
        kind: parsed(row, 12, "transfer kind")?,
        oidc: oidc_claims(row, 13, 14)?,
    })
}

/// The group claims of `claims` as stored (a JSON array of names).
pub(crate) fn oidc_groups(claims: &OidcClaims) -> String {
    serde_json::to_string(&claims.groups).expect("strings serialize")
}

/// The OIDC claims stored in columns `groups` and `admin`; `None` where `groups` is NULL.
pub(crate) fn oidc_claims(row: &AnyRow, groups: usize, admin: usize) -> Result<Option<OidcClaims>, Error> {
    let Some(names) = get::<Option<String>>(row, groups)? else {
        return Ok(None);
    };
    Ok(Some(OidcClaims {
        groups: serde_json::from_str(&names).map_err(|e| corrupt("oidc_groups", e.to_string()))?,
        admin: get_flag(row, admin)?,
    }))
}

pub(crate) fn transfer_file(row: &AnyRow) -> Result<TransferFile, Error> {
    Ok(TransferFile {
        seq: get::<i64>(row, 0)? as u64,
        source: endpoint(&get::<String>(row, 1)?)?,
        destination: endpoint(&get::<String>(row, 2)?)?,
        size: get::<i64>(row, 3)? as u64,
        state: parsed(row, 4, "transfer file state")?,
        bytes_done: get::<i64>(row, 5)? as u64,
        attempts: get::<i64>(row, 6)? as u32,
        error: get::<Option<String>>(row, 7)?.map(|e| Error::parse_recorded(&e)),
        checksum: get::<Option<String>>(row, 8)?
            .map(|c| Checksum::parse(&c).map_err(|e| corrupt("checksum", e.message)))
            .transpose()?,
        resume: get(row, 9)?,
    })
}

pub(crate) fn replica(row: &AnyRow) -> Result<Replica, Error> {
    replica_at(row, 0)
}

/// A replica from `REPLICA_COLS` starting at column `at`.
pub(crate) fn replica_at(row: &AnyRow, at: usize) -> Result<Replica, Error> {
    let resource: String = get(row, at + 3)?;
    let state: String = get(row, at + 7)?;
    Ok(Replica {
        id: get(row, at)?,
        node_id: get(row, at + 1)?,
        resource_id: get(row, at + 2)?,
        resource: ResourceName::parse(&resource).map_err(|e| corrupt("resource name", e.message))?,
        physical_key: get(row, at + 4)?,
        size: get(row, at + 5)?,
        checksum: checksum(get(row, at + 6)?)?,
        state: ReplicaState::parse(&state).map_err(|e| corrupt("replica state", e.message))?,
        created: get(row, at + 8)?,
        verified: get(row, at + 9)?,
    })
}

pub(crate) fn remote_replica(row: &AnyRow) -> Result<RemoteReplica, Error> {
    let zone: String = get(row, 2)?;
    let resource: String = get(row, 3)?;
    let location: String = get(row, 4)?;
    let state: String = get(row, 7)?;
    Ok(RemoteReplica {
        id: get(row, 0)?,
        node_id: get(row, 1)?,
        zone: ZoneName::parse(&zone).map_err(|e| corrupt("zone name", e.message))?,
        resource: ResourceName::parse(&resource).map_err(|e| corrupt("resource name", e.message))?,
        location: path(&location)?,
        size: get(row, 5)?,
        checksum: checksum(get(row, 6)?)?,
        state: ReplicaState::parse(&state).map_err(|e| corrupt("replica state", e.message))?,
        created: get(row, 8)?,
        verified: get(row, 9)?,
    })
}

//! The ids of the catalog's rows, one type per kind of row: a node's id is not a principal's,
//! and the compiler says so. Each wraps the integer the catalog stores (the row's `id`
//! column, or a column that refers to one), unchanged: no schema or stored value depends on
//! these types. The sql layer binds and reads them as that integer (`sql/mod.rs`,
//! [`id_column`](crate::sql::id_column)).

use std::fmt;

macro_rules! ids {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub i64);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl std::str::FromStr for $name {
            type Err = std::num::ParseIntError;

            fn from_str(s: &str) -> Result<$name, Self::Err> {
                s.parse().map($name)
            }
        }

        crate::sql::id_column!($name);
    )*};
}

ids! {
    /// A collection or data object ([`Node`](crate::Node)).
    NodeId;
    /// A user or group ([`Principal`](crate::Principal)); the owner of nodes, transfers and
    /// uploads, the holder of tokens, keys and sessions.
    PrincipalId;
    /// A storage resource of this zone ([`Resource`](crate::Resource)).
    ResourceId;
    /// A replica on a resource of this zone ([`Replica`](crate::Replica)).
    ReplicaId;
    /// A copy held by a federated zone ([`RemoteReplica`](crate::RemoteReplica)).
    RemoteReplicaId;
    /// An API token ([`TokenRecord`](crate::TokenRecord)).
    TokenId;
    /// A change the policy engine reacts to ([`NodeEvent`](crate::NodeEvent)).
    EventId;
    /// A queued action of a policy rule ([`PolicyTask`](crate::PolicyTask)).
    PolicyTaskId;
    /// A QoS requirement ([`QosRecord`](crate::QosRecord)).
    QosId;
    /// An entry of the audit log ([`AuditEntry`](crate::AuditEntry)).
    AuditEntryId;
}

-- A value sealed with the zone's key, kept from the zone's first start on: the catalog
-- names a key of the zone before it holds any other secret, so that a server started with
-- another key (no copy of the zone's key file) is refused at start instead of sealing
-- secrets the other servers cannot open. One row, `name` = 'zone'; a key rotation seals
-- it again like every secret.
CREATE TABLE zone_key (
    name   TEXT PRIMARY KEY,
    sealed TEXT NOT NULL
);

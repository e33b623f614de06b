-- Federated peer zones. `secret` is the shared secret both sides sign zone-to-zone tokens
-- with; it is read by the zone only and never sent with a request.
CREATE TABLE zones (
    name    TEXT    PRIMARY KEY,
    url     TEXT    NOT NULL,
    secret  TEXT    NOT NULL,
    created INTEGER NOT NULL
);

-- Users of a federated zone that an administrator maps to a local user: requests of
-- `remote_user` from `zone` then act as that user instead of the visitor
-- `remote_user#zone`. Gone with the zone or the local user.
CREATE TABLE user_maps (
    zone        TEXT NOT NULL REFERENCES zones (name) ON DELETE CASCADE,
    remote_user TEXT NOT NULL,
    local_id    INTEGER NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    created     INTEGER NOT NULL,
    PRIMARY KEY (zone, remote_user)
);

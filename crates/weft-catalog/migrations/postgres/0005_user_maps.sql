-- Users of a federated zone that an administrator maps to a local user: requests of
-- `remote_user` from `zone` then act as that user instead of the visitor
-- `remote_user#zone`. Gone with the zone or the local user.
CREATE TABLE user_maps (
    zone        TEXT COLLATE "C" NOT NULL REFERENCES zones (name) ON DELETE CASCADE,
    remote_user TEXT COLLATE "C" NOT NULL,
    local_id    BIGINT  NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    created     BIGINT  NOT NULL,
    PRIMARY KEY (zone, remote_user)
);

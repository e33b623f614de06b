-- What a user, or the members of a group together, may store: bytes and objects, on one
-- resource or on all of them (resource_id NULL). What they use is counted from the catalog
-- when a write is about to be accepted, so it is exact whichever server wrote before and
-- whatever crashed.
CREATE TABLE quotas (
    principal_id BIGINT NOT NULL REFERENCES principals(id) ON DELETE CASCADE,
    resource_id  BIGINT REFERENCES resources(id) ON DELETE CASCADE,
    max_bytes    BIGINT,
    max_objects  BIGINT,
    updated      BIGINT NOT NULL
);
CREATE UNIQUE INDEX quotas_key ON quotas (principal_id, coalesce(resource_id, 0));

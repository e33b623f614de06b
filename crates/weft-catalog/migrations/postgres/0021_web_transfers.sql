-- What the web interface's Transfers page needs. Each transfer records who asked for it
-- (a user, a policy rule, a QoS requirement, the scrubber), so that the history can be
-- filtered by it; transfers started by rules before this migration are found through
-- their policy tasks, the scrubber's earlier repairs stay counted as users'.
ALTER TABLE transfers ADD COLUMN kind TEXT NOT NULL DEFAULT 'user'
    CHECK (kind IN ('user', 'policy', 'qos', 'scrubber'));
UPDATE transfers SET kind = 'qos'
    WHERE id IN (SELECT transfer_id FROM policy_tasks WHERE rule LIKE 'qos:%');
UPDATE transfers SET kind = 'policy'
    WHERE kind = 'user' AND id IN (SELECT transfer_id FROM policy_tasks WHERE transfer_id IS NOT NULL);
-- The history is read newest first, by everyone's transfers for an administrator.
CREATE INDEX transfers_created ON transfers (created, id);

-- Bytes transfers moved to (out) and from (in) each peer zone, summed into buckets of
-- `step` milliseconds starting at `at`: minutes kept a day, hours kept 30 days, older
-- buckets deleted as new ones are written, so the table stays bounded by
-- peers x 2 x (1,440 + 720) rows. The server sampling adds into them (one at a time: a lease).
CREATE TABLE throughput (
    step      BIGINT NOT NULL,
    at        BIGINT NOT NULL,
    zone      TEXT    NOT NULL,
    direction TEXT    NOT NULL CHECK (direction IN ('in', 'out')),
    bytes     BIGINT NOT NULL,
    PRIMARY KEY (step, at, zone, direction)
);

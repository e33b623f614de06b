-- What a quota counts of an owner's objects (their number and sizes) read from the index
-- alone: the check in the transaction that registers objects sums them while it holds the
-- catalog's write, so it must not visit each row. It serves every lookup by owner the
-- index it replaces served.
CREATE INDEX nodes_owner_usage ON nodes (owner_id, kind, size);
DROP INDEX nodes_owner;

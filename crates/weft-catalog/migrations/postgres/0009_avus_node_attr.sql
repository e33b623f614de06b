-- Metadata edits look an AVU up by node and attribute (add checks the triple is new, set
-- replaces the attribute). With an index on the node alone, SQLite scanned every AVU of the
-- node per edit: a bulk edit of 10,000 attributes on one object took 9 s, quadratic.
-- The pair still serves lookups by node alone.
DROP INDEX avus_node;
CREATE INDEX avus_node_attr ON avus (node_id, attr);

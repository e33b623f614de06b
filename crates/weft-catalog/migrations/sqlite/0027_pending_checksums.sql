-- A file imported in place is registered before its bytes are read: its replica's (and
-- object's) checksum is NULL until the scrubber reads it, and this is the scrubber's queue
-- of them (issue 43).
CREATE INDEX replicas_pending ON replicas (id) WHERE checksum IS NULL;

-- The federated zone that vouched for a transfer's submitter (a zone token), if any. A
-- transfer runs as the principal that submitted it, decided once at the door: a visitor,
-- or a user of another zone mapped to a local one, stays one in the engine (no staging,
-- no relaying, never an administrator), and `zone rm` cancels what it submitted.
ALTER TABLE transfers ADD COLUMN via_zone TEXT;

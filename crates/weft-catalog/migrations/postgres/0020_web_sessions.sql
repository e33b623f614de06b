-- Sessions of the web interface. The browser holds a random secret in a cookie; the
-- catalog holds only its hash, so that sessions work on every server of a zone and a
-- stolen catalog opens none. A session was opened with an API token and lives no longer
-- than it: deleting the token or its user deletes the session. The CSRF secret is read
-- back at every request, so it is sealed under the zone's key rather than hashed.
CREATE TABLE web_sessions (
    secret_hash TEXT PRIMARY KEY,
    user_id     BIGINT NOT NULL REFERENCES principals(id) ON DELETE CASCADE,
    token_id    BIGINT NOT NULL REFERENCES tokens(id) ON DELETE CASCADE,
    csrf        TEXT NOT NULL,
    created     BIGINT NOT NULL,
    last_seen   BIGINT NOT NULL
);
CREATE INDEX web_sessions_token ON web_sessions (token_id);
CREATE INDEX web_sessions_user ON web_sessions (user_id);

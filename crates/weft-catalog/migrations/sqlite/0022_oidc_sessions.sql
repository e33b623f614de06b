-- A web session may also be opened by signing in with an OIDC issuer: then it has no API
-- token, but the group names and administrator role the issuer's token carried at sign-in
-- (JSON array; a boolean) and an end of its own. SQLite cannot drop a NOT NULL, so the
-- table is made again: sessions open at the upgrade end, and their users sign in again.
DROP TABLE web_sessions;
CREATE TABLE web_sessions (
    secret_hash TEXT PRIMARY KEY,
    user_id     INTEGER NOT NULL REFERENCES principals(id) ON DELETE CASCADE,
    token_id    INTEGER REFERENCES tokens(id) ON DELETE CASCADE,
    oidc_groups TEXT,
    oidc_admin  INTEGER NOT NULL DEFAULT 0,
    expires     INTEGER,
    csrf        TEXT NOT NULL,
    created     INTEGER NOT NULL,
    last_seen   INTEGER NOT NULL,
    CHECK ((token_id IS NULL) <> (oidc_groups IS NULL))
);
CREATE INDEX web_sessions_token ON web_sessions (token_id);
CREATE INDEX web_sessions_user ON web_sessions (user_id);

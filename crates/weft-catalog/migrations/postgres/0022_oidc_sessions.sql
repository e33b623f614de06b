-- A web session may also be opened by signing in with an OIDC issuer: then it has no API
-- token, but the group names and administrator role the issuer's token carried at sign-in
-- (JSON array; a boolean) and an end of its own.
ALTER TABLE web_sessions ALTER COLUMN token_id DROP NOT NULL;
ALTER TABLE web_sessions ADD COLUMN oidc_groups TEXT;
ALTER TABLE web_sessions ADD COLUMN oidc_admin BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE web_sessions ADD COLUMN expires BIGINT;
ALTER TABLE web_sessions ADD CONSTRAINT web_sessions_one_grant
    CHECK ((token_id IS NULL) <> (oidc_groups IS NULL));

-- OIDC identities: the user a token's issuer and subject (`iss`, `sub`) act as. A token is
-- bound to its principal by id, never by the names it carries, so an identity provider's
-- user named like a local user, a group or `user#zone` takes none of them over. Gone with
-- the principal.
CREATE TABLE oidc_identities (
    issuer       TEXT    NOT NULL,
    subject      TEXT    NOT NULL,
    principal_id INTEGER NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    created      INTEGER NOT NULL,
    PRIMARY KEY (issuer, subject)
);
CREATE INDEX oidc_identities_principal ON oidc_identities (principal_id);

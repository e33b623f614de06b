-- A transfer started with an OIDC token runs later, in a worker, without that token: it
-- keeps the group names and administrator role the token carried when it was submitted
-- (JSON array; a boolean), as a web session opened by OIDC sign-in does. NULL: the
-- transfer was started some other way (an API token, a zone token, a policy).
ALTER TABLE transfers ADD COLUMN oidc_groups TEXT;
ALTER TABLE transfers ADD COLUMN oidc_admin INTEGER NOT NULL DEFAULT 0;

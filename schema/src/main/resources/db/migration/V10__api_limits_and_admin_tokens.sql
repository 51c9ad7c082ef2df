-- Per-tenant API request limits: a token bucket per tenant in each API process (api/README.md). Read with the key
-- on every request (one join on the tenants primary key), so a change is live at the next request.
-- Tenants that exist when this runs get generous limits (1000/s, 2000 at once) rather than the API's default for new
-- tenants (100/s, 200; TenantLimit), so that no running integration starts getting 429s on upgrade.
ALTER TABLE tenants
    ADD COLUMN api_rate_per_second double precision NOT NULL DEFAULT 1000
        CHECK (api_rate_per_second > 0 AND api_rate_per_second <= 1000000),
    ADD COLUMN api_burst integer NOT NULL DEFAULT 2000 CHECK (api_burst BETWEEN 1 AND 1000000);

-- Named admin tokens: several, each created, listed and revoked over the admin API; the audit log names the token
-- that made a change. Only a SHA-256 of the token is stored: tokens are 256 random bits, so a fast hash is enough
-- (nothing to brute-force, unlike a password) and each request is one probe of the unique index. A name is never
-- reused, so an audit entry's actor stays unambiguous after its token is revoked. 'bootstrap' is FAIRQ_ADMIN_TOKEN's
-- name (kept in memory only, never in this table).
CREATE TABLE admin_tokens (
    id          text PRIMARY KEY,
    name        text        NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9_.@-]{0,62}$' AND name <> 'bootstrap'),
    token_hash  text        NOT NULL UNIQUE,
    created_by  text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);

-- The token generated on an embedded database's first start becomes the token named 'initial'.
INSERT INTO admin_tokens (id, name, token_hash, created_by, created_at)
SELECT 'adm_initial', 'initial', token_hash, 'fairq', created_at FROM admin_credentials;
DROP TABLE admin_credentials;

-- fairq API: tenant API keys, the admin credential, the audit log of limit changes, and the active
-- scheduler's published per-tenant state (so that any API process can explain a waiting job).

-- Tenant API keys. Only a SHA-256 of the key is stored: keys are 256 random bits, so a fast hash is
-- enough (nothing to brute-force), and a unique index on it makes each request one index probe.
-- Revocation sets revoked_at; requests check it on every call, so a revoked key stops at once.
CREATE TABLE api_keys (
    id          text PRIMARY KEY,
    tenant_id   text        NOT NULL REFERENCES tenants (id),
    key_hash    text        NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);
CREATE INDEX api_keys_tenant_idx ON api_keys (tenant_id, created_at);

-- The admin token generated for the embedded default (FAIRQ_ADMIN_TOKEN unset): its hash only, one row.
CREATE TABLE admin_credentials (
    id          smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    token_hash  text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- Every change of a tenant's limits: who, when, old and new values (old is null when the tenant was created).
CREATE TABLE tenant_audit (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id   text        NOT NULL REFERENCES tenants (id),
    actor       text        NOT NULL,
    action      text        NOT NULL CHECK (action IN ('create', 'replace', 'patch')),
    old_values  jsonb,
    new_values  jsonb       NOT NULL,
    changed_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tenant_audit_tenant_idx ON tenant_audit (tenant_id, id);

-- What the active scheduler knows in memory per tenant, published at most once a second in one statement:
-- explain reads it for rate_limited and fair_share from any process. position is the tenant's place in
-- the weighted-fair order among the tenants with admissible work (1 = next), null when it has none.
CREATE TABLE scheduler_tenant_state (
    tenant_id         text PRIMARY KEY REFERENCES tenants (id),
    tokens_available  double precision NOT NULL,
    next_token_at     timestamptz,
    pass              double precision NOT NULL,
    position          integer,
    competing         integer NOT NULL,
    updated_at        timestamptz NOT NULL DEFAULT now()
);

-- (Listing a tenant's jobs newest first, whatever their status, merges one probe of jobs_tenant_status_idx
-- per status: see JobStore.list. A second full (tenant_id, id) index would cost every status change.)

-- Stats: succeeded and dead in the last minutes per tenant, a range scan instead of a walk over retention.
CREATE INDEX jobs_tenant_finished_idx ON jobs (tenant_id, status, finished_at) WHERE finished_at IS NOT NULL;

-- Blocked ordering keys (a dead head): tiny, since a key blocks only until someone replays or discards.
CREATE INDEX jobs_blocked_keys_idx ON jobs (tenant_id, ordering_key) WHERE key_head AND status = 'dead';

-- API processes remember the tenant keys they verified (ApiKeyStore), with the tenant's API limits, so that a
-- request needs no key lookup. These notifications tell every API process of each change that must end that at
-- once, whoever makes it (the admin API of any process, tenants.yml seeding, plain SQL): a key revoked, changed
-- or deleted, and a tenant's API limits changed. Channel 'fairq_keys', payload the tenant id, or '*' for all of
-- them. PostgreSQL sends them at commit, and folds identical ones of a transaction into one.
--
-- Statement triggers with transition tables: one pass over the changed rows; a bulk change of more than 100
-- tenants sends a single '*' (every notification makes each API process walk its remembered keys, at most
-- 10,000).
CREATE FUNCTION fairq_key_change(tenants text[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF cardinality(tenants) > 100 THEN
        PERFORM pg_notify('fairq_keys', '*');
    ELSE
        PERFORM pg_notify('fairq_keys', t) FROM unnest(tenants) AS t;
    END IF;
END $$;

CREATE FUNCTION fairq_api_keys_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM fairq_key_change(ARRAY(SELECT DISTINCT tenant_id FROM changed));
    RETURN NULL;
END $$;

-- the old rows: a key moved to another tenant is forgotten under the tenant it was verified for
CREATE TRIGGER api_keys_changed_update AFTER UPDATE ON api_keys REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION fairq_api_keys_changed();
CREATE TRIGGER api_keys_changed_delete AFTER DELETE ON api_keys REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION fairq_api_keys_changed();

CREATE FUNCTION fairq_tenant_api_limits_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM fairq_key_change(ARRAY(
        SELECT n.id FROM changed n JOIN before_change o ON o.id = n.id
        WHERE (n.api_rate_per_second, n.api_burst) IS DISTINCT FROM (o.api_rate_per_second, o.api_burst)));
    RETURN NULL;
END $$;

-- only the API limits matter to a remembered key (a tenant's other limits are the scheduler's); a tenant's id
-- cannot change under its keys (api_keys references it), nor can a tenant with keys be deleted
CREATE TRIGGER tenants_api_limits_changed AFTER UPDATE ON tenants
    REFERENCING OLD TABLE AS before_change NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION fairq_tenant_api_limits_changed();

-- TRUNCATE fires no row or UPDATE trigger: forget everything (TRUNCATE tenants must cascade to api_keys)
CREATE FUNCTION fairq_api_keys_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('fairq_keys', '*');
    RETURN NULL;
END $$;

CREATE TRIGGER api_keys_truncated AFTER TRUNCATE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION fairq_api_keys_truncated();

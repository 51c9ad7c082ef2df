-- The audit log also records who issued or revoked a tenant's API key (a credential change is the first thing an
-- incident review asks about) and the tenants that tenants.yml created at start-up (actor 'tenants.yml'), so that
-- every tenant's history starts with its creation. Key rows name the key's id, never the key or its hash.
ALTER TABLE tenant_audit DROP CONSTRAINT tenant_audit_action_check;
ALTER TABLE tenant_audit ADD CONSTRAINT tenant_audit_action_check
    CHECK (action IN ('create', 'replace', 'patch', 'key_create', 'key_revoke'));

-- An admin token's revocation names the token that revoked it, as its creation names its creator (created_by): the
-- tokens list is the admin credentials' own history (they belong to no tenant, so they are not in tenant_audit).
ALTER TABLE admin_tokens ADD COLUMN revoked_by text;

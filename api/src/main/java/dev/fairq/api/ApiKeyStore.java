package dev.fairq.api;

import org.jooq.DSLContext;
import org.jooq.Record;

import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** Tenant API keys (table api_keys): stored as SHA-256, looked up by hash on every request. */
final class ApiKeyStore {
    /** Every tenant key starts with it (the authentication tells keys from admin tokens by it). */
    static final String PREFIX = "fqk_";
    private final DSLContext db;

    ApiKeyStore(DSLContext db) {
        this.db = db;
    }

    record CreatedKey(String keyId, String key, String tenantId, OffsetDateTime createdAt) {}

    record KeyInfo(String keyId, String tenant, java.time.Instant createdAt, java.time.Instant revokedAt) {}

    CreatedKey create(String tenantId) {
        String key = Tokens.generate(PREFIX);
        String id = Tokens.shortId("key_");
        OffsetDateTime created = db.resultQuery(
                "INSERT INTO api_keys (id, tenant_id, key_hash) VALUES (?, ?, ?) RETURNING created_at",
                id, tenantId, Tokens.sha256(key)).fetchOne(0, OffsetDateTime.class);
        return new CreatedKey(id, key, tenantId, created);
    }

    /** A live key's tenant and that tenant's API request limits, as stored now. */
    record Owner(String tenant, double apiRatePerSecond, int apiBurst) {}

    /**
     * The owner of a live key: one probe of the unique index on key_hash and one of the tenants primary key; a
     * revoked key finds nothing. The limits come along so that a live change applies at the next request.
     */
    Optional<Owner> ownerOf(String key) {
        return db.resultQuery("""
                SELECT k.tenant_id, t.api_rate_per_second, t.api_burst FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
                WHERE k.key_hash = ? AND k.revoked_at IS NULL""", Tokens.sha256(key)).fetchOptional()
                .map(r -> new Owner(r.get(0, String.class), r.get(1, Double.class), r.get(2, Integer.class)));
    }

    /** Revokes a key of the tenant; false when the tenant has no such key. Revoking twice is fine. */
    boolean revoke(String tenantId, String keyId) {
        return db.resultQuery("""
                UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
                WHERE id = ? AND tenant_id = ? RETURNING id""", keyId, tenantId).fetchOptional().isPresent();
    }

    List<KeyInfo> list(String tenantId) {
        List<KeyInfo> out = new ArrayList<>();
        for (Record r : db.resultQuery("SELECT id, tenant_id, created_at, revoked_at FROM api_keys WHERE tenant_id = ? "
                + "ORDER BY created_at", tenantId).fetch()) {
            out.add(new KeyInfo(r.get(0, String.class), r.get(1, String.class),
                    JobView.utc(r.get(2, OffsetDateTime.class)), JobView.utc(r.get(3, OffsetDateTime.class))));
        }
        return out;
    }
}

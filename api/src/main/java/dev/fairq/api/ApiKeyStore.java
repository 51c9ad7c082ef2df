package dev.fairq.api;

import org.jooq.DSLContext;
import org.jooq.Record;

import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * Tenant API keys (table api_keys): stored as SHA-256, looked up by hash. A key verified in the database is
 * remembered for {@link #VERIFIED_TTL} (keyed by its SHA-256, never the key itself), with its tenant's API
 * limits: a request then needs no key lookup (one round trip of the two or three a stats or explain request
 * makes). A revocation or a limit change made through this process forgets the tenant's entries at once;
 * one made elsewhere (another API process, SQL) applies within {@link #VERIFIED_TTL}.
 */
final class ApiKeyStore {
    /** Every tenant key starts with it (the authentication tells keys from admin tokens by it). */
    static final String PREFIX = "fqk_";
    /**
     * How long a verified key is trusted without asking the database again: what a revocation made by another
     * process (or in SQL) may take to apply. A second keeps that prompt and makes the lookup one per key and
     * second instead of one per request (2,000 requests/s of one key in the tenants benchmark).
     */
    static final long VERIFIED_TTL_NANOS = 1_000_000_000L;
    static final java.time.Duration VERIFIED_TTL = java.time.Duration.ofNanos(VERIFIED_TTL_NANOS);
    /** The most verified keys remembered (about 300 bytes each: the hash, the owner, the map node); past it, expired ones are dropped, then all. */
    static final int MAX_VERIFIED = 10_000;

    private final DSLContext db;
    private final LongSupplier nanoTime;
    private final ConcurrentHashMap<String, Verified> verified = new ConcurrentHashMap<>();

    private record Verified(Owner owner, long atNanos) {}

    ApiKeyStore(DSLContext db) {
        this(db, System::nanoTime);
    }

    ApiKeyStore(DSLContext db, LongSupplier nanoTime) {
        this.db = db;
        this.nanoTime = nanoTime;
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
     * revoked key finds nothing. The limits come along so that a live change applies at the next request (within
     * {@link #VERIFIED_TTL} when another process made it).
     */
    Optional<Owner> ownerOf(String key) {
        return ownerOfHash(Tokens.sha256(key));
    }

    /** {@link #ownerOf} for a key's SHA-256 (hex): from the verified keys while fresh, else from the database. */
    Optional<Owner> ownerOfHash(String hash) {
        long now = nanoTime.getAsLong();
        Verified v = verified.get(hash);
        if (v != null && now - v.atNanos() < VERIFIED_TTL_NANOS) return Optional.of(v.owner());
        Optional<Owner> owner = db.resultQuery("""
                SELECT k.tenant_id, t.api_rate_per_second, t.api_burst FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
                WHERE k.key_hash = ? AND k.revoked_at IS NULL""", hash).fetchOptional()
                .map(r -> new Owner(r.get(0, String.class), r.get(1, Double.class), r.get(2, Integer.class)));
        if (owner.isEmpty()) {
            verified.remove(hash);
            return owner;
        }
        if (verified.size() >= MAX_VERIFIED) {
            verified.values().removeIf(x -> now - x.atNanos() >= VERIFIED_TTL_NANOS);
            if (verified.size() >= MAX_VERIFIED) verified.clear();
        }
        verified.put(hash, new Verified(owner.get(), now));
        return owner;
    }

    /**
     * Forgets the tenant's verified keys: after a revocation or a change of its limits, its next request
     * reads them from the database. A revocation in flight with a request may let that one request through.
     */
    void forget(String tenantId) {
        verified.values().removeIf(v -> v.owner().tenant().equals(tenantId));
    }

    /** Verified keys remembered now (tests). */
    int verifiedCount() {
        return verified.size();
    }

    /** Revokes a key of the tenant; false when the tenant has no such key. Revoking twice is fine. */
    boolean revoke(String tenantId, String keyId) {
        boolean found = db.resultQuery("""
                UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
                WHERE id = ? AND tenant_id = ? RETURNING id""", keyId, tenantId).fetchOptional().isPresent();
        forget(tenantId);
        return found;
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

package dev.fairq.api;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.fairq.schema.TenantStore;
import org.jooq.DSLContext;
import org.jooq.Record;

import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * Tenant API keys (table api_keys): stored as SHA-256, looked up by hash. A key verified in the database is
 * remembered (keyed by its SHA-256, never the key itself) with its tenant's API limits, so that a request needs
 * no key lookup: one round trip of the two or three a submit, stats or explain request makes.
 *
 * <p>How long a remembered key is trusted depends on whether this process hears of changes. While its
 * {@link KeyChangeListener} listens on 'fairq_keys' (V14: every revocation, key change and API-limit change, from
 * any process or plain SQL, notifies at its commit), a key is trusted for {@link #LISTENED_TTL}, and a change
 * forgets the tenant's keys as soon as its notification arrives. Otherwise (no listener, or its connection lost
 * and not yet back) for {@link #VERIFIED_TTL}, which is then what a change made elsewhere may take to apply. A
 * revocation or limit change made through this process forgets the tenant's keys at once in either case.
 */
final class ApiKeyStore {
    /** Every tenant key starts with it (the authentication tells keys from admin tokens by it). */
    static final String PREFIX = "fqk_";
    private static final TenantStore AUDIT = new TenantStore();
    /**
     * How long a verified key is trusted without asking the database again while no listener hears of changes:
     * what a revocation made by another process (or in SQL) may take to apply then. A second keeps that prompt and
     * makes the lookup one per key and second instead of one per request (2,000 requests/s of one key in the
     * tenants benchmark).
     */
    static final long VERIFIED_TTL_NANOS = 1_000_000_000L;
    static final java.time.Duration VERIFIED_TTL = java.time.Duration.ofNanos(VERIFIED_TTL_NANOS);
    /**
     * How long a verified key is trusted while the listener hears of changes: a safety net only, since a change
     * forgets the key when its notification arrives. With a second, a tenant that submits less often than once a
     * second (each of the tenants benchmark's 1,000 trickling tenants: once every 10 s; most tenants of a large
     * platform) paid a key lookup on every request, one more round trip before its insert.
     */
    static final long LISTENED_TTL_NANOS = 60_000_000_000L;
    static final java.time.Duration LISTENED_TTL = java.time.Duration.ofNanos(LISTENED_TTL_NANOS);
    /**
     * The most verified keys remembered (about 300 bytes each: the hash, the owner, the cache's node); past it the
     * cache evicts the ones least likely to be asked for again (Caffeine's frequency sketch), so the memory stays
     * bounded whatever the number of tenants, and a tenant beyond it simply pays its lookup.
     */
    static final int MAX_VERIFIED = 10_000;

    private final DSLContext db;
    private final LongSupplier nanoTime;
    private final Function<String, Optional<Owner>> lookup;
    private final Cache<String, Verified> verified = Caffeine.newBuilder().maximumSize(MAX_VERIFIED)
            .executor(Runnable::run).build();
    /** Whether the listener hears of changes now (set by {@link KeyChangeListener}). */
    private volatile boolean listening;
    /**
     * Moves at every change heard of, every local forget and every start or loss of listening: a lookup that saw it
     * move while it read the database may have read a key from before a change it will not hear of again, so what
     * it read is not remembered (the next request reads again).
     */
    private final AtomicLong changes = new AtomicLong();
    private final AtomicLong lookups = new AtomicLong();

    private record Verified(Owner owner, long atNanos, long ttlNanos) {}

    ApiKeyStore(DSLContext db) {
        this(db, System::nanoTime);
    }

    ApiKeyStore(DSLContext db, LongSupplier nanoTime) {
        this(db, nanoTime, null);
    }

    /** {@code lookup}: the database read of a key hash's owner (null: the real one); tests interleave with it. */
    ApiKeyStore(DSLContext db, LongSupplier nanoTime, Function<String, Optional<Owner>> lookup) {
        this.db = db;
        this.nanoTime = nanoTime;
        this.lookup = lookup != null ? lookup : this::read;
    }

    record CreatedKey(String keyId, String key, String tenantId, OffsetDateTime createdAt) {}

    record KeyInfo(String keyId, String tenant, java.time.Instant createdAt, java.time.Instant revokedAt) {}

    /** A new key, audited ({@code key_create}, naming {@code actor}) in the same transaction. */
    CreatedKey create(String tenantId, String actor) {
        String key = Tokens.generate(PREFIX);
        String id = Tokens.shortId("key_");
        OffsetDateTime created = db.transactionResult(c -> {
            AUDIT.lockAudit(c.dsl()); // first, so audit ids follow commit order (TenantStore.AUDIT_LOCK)
            OffsetDateTime at = c.dsl().resultQuery(
                    "INSERT INTO api_keys (id, tenant_id, key_hash) VALUES (?, ?, ?) RETURNING created_at",
                    id, tenantId, Tokens.sha256(key)).fetchOne(0, OffsetDateTime.class);
            AUDIT.auditKey(c.dsl(), tenantId, actor, true, id);
            return at;
        });
        return new CreatedKey(id, key, tenantId, created);
    }

    /** A live key's tenant and that tenant's API request limits, as stored now. */
    record Owner(String tenant, double apiRatePerSecond, int apiBurst) {}

    /**
     * The owner of a live key: one probe of the unique index on key_hash and one of the tenants primary key; a
     * revoked key finds nothing. The limits come along so that a live change applies at the next request (when
     * another process made it: once its notification arrives, or within {@link #VERIFIED_TTL} while none is heard).
     */
    Optional<Owner> ownerOf(String key) {
        return ownerOfHash(Tokens.sha256(key));
    }

    /** {@link #ownerOf} for a key's SHA-256 (hex): from the verified keys while trusted, else from the database. */
    Optional<Owner> ownerOfHash(String hash) {
        long now = nanoTime.getAsLong();
        Verified v = verified.getIfPresent(hash);
        if (v != null && now - v.atNanos() < v.ttlNanos()) return Optional.of(v.owner());
        long before = changes.get(); // before the flag: listening(...) sets the flag before it counts the change
        boolean heard = listening;
        lookups.incrementAndGet();
        Optional<Owner> owner = lookup.apply(hash);
        if (owner.isEmpty()) {
            verified.invalidate(hash);
            return owner;
        }
        Verified remembered = new Verified(owner.get(), now, heard ? LISTENED_TTL_NANOS : VERIFIED_TTL_NANOS);
        verified.put(hash, remembered);
        // a change heard (or listening started or lost) since the read began may postdate what it read, and its
        // forgetting may have come before the put: forget it now (a change counts before it forgets, so either this
        // sees it or its forgetting sees the entry)
        if (changes.get() != before) verified.asMap().remove(hash, remembered);
        return owner;
    }

    private Optional<Owner> read(String hash) {
        return db.resultQuery("""
                SELECT k.tenant_id, t.api_rate_per_second, t.api_burst FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
                WHERE k.key_hash = ? AND k.revoked_at IS NULL""", hash).fetchOptional()
                .map(r -> new Owner(r.get(0, String.class), r.get(1, Double.class), r.get(2, Integer.class)));
    }

    /**
     * Forgets the tenant's verified keys: after a revocation or a change of its limits, its next request
     * reads them from the database. A revocation in flight with a request may let that one request through.
     */
    void forget(String tenantId) {
        changes.incrementAndGet();
        verified.asMap().values().removeIf(v -> v.owner().tenant().equals(tenantId));
    }

    /** A change heard on 'fairq_keys' (V14): a tenant id, or '*' for every tenant. */
    void keyChanged(String payload) {
        if ("*".equals(payload)) {
            changes.incrementAndGet();
            verified.invalidateAll();
        } else {
            forget(payload);
        }
    }

    /**
     * The listener started hearing of changes (true) or may have missed some (false: its connection failed, or it
     * stopped). Either way everything remembered so far is forgotten: what was verified before the listening began,
     * or while it was lost, is not covered by it.
     */
    void listening(boolean heard) {
        listening = heard; // before the count: a lookup that sees the new count sees the new flag
        changes.incrementAndGet();
        verified.invalidateAll();
    }

    boolean listening() {
        return listening;
    }

    /** Database lookups of keys so far (tests: a remembered key costs none). */
    long lookups() {
        return lookups.get();
    }

    /** Verified keys remembered now (tests). */
    int verifiedCount() {
        verified.cleanUp();
        return (int) verified.estimatedSize();
    }

    /** Revokes a key of the tenant, audited ({@code key_revoke}); false when the tenant has no such key. Revoking twice is fine (one audit row). */
    boolean revoke(String tenantId, String keyId, String actor) {
        boolean found = db.transactionResult(c -> {
            AUDIT.lockAudit(c.dsl()); // first, so audit ids follow commit order (TenantStore.AUDIT_LOCK)
            // the row lock orders two revokes of one key: only the one that revoked it writes an audit row
            Record r = c.dsl().resultQuery("""
                    SELECT revoked_at IS NULL FROM api_keys WHERE id = ? AND tenant_id = ? FOR UPDATE""",
                    keyId, tenantId).fetchOne();
            if (r == null) return false;
            if (r.get(0, Boolean.class)) {
                c.dsl().execute("UPDATE api_keys SET revoked_at = now() WHERE id = ?", keyId);
                AUDIT.auditKey(c.dsl(), tenantId, actor, false, keyId);
            }
            return true;
        });
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

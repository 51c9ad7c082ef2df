package dev.fairq.api;

import org.jooq.DSLContext;
import org.jooq.Record;

import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Named admin tokens (table admin_tokens, V10): stored as SHA-256, looked up by hash on every admin request, so a
 * revoked token stops at once. FAIRQ_ADMIN_TOKEN is not in the table: it is the token named {@link #BOOTSTRAP}.
 */
final class AdminTokenStore {
    /** The name of FAIRQ_ADMIN_TOKEN, the audit actor of what it does. */
    static final String BOOTSTRAP = "bootstrap";
    static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9_.@-]{0,62}");
    /** The creator fairq itself names for the token an embedded database prints ({@link AdminCredentials}). */
    static final String GENERATED_BY = "fairq";
    /**
     * Names fairq writes as an actor itself: a token named after one would make its entries (tenants.yml's creations in
     * the audit log, the generated token's created_by) indistinguishable from fairq's own.
     */
    static final java.util.Set<String> RESERVED = java.util.Set.of(BOOTSTRAP, dev.fairq.schema.TenantStore.TENANTS_FILE_ACTOR,
            GENERATED_BY);
    static final String NAME_RULE = "must be 1-63 lower-case letters, digits, '_', '.', '@' or '-', starting with a letter "
            + "or digit (e.g. alice@example.com or deploy-bot), and not 'bootstrap', 'tenants.yml' or 'fairq' (fairq's own actors)";

    private final DSLContext db;

    AdminTokenStore(DSLContext db) {
        this.db = db;
    }

    record Created(String id, String name, String token, String createdBy, OffsetDateTime createdAt) {}

    record Info(String id, String name, String createdBy, java.time.Instant createdAt, java.time.Instant revokedAt,
                String revokedBy) {}

    static boolean validName(String name) {
        return name != null && NAME.matcher(name).matches() && !RESERVED.contains(name);
    }

    /** A new token named {@code name}; empty when the name was ever used (names are never reused). */
    Optional<Created> create(String name, String createdBy) {
        String token = Tokens.generate("fqa_");
        String id = Tokens.shortId("adm_");
        return db.resultQuery("""
                INSERT INTO admin_tokens (id, name, token_hash, created_by) VALUES (?, ?, ?, ?)
                ON CONFLICT (name) DO NOTHING RETURNING created_at""", id, name, Tokens.sha256(token), createdBy)
                .fetchOptional(0, OffsetDateTime.class)
                .map(at -> new Created(id, name, token, createdBy, at));
    }

    /** The name of a live token: one probe of the unique index on token_hash; a revoked token finds nothing. */
    Optional<String> nameOf(String token) {
        return db.resultQuery("SELECT name FROM admin_tokens WHERE token_hash = ? AND revoked_at IS NULL",
                Tokens.sha256(token)).fetchOptional(0, String.class);
    }

    /** Whether any token can still be used (else an embedded database's start prints a new one). */
    boolean anyLive() {
        return db.resultQuery("SELECT 1 FROM admin_tokens WHERE revoked_at IS NULL LIMIT 1").fetchOptional().isPresent();
    }

    /** Revokes a token, naming who did; false when there is no such token. Revoking twice is fine (the first stays). */
    boolean revoke(String id, String revokedBy) {
        // SET reads the row as it was: a second revoke keeps the first one's time and name
        return db.resultQuery("""
                UPDATE admin_tokens SET revoked_at = coalesce(revoked_at, now()),
                                        revoked_by = CASE WHEN revoked_at IS NULL THEN ? ELSE revoked_by END
                WHERE id = ? RETURNING id""", revokedBy, id).fetchOptional().isPresent();
    }

    /** Every token ever made, oldest first (a handful: these are people and deploy bots, not tenants). */
    List<Info> list() {
        List<Info> out = new ArrayList<>();
        for (Record r : db.resultQuery(
                "SELECT id, name, created_by, created_at, revoked_at, revoked_by FROM admin_tokens ORDER BY created_at, id")
                .fetch()) {
            out.add(new Info(r.get(0, String.class), r.get(1, String.class), r.get(2, String.class),
                    JobView.utc(r.get(3, OffsetDateTime.class)), JobView.utc(r.get(4, OffsetDateTime.class)),
                    r.get(5, String.class)));
        }
        return out;
    }
}

package dev.fairq.schema;

import org.jooq.DSLContext;
import org.jooq.Record;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.Optional;
import java.util.UUID;

/**
 * The idempotency store for side effects (seed 003, approach A; V11__handler_toolkit.sql): one row per
 * (tenant, key), {@code pending} under a lock token until {@code locked_until}, then {@code done} with the
 * effect's result. Every statement is on the queue's clock, so tests move time past a lock instead of waiting.
 *
 * <p>The protocol, per attempt: {@link #begin} takes the key (a new row, or a pending row whose lock ran out,
 * under a fresh token), or answers the stored result of a done key, or says another attempt holds it; the
 * caller runs its effect, then {@link #complete} writes done under its token (zero rows: the lock was taken
 * over, {@link LostKeyException}), or {@link #release} gives the key up after a failed effect. Keys leave the
 * table through {@link Retention#deleteSideEffects}.
 */
public final class SideEffects {
    /** Keys: 1 to 255 characters (the table's CHECK). */
    public static final int MAX_KEY_LENGTH = 255;

    /**
     * Takes the key: inserts it pending, or takes over a pending row whose lock ran out (a new token: the old
     * holder's {@link #complete} then matches nothing). A live pending row and a done row are left alone and
     * the statement returns nothing; {@link #READ} then says which. One statement, so two attempts racing for
     * one key cannot both take it: the loser's INSERT waits on the winner's row and then sees it locked.
     */
    static final NamedSql BEGIN = NamedSql.of("""
            INSERT INTO side_effects (tenant_id, key, status, lock_token, locked_until, job_id, created_at, updated_at)
            VALUES (:tenant_id, :key, 'pending', :token::uuid, :now + :lease_ms * interval '1 millisecond', :job_id, :now, :now)
            ON CONFLICT (tenant_id, key) DO UPDATE
                SET lock_token = excluded.lock_token, locked_until = excluded.locked_until, job_id = excluded.job_id,
                    updated_at = excluded.updated_at
                WHERE side_effects.status = 'pending' AND side_effects.locked_until <= excluded.updated_at
            RETURNING lock_token::text
            """);

    static final NamedSql READ = NamedSql.of("""
            SELECT status, result, (fairq_epoch(locked_until) - fairq_epoch(:now)) * 1000
            FROM side_effects WHERE tenant_id = :tenant_id AND key = :key
            """);

    /** Done, only under the current token (the lock may have run out: nobody took it over, so it is still ours). */
    static final NamedSql COMPLETE = NamedSql.of("""
            UPDATE side_effects SET status = 'done', result = :result, lock_token = NULL, locked_until = NULL,
                                    updated_at = :now
            WHERE tenant_id = :tenant_id AND key = :key AND status = 'pending' AND lock_token = :token::uuid
            """);

    /** Gives the key up after the effect failed, so the next attempt starts afresh (only under the token). */
    static final NamedSql RELEASE = NamedSql.of("""
            DELETE FROM side_effects
            WHERE tenant_id = :tenant_id AND key = :key AND status = 'pending' AND lock_token = :token::uuid
            """);

    private final QueueClock clock;

    SideEffects(QueueClock clock) {
        this.clock = clock;
    }

    /** What {@link #begin} found. */
    public sealed interface Claim {
        /** The key is this attempt's: run the effect, then {@link #complete} with this token. */
        record Acquired(UUID token) implements Claim {}

        /** The effect happened already: its stored result (null when it returned none). */
        record Done(String result) implements Claim {}

        /** Another attempt holds the key, for this much longer at most. */
        record Busy(Duration lockedFor) implements Claim {}
    }

    /** The key's lock was taken over by another attempt: this attempt's done was not written. */
    public static final class LostKeyException extends IllegalStateException {
        public LostKeyException(String message) {
            super(message);
        }
    }

    /** The longest lease {@link #begin} takes (as long as the longest delay a job may have). */
    public static final Duration MAX_LEASE = JobRequest.MAX_DELAY;

    /** Takes the key for {@code lease}, or says why not; see {@link Claim}. */
    public Claim begin(DSLContext ctx, String tenantId, String key, Duration lease, Long jobId) {
        checkKey(key);
        // a year at most: longer overflowed the millisecond count or the timestamp, a database error, not a message
        if (lease == null || lease.isNegative() || lease.isZero() || lease.compareTo(MAX_LEASE) > 0) {
            throw new IllegalArgumentException("the lease must be positive and at most " + MAX_LEASE.toDays() + " days");
        }
        UUID token = UUID.randomUUID();
        // a few rounds: a row deleted (released) between BEGIN and READ sends us round again
        for (int round = 0; round < 5; round++) {
            var got = BEGIN.bind().clock(clock).set("tenant_id", tenantId).set("key", key).set("token", token.toString())
                    .set("lease_ms", lease.toMillis()).set("job_id", jobId).fetch(ctx);
            if (!got.isEmpty()) return new Claim.Acquired(token);
            Optional<Record> row = READ.bind().clock(clock).set("tenant_id", tenantId).set("key", key).fetch(ctx)
                    .stream().findFirst();
            if (row.isEmpty()) continue;
            if ("done".equals(row.get().get(0, String.class))) return new Claim.Done(row.get().get(1, String.class));
            Double ms = row.get().get(2, Double.class);
            return new Claim.Busy(Duration.ofMillis(Math.max(0, ms == null ? 0 : (long) Math.ceil(ms))));
        }
        throw new IllegalStateException("side effect key '" + key + "' kept changing under this attempt");
    }

    /** Writes done with the result, under the token; throws {@link LostKeyException} when the token is no longer current. */
    public void complete(DSLContext ctx, String tenantId, String key, UUID token, String result) {
        int n = COMPLETE.bind().clock(clock).set("tenant_id", tenantId).set("key", key).set("token", token.toString())
                .set("result", result).execute(ctx);
        if (n == 0) {
            throw new LostKeyException("side effect '" + key + "': its lock ran out and another attempt took the key over "
                    + "before this one wrote its result; the effect may have run twice and this result is not stored");
        }
    }

    /** Gives the key up (the effect failed); false when the token was no longer current. */
    public boolean release(DSLContext ctx, String tenantId, String key, UUID token) {
        return RELEASE.bind().set("tenant_id", tenantId).set("key", key).set("token", token.toString()).execute(ctx) == 1;
    }

    /** A key's row as stored (tests and tools): status, result and the lock's end. */
    public record Row(String status, String result, OffsetDateTime lockedUntil) {}

    public Optional<Row> find(DSLContext ctx, String tenantId, String key) {
        return ctx.resultQuery("SELECT status, result, locked_until FROM side_effects WHERE tenant_id = ? AND key = ?",
                tenantId, key).fetch().stream().findFirst()
                .map(r -> new Row(r.get(0, String.class), r.get(1, String.class), r.get(2, OffsetDateTime.class)));
    }

    private static void checkKey(String key) {
        // characters as the CHECK counts them (an emoji is one, not two); a NUL cannot be stored, and an unpaired
        // surrogate is stored as '?', so two different keys would share one row (one effect's result for the other)
        if (key == null || key.isEmpty() || key.codePointCount(0, key.length()) > MAX_KEY_LENGTH || key.indexOf('\0') >= 0
                || JobRequest.unpairedSurrogate(key) >= 0) {
            throw new IllegalArgumentException("a side effect key must be 1-" + MAX_KEY_LENGTH
                    + " characters, without U+0000 or an unpaired UTF-16 surrogate");
        }
    }
}

package dev.fairq.schema;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.schema.generated.tables.records.TenantsRecord;
import org.jooq.DSLContext;
import org.jooq.JSONB;
import org.jooq.Record;

import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static dev.fairq.schema.generated.Tables.TENANTS;

/**
 * The tenants table and its audit trail: seeding from tenants.yml, look-ups, and limit changes. A change and
 * its audit row are written in one transaction, with the tenant row locked, so the log's old values are
 * exactly what the change replaced. The active scheduler re-reads changed tenants every 500 ms, so a change
 * takes effect within a second.
 */
public final class TenantStore {
    /** A whole tenant row, every limit a named parameter: SEED and UPSERT differ only in what a conflict does. */
    private static final String INSERT_TENANT = """
            INSERT INTO tenants (id, weight, rate_per_second, burst, max_running, max_queued, paused, webhook_allow,
                                 max_schedules, min_schedule_interval_s, api_rate_per_second, api_burst,
                                 concurrency_limits, key_weights)
            VALUES (:id, :weight, :rate_per_second, :burst, :max_running, :max_queued, :paused, :webhook_allow::text[],
                    :max_schedules, :min_schedule_interval_s, :api_rate_per_second, :api_burst,
                    :concurrency_limits::jsonb, :key_weights::jsonb)
            """;

    /** A tenant that does not exist yet is created; one that exists keeps its stored (maybe live-changed) limits. */
    static final NamedSql SEED = NamedSql.of(INSERT_TENANT + """
            ON CONFLICT (id) DO NOTHING RETURNING *
            """);

    /** A PUT's create: the row when this statement inserted it, none when another transaction has the id. */
    static final NamedSql CREATE = NamedSql.of(INSERT_TENANT + """
            ON CONFLICT (id) DO NOTHING RETURNING *
            """);

    static final NamedSql FIND = NamedSql.of("SELECT * FROM tenants WHERE id = :id");

    static final NamedSql BY_IDS = NamedSql.of("SELECT * FROM tenants WHERE id = ANY(:ids::text[])");

    /**
     * Tenants written since {@code since} (tenants_updated_idx; every write moves updated_at, V7). On the
     * database's own clock, the one that stamps updated_at, whatever clock the queue runs on.
     */
    static final NamedSql CHANGED_SINCE = NamedSql.of("""
            SELECT now() AS read_at, t.* FROM (SELECT 1) one
            LEFT JOIN tenants t ON t.updated_at > coalesce(:since::timestamptz, 'infinity')
            """);

    /** How many tenants were written since {@code since}, counted up to {@code cap} (tenants_updated_idx). */
    static final NamedSql CHANGED_COUNT = NamedSql.of("""
            SELECT count(*) FROM (SELECT 1 FROM tenants WHERE updated_at > :since::timestamptz LIMIT :cap) c
            """);

    /**
     * The named tenants written since {@code since}: one primary-key probe per name. OFFSET 0 keeps the
     * updated_at condition out of the probe, so the planner cannot pick tenants_updated_idx instead (with
     * stale statistics it would walk every row written since).
     */
    static final NamedSql CHANGED_AMONG = NamedSql.of("""
            SELECT t.* FROM unnest(:ids::text[]) AS c(id)
            CROSS JOIN LATERAL (SELECT * FROM tenants WHERE id = c.id OFFSET 0) t
            WHERE t.updated_at > :since::timestamptz
            """);

    /**
     * FOR NO KEY UPDATE, not FOR UPDATE: it serialises two admins writing one tenant, but does not conflict
     * with the key-share locks that foreign keys take, so enqueues (jobs.tenant_id) and the scheduler's grants
     * (admission_grants.tenant_id) do not wait for an admin's transaction.
     */
    static final NamedSql LOCK = NamedSql.of("SELECT * FROM tenants WHERE id = :id FOR NO KEY UPDATE");

    static final NamedSql UPSERT = NamedSql.of(INSERT_TENANT + """
            ON CONFLICT (id) DO UPDATE SET weight = excluded.weight, rate_per_second = excluded.rate_per_second,
                burst = excluded.burst, max_running = excluded.max_running, max_queued = excluded.max_queued,
                paused = excluded.paused, webhook_allow = excluded.webhook_allow,
                max_schedules = excluded.max_schedules, min_schedule_interval_s = excluded.min_schedule_interval_s,
                api_rate_per_second = excluded.api_rate_per_second, api_burst = excluded.api_burst,
                concurrency_limits = excluded.concurrency_limits, key_weights = excluded.key_weights, updated_at = now()
            RETURNING *
            """);

    static final NamedSql AUDIT = NamedSql.of("""
            INSERT INTO tenant_audit (tenant_id, actor, action, old_values, new_values)
            VALUES (:tenant_id, :actor, :action, :old_values::jsonb, :new_values::jsonb)
            """);

    /**
     * Held by every transaction that writes an audit row, from before its first write to its commit, so audit ids are
     * taken in commit order: once an id is visible, every smaller one is committed (or rolled back) too, and a reader
     * of the newest entries ({@code after} pages back from them) never passes one that commits later. The identity's
     * ids alone are taken at the insert: a write that took id n and committed after the one that took n + 1 was missed
     * by whoever had read n + 1 meanwhile. Admin writes are few, so serialising them costs nothing that matters. Two
     * ints, "fairq" and "audit" (the scheduler's leader lock is "fairq" and 1).
     */
    static final NamedSql AUDIT_LOCK = NamedSql.of("SELECT pg_advisory_xact_lock(1717658993, 2)");

    /**
     * Takes the audit lock ({@link #AUDIT_LOCK}) for the rest of the transaction. Call it first in a transaction that
     * will audit, before it locks or writes anything else: taken after another lock, it could deadlock with a
     * transaction that holds it and waits for that one (the seed's insert of a tenant a PUT is creating).
     */
    public void lockAudit(DSLContext tx) {
        AUDIT_LOCK.bind().fetch(tx);
    }

    /** Newest first, keyset pages on id (tenant_audit_tenant_idx with a tenant, the primary key without). */
    static final NamedSql AUDIT_PAGE = NamedSql.of("""
            SELECT id, tenant_id, actor, action, old_values, new_values, changed_at FROM tenant_audit
            WHERE (:tenant_id::text IS NULL OR tenant_id = :tenant_id::text)
              AND (:before_id::bigint IS NULL OR id < :before_id::bigint)
            ORDER BY id DESC LIMIT :limit
            """);

    /** The audit actor of the tenants that tenants.yml creates (it changes no existing tenant). */
    public static final String TENANTS_FILE_ACTOR = "tenants.yml";

    /**
     * Inserts the tenants that do not exist yet (a tenants.yml holds tens of them), each with a "create" audit row;
     * returns how many.
     */
    public int seed(DSLContext ctx, List<TenantLimits> tenants) {
        // by id, not in the file's order: two processes seeding at once (api and scheduler, or files listing the
        // tenants in other orders) each waited for a row the other held, and PostgreSQL aborted one start-up
        List<TenantLimits> byId = tenants.stream().sorted(java.util.Comparator.comparing(TenantLimits::id)).toList();
        return ctx.transactionResult(c -> {
            lockAudit(c.dsl());
            int inserted = 0;
            for (TenantLimits t : byId) {
                for (Record r : limits(SEED.bind().set("id", t.id()), t).fetch(c.dsl())) {
                    audit(c.dsl(), t.id(), TENANTS_FILE_ACTOR, "create", null, TenantLimits.of(r.into(TENANTS)).toMap());
                    inserted++;
                }
            }
            return inserted;
        });
    }

    /**
     * The audit row of a key issued ({@code key_create}) or revoked ({@code key_revoke}), written by the caller in
     * the transaction that made the change: it names the key's id, never the key. The transaction takes
     * {@link #lockAudit} first.
     */
    public void auditKey(DSLContext tx, String tenantId, String actor, boolean created, String keyId) {
        Map<String, Object> key = Map.of("key_id", keyId);
        Map<String, Object> after = created ? key : Map.of("key_id", keyId, "revoked", true);
        audit(tx, tenantId, actor, created ? "key_create" : "key_revoke", created ? null : key, after);
    }

    private static NamedSql.Binding limits(NamedSql.Binding b, TenantLimits t) {
        return b.set("weight", t.weight()).set("rate_per_second", t.ratePerSecond()).set("burst", t.burst())
                .set("max_running", t.maxRunning()).set("max_queued", t.maxQueued()).set("paused", t.paused())
                .set("webhook_allow", t.webhookAllow().toArray(String[]::new))
                .set("max_schedules", t.maxSchedules()).set("min_schedule_interval_s", t.minScheduleIntervalS())
                .set("api_rate_per_second", t.apiRatePerSecond()).set("api_burst", t.apiBurst())
                .set("concurrency_limits", TenantLimits.keyMapJson(t.concurrencyLimits()))
                .set("key_weights", TenantLimits.keyMapJson(t.keyWeights()));
    }

    public Optional<TenantsRecord> find(DSLContext ctx, String id) {
        return FIND.bind().set("id", id).fetch(ctx).stream().findFirst().map(r -> r.into(TENANTS));
    }

    /**
     * The tenant row of a plain JDBC read that selected {@code t.*} (its columns by name; others may come along).
     * Every column of tenants: a column added by a migration must be read here too (TenantStoreTest compares it
     * with jOOQ's own mapping).
     */
    static TenantsRecord record(java.sql.ResultSet rs) throws java.sql.SQLException {
        TenantsRecord t = new TenantsRecord();
        t.setId(rs.getString("id"));
        t.setWeight(rs.getObject("weight", Integer.class));
        t.setRatePerSecond(rs.getObject("rate_per_second", Double.class));
        t.setBurst(rs.getObject("burst", Integer.class));
        t.setMaxRunning(rs.getObject("max_running", Integer.class));
        t.setMaxQueued(rs.getObject("max_queued", Integer.class));
        t.setPaused(rs.getObject("paused", Boolean.class));
        java.sql.Array allow = rs.getArray("webhook_allow");
        t.setWebhookAllow(allow == null ? null : (String[]) allow.getArray());
        t.setCreatedAt(rs.getObject("created_at", OffsetDateTime.class));
        t.setUpdatedAt(rs.getObject("updated_at", OffsetDateTime.class));
        t.setMaxSchedules(rs.getObject("max_schedules", Integer.class));
        t.setMinScheduleIntervalS(rs.getObject("min_schedule_interval_s", Integer.class));
        t.setApiRatePerSecond(rs.getObject("api_rate_per_second", Double.class));
        t.setApiBurst(rs.getObject("api_burst", Integer.class));
        String limits = rs.getString("concurrency_limits"), weights = rs.getString("key_weights");
        t.setConcurrencyLimits(limits == null ? null : JSONB.valueOf(limits));
        t.setKeyWeights(weights == null ? null : JSONB.valueOf(weights));
        t.changed(false);
        return t;
    }

    /** The tenants named (those that exist). */
    public List<TenantsRecord> byIds(DSLContext ctx, java.util.Collection<String> ids) {
        if (ids.isEmpty()) return List.of();
        return BY_IDS.bind().set("ids", ids.toArray(String[]::new)).fetch(ctx).map(r -> r.into(TENANTS));
    }

    /** Tenants written after {@code since} (null: none, only the database time), and the database time of this read. */
    public record Changes(OffsetDateTime readAt, List<TenantsRecord> tenants) {}

    public Changes changedSince(DSLContext ctx, OffsetDateTime since) {
        var rows = CHANGED_SINCE.bind().set("since", since).fetch(ctx);
        List<TenantsRecord> changed = new ArrayList<>();
        for (Record r : rows) if (r.get("id") != null) changed.add(r.into(TENANTS));
        return new Changes(rows.get(0).get("read_at", OffsetDateTime.class), changed);
    }

    /**
     * Like {@link #changedSince(DSLContext, OffsetDateTime)}, but only the tenants the caller cares about
     * ({@code among}, the scheduler's cache) have to come back; others may. The cost is at most
     * min(tenants written since, |among|) rows: when more were written than {@code among} names (1,000,000
     * tenants registered in one statement; the scheduler re-reads with a 60 s overlap, so that many rows came
     * back on every reload for a minute, 6-8 s each, measured), the named ones are probed by key instead.
     */
    public Changes changedSince(DSLContext ctx, OffsetDateTime since, java.util.Collection<String> among) {
        if (since == null) return changedSince(ctx, null);
        OffsetDateTime readAt = ctx.resultQuery("SELECT now()").fetchOne(0, OffsetDateTime.class); // before the read: rows seen twice, never missed
        int cap = Math.max(1_000, among.size());
        long written = CHANGED_COUNT.bind().set("since", since).set("cap", cap).fetch(ctx).get(0).get(0, Long.class);
        if (written < cap) {
            List<TenantsRecord> changed = new ArrayList<>();
            for (Record r : CHANGED_SINCE.bind().set("since", since).fetch(ctx)) {
                if (r.get("id") != null) changed.add(r.into(TENANTS));
            }
            return new Changes(readAt, changed);
        }
        if (among.isEmpty()) return new Changes(readAt, List.of());
        return new Changes(readAt, CHANGED_AMONG.bind().set("ids", among.toArray(String[]::new)).set("since", since)
                .fetch(ctx).map(r -> r.into(TENANTS)));
    }

    /**
     * Tenants whose id starts with {@code prefix}, by id, at most {@code limit}: a range of tenants_id_pattern_idx
     * (LIKE with the prefix's own wildcards escaped by a backslash, LIKE's default escape).
     */
    static final NamedSql BY_PREFIX = NamedSql.of("""
            SELECT * FROM tenants WHERE id LIKE :pattern ORDER BY id LIMIT :limit
            """);

    public List<TenantsRecord> byIdPrefix(DSLContext ctx, String prefix, int limit) {
        String pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%";
        return BY_PREFIX.bind().set("pattern", pattern).set("limit", limit).fetch(ctx).map(r -> r.into(TENANTS));
    }

    static final NamedSql COUNT = NamedSql.of("SELECT count(*) FROM tenants");

    /** How many tenants are registered (a count of the table: cache it). */
    public long count(DSLContext ctx) {
        return COUNT.bind().fetch(ctx).get(0).get(0, Long.class);
    }

    static final NamedSql PAGE = NamedSql.of("SELECT * FROM tenants ORDER BY id LIMIT :limit");
    static final NamedSql PAGE_AFTER = NamedSql.of("SELECT * FROM tenants WHERE id > :after ORDER BY id LIMIT :limit");

    /** Up to {@code limit} tenants by id, after {@code after} (null: from the first): one probe of the primary key. */
    public List<TenantsRecord> page(DSLContext ctx, String after, int limit) {
        NamedSql.Binding b = after == null ? PAGE.bind() : PAGE_AFTER.bind().set("after", after);
        return b.set("limit", limit).fetch(ctx).map(r -> r.into(TENANTS));
    }

    /** What a write did: the tenant as stored, and whether it was created. */
    public record Change(TenantsRecord tenant, boolean created) {}

    /**
     * PUT (replace: fields left out take the defaults; creates the tenant if needed) or PATCH (only the given
     * fields; the tenant must exist, else empty). {@code given}: field -> value, as {@link TenantLimit#accept}
     * returns them. The audit row is written only when a value changed.
     */
    public Optional<Change> write(DSLContext ctx, String id, Map<String, Object> given, boolean replace, String actor) {
        return write(ctx, id, given, replace, false, actor);
    }

    /**
     * A PUT with {@code If-None-Match: *}: creates the tenant (fields left out take the defaults) only if it does not
     * exist; empty when it does (nothing written, nothing audited). Decided in the write's own transaction, so of two
     * creates at once exactly one creates and the other is empty, never a replace of the first one's limits.
     */
    public Optional<Change> create(DSLContext ctx, String id, Map<String, Object> given, String actor) {
        return write(ctx, id, given, true, true, actor);
    }

    private Optional<Change> write(DSLContext ctx, String id, Map<String, Object> given, boolean replace,
                                   boolean createOnly, String actor) {
        return ctx.transactionResult(c -> {
            DSLContext tx = c.dsl();
            lockAudit(tx); // first: see AUDIT_LOCK
            TenantsRecord old = lock(tx, id);
            if (old == null && !replace) return Optional.<Change>empty();
            if (old != null && createOnly) return Optional.<Change>empty();
            Map<String, Object> v = replace ? TenantLimit.defaults() : new LinkedHashMap<>(TenantLimits.of(old).toMap());
            v.putAll(given);
            TenantLimits limits = TenantLimits.of(id, v);
            if (old == null) {
                // No row to lock, so two PUTs of a new tenant both got here; an upsert would let both count as
                // the create (two 201s, two "create" audit rows, the first one's limits overwritten unaudited).
                // DO NOTHING waits for the other insert's commit: the loser then locks the row and replaces it.
                TenantsRecord row = limits(CREATE.bind().set("id", id), limits).fetch(tx).stream()
                        .findFirst().map(r -> r.into(TENANTS)).orElse(null);
                if (row != null) {
                    audit(tx, id, actor, "create", null, TenantLimits.of(row).toMap());
                    return Optional.of(new Change(row, true));
                }
                // another transaction's insert committed first: a create-only write leaves it as it is
                if (createOnly) return Optional.<Change>empty();
                old = lock(tx, id); // null only if it was deleted meanwhile: then the upsert below creates it
            }
            Map<String, Object> before = old == null ? null : TenantLimits.of(old).toMap();
            // the same limits again (a PATCH of {} or of the values stored) is not a change: no audit row, and
            // updated_at stays the time of the last change (the write had moved it, with nothing in the audit)
            if (before != null && before.equals(limits.toMap())) return Optional.of(new Change(old, false));
            TenantsRecord row = limits(UPSERT.bind().set("id", id), limits).fetch(tx).get(0).into(TENANTS);
            Map<String, Object> after = TenantLimits.of(row).toMap();
            if (before == null || !before.equals(after)) {
                audit(tx, id, actor, old == null ? "create" : replace ? "replace" : "patch", before, after);
            }
            return Optional.of(new Change(row, old == null));
        });
    }

    private static void audit(DSLContext tx, String id, String actor, String action, Map<String, Object> before,
                              Map<String, Object> after) {
        AUDIT.bind().set("tenant_id", id).set("actor", actor).set("action", action)
                .set("old_values", json(before)).set("new_values", json(after)).execute(tx);
    }

    private static TenantsRecord lock(DSLContext tx, String id) {
        return LOCK.bind().set("id", id).fetch(tx).stream().findFirst().map(r -> r.into(TENANTS)).orElse(null);
    }

    /** One audit row; old and new values as JSON (old is null when the tenant was created). */
    public record AuditEntry(long id, String tenant, String actor, String action, JsonNode oldValues,
                             JsonNode newValues, OffsetDateTime changedAt) {}

    public List<AuditEntry> audit(DSLContext ctx, String tenantOrNull, Long beforeId, int limit) {
        List<AuditEntry> out = new ArrayList<>();
        for (Record r : AUDIT_PAGE.bind().set("tenant_id", tenantOrNull).set("before_id", beforeId).set("limit", limit)
                .fetch(ctx)) {
            out.add(new AuditEntry(r.get(0, Long.class), r.get(1, String.class), r.get(2, String.class),
                    r.get(3, String.class), parse(r.get(4, JSONB.class)), parse(r.get(5, JSONB.class)),
                    r.get(6, OffsetDateTime.class)));
        }
        return out;
    }

    private static String json(Object o) {
        if (o == null) return null;
        try {
            return Json.MAPPER.writeValueAsString(o);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private static JsonNode parse(JSONB j) {
        if (j == null) return null;
        try {
            return Json.MAPPER.readTree(j.data());
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}

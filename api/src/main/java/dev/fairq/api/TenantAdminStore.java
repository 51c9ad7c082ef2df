package dev.fairq.api;

import com.fasterxml.jackson.core.JsonProcessingException;
import dev.fairq.schema.Json;
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
 * Tenants' limits and their audit trail. A change and its audit row are written in one transaction, with
 * the tenant row locked, so the log's old values are exactly what the change replaced. The active scheduler
 * re-reads the tenants table every 500 ms, so a change takes effect within a second.
 */
final class TenantAdminStore {
    private final DSLContext db;

    TenantAdminStore(DSLContext db) {
        this.db = db;
    }

    record Change(TenantView tenant, boolean created) {}

    List<TenantView> list() {
        return db.selectFrom(TENANTS).orderBy(TENANTS.ID).fetch().map(TenantView::of);
    }

    Optional<TenantView> find(String id) {
        return db.selectFrom(TENANTS).where(TENANTS.ID.eq(id)).fetchOptional().map(TenantView::of);
    }

    /**
     * PUT (replace: fields left out take the defaults; creates the tenant if needed) or PATCH (only the
     * given fields; the tenant must exist, else empty).
     */
    Optional<Change> write(String id, Map<String, Object> given, boolean replace, String actor) {
        return db.transactionResult(c -> {
            DSLContext tx = c.dsl();
            // FOR NO KEY UPDATE, not FOR UPDATE: it serialises two admins writing one tenant, but does not
            // conflict with the key-share locks that foreign keys take, so enqueues (jobs.tenant_id) and the
            // scheduler's grants (admission_grants.tenant_id) do not wait for an admin's transaction.
            TenantsRecord old = tx.selectFrom(TENANTS).where(TENANTS.ID.eq(id)).forNoKeyUpdate().fetchOne();
            if (old == null && !replace) return Optional.<Change>empty();
            Map<String, Object> v = replace ? TenantLimitsParser.defaults() : new LinkedHashMap<>(TenantView.of(old).limits());
            v.putAll(given);
            @SuppressWarnings("unchecked")
            List<String> allow = (List<String>) v.get("webhook_allow");
            TenantsRecord row = tx.resultQuery("""
                    INSERT INTO tenants (id, weight, rate_per_second, burst, max_running, max_queued, paused, webhook_allow)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?::text[])
                    ON CONFLICT (id) DO UPDATE SET weight = excluded.weight, rate_per_second = excluded.rate_per_second,
                        burst = excluded.burst, max_running = excluded.max_running, max_queued = excluded.max_queued,
                        paused = excluded.paused, webhook_allow = excluded.webhook_allow, updated_at = now()
                    RETURNING *""", id, v.get("weight"), v.get("rate_per_second"), v.get("burst"), v.get("max_running"),
                    v.get("max_queued"), v.get("paused"), allow.toArray(String[]::new)).fetchOneInto(TENANTS);
            TenantView now = TenantView.of(row);
            Map<String, Object> before = old == null ? null : TenantView.of(old).limits();
            if (before == null || !before.equals(now.limits())) {
                String action = old == null ? "create" : replace ? "replace" : "patch";
                tx.execute("INSERT INTO tenant_audit (tenant_id, actor, action, old_values, new_values) "
                        + "VALUES (?, ?, ?, ?::jsonb, ?::jsonb)", id, actor, action, json(before), json(now.limits()));
            }
            return Optional.of(new Change(now, old == null));
        });
    }

    record AuditEntry(long id, String tenant, String actor, String action, Object oldValues, Object newValues,
                      java.time.Instant changedAt) {}

    /** Newest first, keyset pages on id (tenant_audit_tenant_idx with a tenant, the primary key without). */
    List<AuditEntry> audit(String tenantOrNull, Long beforeId, int limit) {
        List<AuditEntry> out = new ArrayList<>();
        for (Record r : db.resultQuery("""
                SELECT id, tenant_id, actor, action, old_values, new_values, changed_at FROM tenant_audit
                WHERE (?::text IS NULL OR tenant_id = ?) AND (?::bigint IS NULL OR id < ?)
                ORDER BY id DESC LIMIT ?""", tenantOrNull, tenantOrNull, beforeId, beforeId, limit).fetch()) {
            out.add(new AuditEntry(r.get(0, Long.class), r.get(1, String.class), r.get(2, String.class),
                    r.get(3, String.class), parse(r.get(4, JSONB.class)), parse(r.get(5, JSONB.class)),
                    JobView.utc(r.get(6, OffsetDateTime.class))));
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

    private static Object parse(JSONB j) {
        if (j == null) return null;
        try {
            return Json.MAPPER.readTree(j.data());
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}

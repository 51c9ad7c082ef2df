package dev.fairq.api;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.schema.TenantStore;
import org.jooq.DSLContext;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/** The admin API's view of {@link TenantStore}: tenants as {@link TenantView}s, on the API's pool. */
final class TenantAdminStore {
    private final TenantStore store = new TenantStore();
    private final DSLContext db;

    TenantAdminStore(DSLContext db) {
        this.db = db;
    }

    record Change(TenantView tenant, boolean created) {}

    /** Up to {@code limit} tenants by id, after {@code after} (null: from the first). */
    List<TenantView> page(String after, int limit) {
        return store.page(db, after, limit).stream().map(TenantView::of).toList();
    }

    Optional<TenantView> find(String id) {
        return store.find(db, id).map(TenantView::of);
    }

    /** PUT (replace) or PATCH (only the given fields; the tenant must exist, else empty). See {@link TenantStore#write}. */
    Optional<Change> write(String id, Map<String, Object> given, boolean replace, String actor) {
        return store.write(db, id, given, replace, actor).map(c -> new Change(TenantView.of(c.tenant()), c.created()));
    }

    /** PUT with If-None-Match: *: creates only; empty when the tenant exists. See {@link TenantStore#create}. */
    Optional<Change> create(String id, Map<String, Object> given, String actor) {
        return store.create(db, id, given, actor).map(c -> new Change(TenantView.of(c.tenant()), c.created()));
    }

    /** One change; old_values is null for a create and a key_create. */
    record AuditEntry(long id, String tenant,
                      @io.swagger.v3.oas.annotations.media.Schema(description = "the admin token's name, or 'tenants.yml' for a tenant it created") String actor,
                      @io.swagger.v3.oas.annotations.media.Schema(allowableValues = {"create", "replace", "patch", "key_create", "key_revoke"}) String action,
                      @io.swagger.v3.oas.annotations.media.Schema(type = "object", description = "the limits before; null for a create and a key_create; {key_id} for a key_revoke") JsonNode oldValues,
                      @io.swagger.v3.oas.annotations.media.Schema(type = "object", description = "the limits after; {key_id} for a key_create, {key_id, revoked: true} for a key_revoke") JsonNode newValues,
                      java.time.Instant changedAt) {}

    /** Newest first, keyset pages on id. */
    List<AuditEntry> audit(String tenantOrNull, Long beforeId, int limit) {
        return store.audit(db, tenantOrNull, beforeId, limit).stream()
                .map(a -> new AuditEntry(a.id(), a.tenant(), a.actor(), a.action(), a.oldValues(), a.newValues(),
                        JobView.utc(a.changedAt())))
                .toList();
    }
}

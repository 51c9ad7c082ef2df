package dev.fairq.schema;

import org.jooq.DSLContext;

import java.util.Collection;

/**
 * Hands an ordering key on: its head finished (or gave up its turn), so the key's oldest waiting job becomes
 * the head, unless the key already has a head again. Used by every statement that ends a head's turn outside
 * COMPLETE (which hands on in the same statement): failures, the reaper, cancel and discard. Runs in the same
 * transaction as what ended the turn, so a key is never left with waiting jobs and no head. The new head is
 * new admissible work: its tenant is named to the scheduler (a wake-up sent at commit).
 */
final class KeyHandoff {
    static final NamedSql PROMOTE_NEXT = NamedSql.of("""
            UPDATE jobs j SET key_head = true
            FROM (SELECT DISTINCT tenant_id, ordering_key
                  FROM unnest(:tenant_ids::text[], :ordering_keys::text[]) AS k(tenant_id, ordering_key)) k
            WHERE j.id = (SELECT w.id FROM jobs w
                          WHERE w.tenant_id = k.tenant_id AND w.ordering_key = k.ordering_key
                            AND w.status = 'pending' AND NOT w.key_head
                          ORDER BY w.id LIMIT 1)
              AND NOT EXISTS (SELECT 1 FROM jobs h
                              WHERE h.tenant_id = k.tenant_id AND h.ordering_key = k.ordering_key AND h.key_head)
            RETURNING j.id, pg_notify('fairq_jobs', 't:' || j.tenant_id)
            """);

    private KeyHandoff() {}

    static void promoteNext(DSLContext tx, Collection<OrderingKey> keys) {
        if (keys.isEmpty()) return;
        PROMOTE_NEXT.bind()
                .set("tenant_ids", keys.stream().map(OrderingKey::tenantId).toArray(String[]::new))
                .set("ordering_keys", keys.stream().map(OrderingKey::key).toArray(String[]::new))
                .execute(tx);
    }
}

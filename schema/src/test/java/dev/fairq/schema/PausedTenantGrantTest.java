package dev.fairq.schema;

import dev.fairq.schema.generated.enums.JobStatus;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A paused tenant's jobs are accepted but none starts (README, tenant limits), from the moment the pause is committed:
 * a grant the scheduler made before the pause, and has not taken back yet (it learns of the pause within 500 ms and
 * revokes at its next tick), admits nothing in an enqueue, neither the tenant's grant nor a key grant. The grants stay
 * for the scheduler to take back (or for the tenant once it is resumed).
 */
class PausedTenantGrantTest extends StoreTestSupport {
    private long unused(String table) {
        return dsl.fetchCount(dsl.selectFrom(table).where(table.equals("admission_grants") ? "used_at IS NULL" : "true"));
    }

    @Test
    void aPausedTenantsGrantAdmitsNothingInTheEnqueue() {
        store.admission().grant(dsl, List.of(T1));
        dsl.execute("UPDATE tenants SET paused = true WHERE id = ?", T1);
        assertEquals(JobStatus.pending, status(enqueue(job(T1))), "accepted while paused, not admitted");
        assertEquals(JobStatus.pending, status(store.enqueueAll(dsl, List.of(job(T1).build(), job(T1).build())).get(0).job().getId()));
        assertEquals(1, unused("admission_grants"), "the grant is left for the scheduler to take back");

        dsl.execute("UPDATE tenants SET paused = false WHERE id = ?", T1);
        assertEquals(JobStatus.ready, status(enqueue(job(T1))), "resumed, the grant admits as before");
    }

    @Test
    void aPausedTenantsKeyGrantsAdmitNothingInTheEnqueue() {
        dsl.execute("INSERT INTO key_grants (tenant_id, fairness_key, slot, ready_rank) VALUES (?, 'k', 0, 1), (?, chr(1), 0, 1)", T1, T1);
        dsl.execute("UPDATE tenants SET paused = true WHERE id = ?", T1);
        assertEquals(JobStatus.pending, status(enqueue(job(T1).fairnessKey("k"))), "its key's grant admits nothing");
        assertEquals(JobStatus.pending, status(enqueue(job(T1).fairnessKey("other"))), "nor its new-key grant");
        assertEquals(2, unused("key_grants"));

        dsl.execute("UPDATE tenants SET paused = false WHERE id = ?", T1);
        dsl.execute("DELETE FROM jobs");
        assertEquals(JobStatus.ready, status(enqueue(job(T1).fairnessKey("k"))), "resumed, the key grant admits as before");
    }
}

package dev.fairq.schema;

import org.junit.jupiter.api.Test;

import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * V15: an enqueue marks the grant it takes used, and every LOAD reads the used ones. That read must cost what was used
 * since the last tick, not what was used since the last vacuum: on a plain index scan the entries of rows already
 * cleared are marked dead and skipped from then on, where a bitmap scan visits them at every tick (1,000 grants used
 * and cleared: 0.21 ms a read against 0.03, and 2.05 ms of LOAD a tick against 0.65 in the tenants bench).
 */
class UsedGrantsReadTest extends StoreTestSupport {

    @Test
    void anEnqueueMarksItsGrantUsedAndLoadReadsItBack() {
        dsl.execute("INSERT INTO admission_grants (tenant_id) VALUES (?)", T1);
        assertEquals(Set.of(), store.load(dsl, LEASE, false).usedGrants());
        enqueue(job(T1));
        assertEquals(1, dsl.fetchCount(dsl.selectFrom("jobs").where("tenant_id = ? AND status = 'ready'", T1)),
                "the job took the grant");
        Admission.QueueLoad load = store.load(dsl, LEASE, false);
        assertEquals(Set.of(T1), load.usedGrants());
        assertTrue(store.load(dsl, LEASE, true).grantAgeSeconds().isEmpty(), "a used grant is not an outstanding one");

        assertEquals(java.util.List.of(), store.admission().grant(dsl, java.util.List.of(), load.usedGrants()));
        assertEquals(Set.of(), store.load(dsl, LEASE, false).usedGrants(), "cleared by the grant pass");
        assertEquals(0, dsl.fetchCount(dsl.selectFrom("admission_grants")));
    }

    @Test
    void theUsedGrantsAreReadInIndexOrderSoThatClearedOnesAreSkipped() {
        dsl.execute("INSERT INTO admission_grants (tenant_id) VALUES (?)", T1);
        for (int i = 0; i < 200; i++) { // used, then granted again: each leaves an entry behind in the partial index
            dsl.execute("UPDATE admission_grants SET used_at = now() WHERE tenant_id = ?", T1);
            store.admission().grant(dsl, java.util.List.of(T1), Set.of(T1));
        }
        StringBuilder plan = new StringBuilder();
        dsl.connection(c -> { // the scheduler's session: its planner settings, on one connection
            org.jooq.DSLContext one = org.jooq.impl.DSL.using(c);
            for (String setting : Admission.PLANNER_SETTINGS) one.execute("SET " + setting);
            try {
                for (var r : one.resultQuery("EXPLAIN " + Admission.LOAD_WITHOUT_GRANTS.sql(),
                        Admission.LOAD_WITHOUT_GRANTS.bind().clock(clock).set("liveness_ms", 30_000L).args()).fetch()) {
                    plan.append(r.get(0)).append('\n');
                }
            } finally {
                one.execute("RESET ALL");
            }
        });
        assertTrue(plan.toString().contains("Index Only Scan using admission_grants_used_idx")
                || plan.toString().contains("Index Scan using admission_grants_used_idx"), plan.toString());
        assertFalse(plan.toString().contains("Bitmap Index Scan on admission_grants_used_idx"), plan.toString());
        assertEquals(Set.of(), store.load(dsl, LEASE, false).usedGrants());
    }
}

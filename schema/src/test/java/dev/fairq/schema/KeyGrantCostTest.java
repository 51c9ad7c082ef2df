package dev.fairq.schema;

import org.jooq.DSLContext;
import org.jooq.Record;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The scheduler's key grants (Admission.GRANT_KEYS), as its session runs them (sorts and sequential scans ruled out,
 * generic plans), must cost the keys asked for: one tenant probe and one jobs probe each. Written as joins, the
 * window's order (row_number per tenant) was had without a sort from a walk of the whole tenants table (every
 * registered tenant at every grant: 10,101 rows, 4.5 ms with 10,101 tenants; PostgreSQL 15). Counted as the rows and
 * index entries the statement read in its transaction (see DelayedBacklogTest), not timed.
 */
class KeyGrantCostTest extends StoreTestSupport {

    /** Rows and index entries of tenants and jobs read so far in this transaction. */
    private static long readSoFar(DSLContext tx) {
        return tx.fetchOne("""
                SELECT sum(pg_stat_get_xact_tuples_returned(c.oid) + pg_stat_get_xact_tuples_fetched(c.oid))::bigint
                FROM pg_class c
                WHERE c.oid IN ('tenants'::regclass, 'jobs'::regclass)
                   OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN ('tenants'::regclass, 'jobs'::regclass))
                """).get(0, Long.class);
    }

    /** GRANT_KEYS for the given keys of T1 on the scheduler's session, rolled back; returns the rows it read. */
    private long grantKeysRead(String... keys) {
        long[] read = new long[1];
        dsl.connection(c -> {
            DSLContext one = org.jooq.impl.DSL.using(c);
            c.setAutoCommit(false);
            try {
                for (String setting : Admission.PLANNER_SETTINGS) one.execute("SET LOCAL " + setting);
                one.execute("SET LOCAL plan_cache_mode = force_generic_plan"); // SchedulerService's session
                String[] tenants = new String[keys.length];
                Integer[] slots = new Integer[keys.length], most = new Integer[keys.length];
                Double[] ranks = new Double[keys.length];
                java.util.Arrays.fill(tenants, T1);
                java.util.Arrays.fill(slots, 0);
                java.util.Arrays.fill(most, keys.length);
                java.util.Arrays.fill(ranks, 1.0);
                long before = readSoFar(one);
                List<Record> granted = Admission.GRANT_KEYS.bind().clock(clock).set("tenant_ids", tenants).set("keys", keys)
                        .set("slots", slots).set("ranks", ranks).set("most", most).fetch(one);
                read[0] = readSoFar(one) - before;
                assertEquals(1, granted.size(), "only the quiet key is granted: " + granted);
                assertEquals("quiet", granted.get(0).get(1, String.class));
            } finally {
                c.rollback();
                c.setAutoCommit(true);
            }
        });
        return read[0];
    }

    @Test
    void aKeyGrantDoesNotWalkTheRegisteredTenants() {
        dsl.execute("INSERT INTO tenants (id) SELECT 'idle-' || g FROM generate_series(1, 3000) g");
        dsl.execute("INSERT INTO jobs (tenant_id, type, fairness_key, run_at) SELECT ?, 'send-email', 'busy', now() - interval '1 minute' FROM generate_series(1, 20)", T1);
        dsl.execute("ANALYZE tenants");
        dsl.execute("ANALYZE jobs");
        long read = grantKeysRead("busy", "quiet");
        assertTrue(read < 100, "a grant of 2 keys read " + read + " rows and index entries (3,002 tenants registered)");
    }
}

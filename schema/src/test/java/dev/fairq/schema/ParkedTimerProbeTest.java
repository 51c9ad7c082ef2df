package dev.fairq.schema;

import org.jooq.DSLContext;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The timer probe of a drained tenant (Admission.NEXT_DUE, in the scheduler's tick) finds its next admissible job due
 * later without walking its parked jobs: jobs of a type no live worker serves that had been delayed (or retried, or
 * scheduled) were in jobs_due_later_idx ahead of it, and every probe read each of them (V21). Counted as the index
 * entries the probe read in its transaction (see DelayedBacklogTest), not timed.
 */
class ParkedTimerProbeTest extends StoreTestSupport {

    @Test
    void parkedDelayedJobsAreNotWalkedByTheTimerProbe() {
        // delayed by half an hour when enqueued, due since, parked: no worker serves 'legacy'
        dsl.execute("INSERT INTO jobs (tenant_id, type, created_at, run_at, no_worker_since) "
                + "SELECT ?, 'legacy', now() - interval '2 hours', now() - interval '90 minutes', now() - interval '1 hour' "
                + "FROM generate_series(1, 5000)", T1);
        enqueue(job(T1).delay(java.time.Duration.ofMinutes(10)));
        dsl.execute("ANALYZE jobs");
        long[] read = new long[1];
        dsl.transaction(c -> {
            DSLContext tx = c.dsl();
            long before = entriesReadSoFar(tx);
            Map<String, Long> due = store.admission().nextDueInMs(tx, List.of(T1));
            read[0] = entriesReadSoFar(tx) - before;
            long ms = due.get(T1);
            assertTrue(ms > 9 * 60_000 && ms <= 10 * 60_000, "the delayed job's wait: " + ms);
        });
        assertTrue(read[0] < 100, "the timer probe read " + read[0] + " index entries (5,000 parked delayed jobs)");
        assertEquals(5000, countJobs(T1) - 1);
    }

    private static long entriesReadSoFar(DSLContext tx) {
        return tx.fetchOne("SELECT sum(pg_stat_get_xact_tuples_returned(oid) + pg_stat_get_xact_tuples_fetched(oid))::bigint "
                + "FROM pg_class WHERE relname IN ('jobs', 'jobs_due_later_idx')").get(0, Long.class);
    }
}

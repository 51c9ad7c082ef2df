package dev.fairq.schema;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Started attempts are counted without an index on started_at (V6): from the finished, failed and lease
 * indexes. Every place a started job can be in is covered here, and the counts are checked against a plain
 * scan of started_at.
 */
class DashboardStoreTest extends StoreTestSupport {
    final DashboardStore dashboards = new DashboardStore();

    @Test
    void startedAttemptsAreCountedWhereverTheJobIsNow() {
        long succeeded = enqueue(job(T1));
        long retrying = enqueue(job(T1));
        long dead = enqueue(job(T1).maxAttempts(1));
        long running = enqueue(job(T1));
        long startedLongAgo = enqueue(job(T1));
        long neverStarted = enqueue(job(T1).delay(Duration.ofHours(1)));
        long otherTenant = enqueue(job(T2));

        int a = admitAndClaim("w1", List.of(succeeded, retrying, dead, running, startedLongAgo)).get(0).attempt();
        admitAndClaim("w2", otherTenant);
        store.finish(dsl, "w1", List.of(
                new JobOutcome.Succeeded(succeeded, a),
                new JobOutcome.Failed(retrying, a, false, 3_600_000, "again later"),
                new JobOutcome.Failed(dead, a, true, 0, "gave up"),
                new JobOutcome.Succeeded(startedLongAgo, a)));
        // a long job: started two hours ago, finished just now (inside every window, but not its start)
        dsl.execute("UPDATE jobs SET started_at = now() - interval '2 hours' WHERE id = ?", startedLongAgo);

        assertEquals("pending", status(retrying).getLiteral());
        assertEquals("running", status(running).getLiteral());
        assertEquals("pending", status(neverStarted).getLiteral());

        dashboards.rollupMinutes(dsl, 5);
        long rolledUp = scalar(Long.class, "SELECT sum(started) FROM tenant_minute_stats WHERE tenant_id = ?", T1);
        assertEquals(4L, rolledUp, "succeeded, retrying, dead, running; not the one started two hours ago");
        assertEquals(plainScan(T1, "date_trunc('minute', now()) - interval '4 minutes'"), rolledUp);
        assertEquals(1L, scalar(Long.class, "SELECT sum(started) FROM tenant_minute_stats WHERE tenant_id = ?", T2));
    }

    /** What the dropped index answered: jobs of the tenant whose latest attempt started since {@code since}. */
    private long plainScan(String tenant, String since) {
        return scalar(Long.class, "SELECT count(*) FROM jobs WHERE tenant_id = ? AND started_at >= " + since, tenant);
    }
}

package dev.fairq.schema;

import dev.fairq.schema.generated.enums.JobStatus;
import dev.fairq.schema.generated.tables.records.JobsRecord;
import org.jooq.DSLContext;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A tenant's job list (GET /v1/jobs, the dashboard's dead letters) is one range of jobs_tenant_status_idx per status,
 * whatever the statistics say. A tenant that holds most of the table, its history older than its waiting backlog: with
 * {@code tenant_id = ?} the planner walked the primary key backwards through every newer job (of any tenant and
 * status) until it had the page, since it expects the tenant's finished jobs spread evenly over the ids; a page deep in
 * the history read every job below it once per status that has none there. Counted as rows read in the transaction
 * (see FilteredPageTest), not timed.
 */
class TenantPageTest extends StoreTestSupport {
    static final int HISTORY = 20_000, BACKLOG = 10_000;
    final JobQueries queries = new JobQueries();

    @BeforeEach
    void aLongHistoryThenABacklog() {
        dsl.execute("INSERT INTO jobs (tenant_id, type, status, attempts, started_at, finished_at) "
                + "SELECT ?, 'send-email', 'succeeded', 1, now(), now() FROM generate_series(1, ?)", T1, HISTORY);
        dsl.execute("INSERT INTO jobs (tenant_id, type, status, attempts, started_at, finished_at, failed_at) "
                + "SELECT ?, 'send-email', 'dead', 1, now(), now(), now() FROM generate_series(1, 60)", T1);
        dsl.execute("INSERT INTO jobs (tenant_id, type, run_at) SELECT ?, 'send-email', now() + interval '1 day' "
                + "FROM generate_series(1, ?)", T1, BACKLOG);
        dsl.execute("INSERT INTO jobs (tenant_id, type) SELECT ?, 'send-email' FROM generate_series(1, 100)", T2);
        dsl.execute("ANALYZE jobs");
    }

    /** Rows of jobs read by the call, in one transaction (StoreTestSupport#jobsRowsReadSoFar). */
    private <T> long rowsRead(Function<DSLContext, T> call, java.util.function.Consumer<T> check) {
        long[] read = new long[1];
        dsl.transaction(c -> {
            DSLContext tx = c.dsl();
            long before = jobsRowsReadSoFar(tx);
            check.accept(call.apply(tx));
            read[0] = jobsRowsReadSoFar(tx) - before;
        });
        return read[0];
    }

    @Test
    void theNewestPageOfAStatusReadsThatPage() {
        long read = rowsRead(tx -> queries.list(tx, new JobQueries.JobFilter(T1, JobStatus.succeeded, null, null, null), null, 50),
                rows -> assertEquals(50, rows.size()));
        assertTrue(read <= 100, "a page of 50 succeeded jobs read " + read + " rows (" + BACKLOG + " newer waiting jobs)");
        read = rowsRead(tx -> queries.list(tx, new JobQueries.JobFilter(T1, JobStatus.dead, null, null, null), null, 50),
                rows -> assertEquals(50, rows.size()));
        assertTrue(read <= 100, "the dead letters' page read " + read + " rows");
    }

    @Test
    void aPageDeepInTheHistoryReadsThatPage() {
        long after = scalar(Long.class, "SELECT min(id) + 1000 FROM jobs WHERE tenant_id = ?", T1);
        long read = rowsRead(tx -> queries.list(tx, new JobQueries.JobFilter(T1, null, null, null, null), after, 50),
                rows -> {
                    assertEquals(50, rows.size());
                    assertEquals(after - 1, rows.get(0).getId(), "newest first, below the cursor");
                });
        assertTrue(read <= 400, "a page of 50 below an old id read " + read + " rows (each status's range, not the history)");
    }

    @Test
    void aFilteredPageWalksAtMostItsBoundPastTheBacklog() {
        long read = rowsRead(tx -> queries.page(tx, new JobQueries.JobFilter(T1, JobStatus.succeeded, null, "nothing-of-this-type", null), null, 50),
                p -> {
                    assertEquals(List.<JobsRecord>of(), p.jobs());
                    assertTrue(p.next() != null, "the walk was cut at its bound");
                });
        assertTrue(read <= JobQueries.FILTERED_SCAN + 100, "a filtered page read " + read + " rows");
    }
}

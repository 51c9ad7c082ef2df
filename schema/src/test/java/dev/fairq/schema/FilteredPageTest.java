package dev.fairq.schema;

import dev.fairq.schema.generated.enums.JobStatus;
import dev.fairq.schema.generated.tables.records.JobsRecord;
import org.jooq.DSLContext;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * GET /v1/jobs filtered on a column no index of finished jobs holds (queue, type, ordering_key): a page walks at
 * most FILTERED_SCAN entries per status, and paging on with next still finds every match, once, newest first. A
 * tenant with 25,000 finished jobs of one type and 5 of another: the old listing walked all 25,000 (a heap visit
 * each) on every call for the rare type.
 */
class FilteredPageTest extends StoreTestSupport {
    static final int COMMON = 25_000;
    /** FILTERED_SCAN (10,000) of the one long range, and the short ones; the walk to the end read 25,000 and more. */
    static final long BOUND = 10_100;
    final JobQueries queries = new JobQueries();
    final List<Long> rare = new ArrayList<>();

    @BeforeEach
    void aLongHistoryAndAFewOfARareType() {
        for (int i = 0; i < 3; i++) rare.add(enqueue(job(T1).queue("reports")));
        dsl.execute("UPDATE jobs SET status = 'succeeded', attempts = 1, started_at = now(), finished_at = now() WHERE tenant_id = ?", T1);
        dsl.execute("INSERT INTO jobs (tenant_id, type, status, attempts, started_at, finished_at) "
                + "SELECT ?, 'send-email', 'succeeded', 1, now(), now() FROM generate_series(1, ?)", T1, COMMON);
        rare.add(enqueue(job(T1).queue("reports")));
        rare.add(enqueue(job(T1).queue("reports")));
        enqueue(job(T2).queue("reports")); // another tenant's: never listed
        dsl.execute("ANALYZE jobs");
        java.util.Collections.reverse(rare); // newest first, as pages list them
    }

    private List<Long> pageThrough(JobQueries.JobFilter filter, int limit, List<Long> entriesPerPage) {
        List<Long> seen = new ArrayList<>();
        Long after = null;
        for (int pages = 0; pages < 100; pages++) {
            Long[] next = new Long[1];
            Long afterId = after;
            dsl.transaction(c -> {
                DSLContext tx = c.dsl();
                long before = jobsRowsReadSoFar(tx);
                JobQueries.Page p = queries.page(tx, filter, afterId, limit);
                entriesPerPage.add(jobsRowsReadSoFar(tx) - before);
                assertTrue(p.jobs().size() <= limit);
                for (JobsRecord j : p.jobs()) seen.add(j.getId());
                next[0] = p.next();
            });
            if (next[0] == null) return seen;
            after = next[0];
        }
        throw new AssertionError("100 pages and no end");
    }

    @Test
    void aRareQueueIsFoundPageByPageWithoutWalkingTheHistoryEachTime() {
        List<Long> entries = new ArrayList<>();
        List<Long> seen = pageThrough(new JobQueries.JobFilter(T1, null, "reports", null, null), 2, entries);
        assertEquals(rare, seen, "every match once, newest first, across the pages");
        assertTrue(entries.size() >= 3, "25,000 finished jobs take more than one page: " + entries);
        // only the succeeded range is long here: a page reads at most 10,000 of it, plus the few others
        for (long e : entries) assertTrue(e <= BOUND, "a page read " + e + " rows of jobs: " + entries);
    }

    @Test
    void oneStatusAndTheAdminsListAlsoStopAndGoOn() {
        List<Long> entries = new ArrayList<>();
        assertEquals(rare.subList(2, 5), pageThrough(new JobQueries.JobFilter(T1, JobStatus.succeeded, "reports", null, null), 50, entries));
        assertTrue(entries.stream().allMatch(e -> e <= BOUND), entries.toString());
        entries.clear();
        List<Long> all = pageThrough(new JobQueries.JobFilter(null, null, "reports", null, null), 50, entries);
        assertEquals(6, all.size(), "the admin's list, every tenant: " + all);
        assertTrue(entries.stream().allMatch(e -> e <= BOUND), entries.toString());
    }

    @Test
    void withoutAFilterAPageIsFullUntilTheEnd() {
        JobQueries.Page p = queries.page(dsl, new JobQueries.JobFilter(T1, null, null, null, null), null, 50);
        assertEquals(50, p.jobs().size());
        assertEquals(p.jobs().get(49).getId(), p.next());
        JobQueries.Page last = queries.page(dsl, new JobQueries.JobFilter(T1, JobStatus.pending, null, null, null), null, 50);
        assertEquals(2, last.jobs().size());
        assertNull(last.next());
    }
}

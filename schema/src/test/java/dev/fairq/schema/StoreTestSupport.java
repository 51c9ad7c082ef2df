package dev.fairq.schema;

import dev.fairq.schema.generated.enums.JobStatus;
import dev.fairq.schema.generated.tables.records.JobsRecord;
import dev.fairq.testing.TestDatabase;
import org.jooq.DSLContext;
import org.junit.jupiter.api.BeforeEach;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static dev.fairq.schema.generated.Tables.JOBS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Shared set-up and small helpers for the JobStore tests: a clean database per test, two tenants, and
 * short-hands that read the final state of the jobs table straight from PostgreSQL.
 */
abstract class StoreTestSupport {
    static final String T1 = "acme";
    static final String T2 = "globex";
    static final Duration LEASE = Duration.ofSeconds(30);

    /**
     * Rows of jobs read in this transaction so far (see DelayedBacklogTest for why in one transaction): read by a
     * sequential scan, or fetched through an index (plain or bitmap), whichever plan the statement took.
     */
    static long jobsRowsReadSoFar(DSLContext tx) {
        // a sequential scan counts on the table, a bitmap heap scan's fetches too, a plain index scan's on its index
        return tx.fetchOne("SELECT (pg_stat_get_xact_tuples_returned('jobs'::regclass) + pg_stat_get_xact_tuples_fetched('jobs'::regclass) "
                + "+ (SELECT coalesce(sum(pg_stat_get_xact_tuples_fetched(indexrelid)), 0) FROM pg_index WHERE indrelid = 'jobs'::regclass))::bigint")
                .get(0, Long.class);
    }

    final TestDatabase db = TestDatabase.get();
    /** The queue's clock: leases, backoffs and due times move when a test advances it, never in real time. */
    final SettableClock clock = new SettableClock();
    final JobStore store = new JobStore(clock);
    DSLContext dsl;

    @BeforeEach
    void cleanDatabase() {
        db.reset();
        db.createTenant(T1);
        db.createTenant(T2);
        dsl = db.dsl();
    }

    static JobRequest.Builder job(String tenant) {
        return JobRequest.builder(tenant, "send-email");
    }

    long enqueue(JobRequest.Builder request) {
        return store.enqueue(dsl, request.build()).job().getId();
    }

    int countJobs() {
        return dsl.fetchCount(JOBS);
    }

    int countJobs(String tenant) {
        return dsl.fetchCount(JOBS, JOBS.TENANT_ID.eq(tenant));
    }

    JobsRecord row(long id) {
        return store.find(dsl, id).orElseThrow(() -> new AssertionError("job " + id + " is not in the table"));
    }

    JobStatus status(long id) {
        return row(id).getStatus();
    }

    /** The queue's now: what the store's statements use (the settable clock's time). */
    OffsetDateTime dbNow() {
        return clock.sqlNow();
    }

    /** The single value of a plain SQL query. */
    <T> T scalar(Class<T> type, String sql, Object... bindings) {
        return dsl.resultQuery(sql, bindings).fetchOne(0, type);
    }

    /** Ids of the jobs of one ordering key that are key_head (there must be at most one). */
    List<Long> heads(String tenant, String orderingKey) {
        return dsl.select(JOBS.ID).from(JOBS)
                .where(JOBS.TENANT_ID.eq(tenant).and(JOBS.ORDERING_KEY.eq(orderingKey)).and(JOBS.KEY_HEAD))
                .orderBy(JOBS.ID).fetch(JOBS.ID);
    }

    List<Long> candidates(String tenant) {
        return store.admissionCandidates(dsl, Map.of(tenant, 100)).getOrDefault(tenant, List.of());
    }

    /** Admits the given jobs and claims them all as {@code worker}; asserts every one was claimed. */
    List<ClaimedJob> admitAndClaim(String worker, List<Long> ids) {
        List<Long> admitted = store.admit(dsl, ids);
        assertEquals(Set.copyOf(ids), Set.copyOf(admitted), "admitted");
        List<ClaimedJob> claimed = store.claim(dsl, worker, ids.size() + 10, LEASE);
        assertEquals(Set.copyOf(ids), Set.copyOf(claimed.stream().map(ClaimedJob::id).toList()), "claimed");
        return claimed;
    }

    ClaimedJob admitAndClaim(String worker, long id) {
        return admitAndClaim(worker, List.of(id)).get(0);
    }

    static <T> T get(Future<T> future) throws Exception {
        return future.get(60, TimeUnit.SECONDS);
    }

    static void shutdown(ExecutorService pool) throws InterruptedException {
        pool.shutdownNow();
        assertTrue(pool.awaitTermination(60, TimeUnit.SECONDS), "test threads did not stop");
    }
}

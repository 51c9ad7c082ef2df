package dev.fairq.schema;

import org.jooq.DSLContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A queue drains to zero, autovacuum analyses the empty table, then a flood arrives: every statement the queue
 * runs while the statistics still say "empty" must keep a plan that does not walk the table. The statements
 * are explained with the flood in place and the stale statistics, and none may read the jobs table
 * sequentially (which, inside a nested loop, is the jobs x tenants plan that once ran retention for 11 minutes).
 */
class StaleStatisticsTest extends StoreTestSupport {
    static final int FLOOD = 10_000, FINISHED = 10_000;

    @BeforeEach
    void analyseEmptyThenFlood() {
        // autovacuum would soon analyse the flood and make the statistics right: keep it out for this test
        dsl.execute("ALTER TABLE jobs SET (autovacuum_enabled = false)");
        dsl.execute("ANALYZE jobs"); // the table is empty here: the statistics now say so
        dsl.execute("""
                INSERT INTO jobs (tenant_id, type, status, attempts, started_at, finished_at, created_at)
                SELECT CASE WHEN g % 2 = 0 THEN ? ELSE ? END, 'noop', 'succeeded', 1,
                       now() - interval '2 days', now() - interval '2 days', now() - interval '2 days'
                FROM generate_series(1, ?) g""", T1, T2, FINISHED);
        dsl.execute("""
                INSERT INTO jobs (tenant_id, type) SELECT CASE WHEN g % 2 = 0 THEN ? ELSE ? END, 'noop'
                FROM generate_series(1, ?) g""", T1, T2, FLOOD);
    }

    @AfterEach
    void autovacuumBack() {
        dsl.execute("ALTER TABLE jobs RESET (autovacuum_enabled)");
    }

    /** The plan of a statement with its values bound (what the queue runs), as text. */
    private String plan(NamedSql.Binding statement, NamedSql sql) {
        StringBuilder out = new StringBuilder();
        for (var r : dsl.resultQuery("EXPLAIN " + sql.sql(), statement.args()).fetch()) out.append(r.get(0)).append('\n');
        return out.toString();
    }

    private void assertNoTableWalk(String name, String plan) {
        assertFalse(plan.contains("Seq Scan on jobs"), name + " walks the jobs table:\n" + plan);
    }

    @Test
    void everyQueueStatementKeepsAnIndexPlan() {
        List<Long> ids = new ArrayList<>();
        for (long id = 1; id <= 500; id++) ids.add(id);
        Long[] idArray = ids.toArray(Long[]::new);
        Integer[] ones = new Integer[idArray.length];
        java.util.Arrays.fill(ones, 1);
        String[] tenants = {T1, T2};

        assertNoTableWalk("retention", plan(Retention.DELETE_FINISHED.bind().clock(clock).set("tenant_ids", tenants)
                .set("keep_ms", 86_400_000L).set("dead_keep_ms", 604_800_000L).set("batch", 5000), Retention.DELETE_FINISHED));
        assertNoTableWalk("retention's tenants", plan(Retention.TENANTS_WITH_FINISHED.bind(), Retention.TENANTS_WITH_FINISHED));
        assertNoTableWalk("claim", plan(Leases.CLAIM.bind().clock(clock).set("worker_id", "w").set("lease_ms", 30_000L)
                .set("limit", 100).set("queues", null).set("types", null), Leases.CLAIM));
        assertNoTableWalk("routed claim", plan(Leases.CLAIM.bind().clock(clock).set("worker_id", "w").set("lease_ms", 30_000L)
                .set("limit", 100).set("queues", new String[]{"urgent"}).set("types", new String[]{"a", "b"}), Leases.CLAIM));
        assertNoTableWalk("heartbeat", plan(WorkerRoute.ANY.bind(Leases.HEARTBEAT.bind()).clock(clock).set("worker_id", "w")
                .set("capacity", 8).set("lease_ms", 30_000L).set("ids", idArray).set("attempts", ones), Leases.HEARTBEAT));
        assertNoTableWalk("snooze", plan(Completion.SNOOZE.bind().clock(clock).set("ids", idArray).set("attempts", ones)
                .set("delays_ms", new Long[idArray.length]).set("reasons", new String[idArray.length]).set("worker_id", "w"),
                Completion.SNOOZE));
        assertNoTableWalk("park", plan(Admission.PARK.bind().clock(clock).set("ids", idArray), Admission.PARK));
        assertNoTableWalk("unadmit unroutable", plan(Admission.UNADMIT_UNROUTABLE.bind().clock(clock)
                .set("tenant_ids", tenants).set("queues", new String[]{"q", "q"}).set("types", new String[]{"t", "t"}),
                Admission.UNADMIT_UNROUTABLE));
        assertNoTableWalk("unpark", plan(Admission.UNPARK.bind().set("types", new String[]{"a"})
                .set("route_queues", new String[]{null}).set("route_types", new String[]{"a"}).set("batch", 5000), Admission.UNPARK));
        assertNoTableWalk("hand-back", plan(Leases.RELEASE.bind().clock(clock).set("worker_id", "w").set("ids", idArray)
                .set("attempts", ones), Leases.RELEASE));
        assertNoTableWalk("cancel requests", plan(Leases.CANCEL_REQUESTS.bind().set("worker_id", "w").set("ids", idArray)
                .set("attempts", ones), Leases.CANCEL_REQUESTS));
        assertNoTableWalk("cancelled attempts", plan(Completion.CANCEL.bind().clock(clock).set("ids", idArray)
                .set("attempts", ones).set("errors", new String[idArray.length]).set("worker_id", "w"), Completion.CANCEL));
        assertNoTableWalk("reaper", plan(Leases.REAP.bind().clock(clock).set("limit", 1000), Leases.REAP));
        Long[] runUs = new Long[idArray.length];
        java.util.Arrays.fill(runUs, 5_000L);
        assertNoTableWalk("complete", plan(Completion.COMPLETE.bind().clock(clock).set("ids", idArray).set("attempts", ones)
                .set("run_us", runUs).set("worker_id", "w"), Completion.COMPLETE));
        Boolean[] dead = new Boolean[idArray.length];
        java.util.Arrays.fill(dead, false);
        Long[] delays = new Long[idArray.length];
        java.util.Arrays.fill(delays, 1000L);
        String[] errors = new String[idArray.length];
        java.util.Arrays.fill(errors, "e");
        assertNoTableWalk("fail", plan(Completion.FAIL.bind().clock(clock).set("dead", dead).set("delays_ms", delays)
                .set("errors", errors).set("attempts", ones).set("ids", idArray).set("worker_id", "w"), Completion.FAIL));
        assertNoTableWalk("admit", plan(Admission.ADMIT.bind().clock(clock).set("ranks", new Double[]{1.0, 2.0})
                .set("ids", new Long[]{1L, 2L}), Admission.ADMIT));
        assertNoTableWalk("candidates", plan(Admission.CANDIDATES.bind().clock(clock).set("tenant_ids", tenants)
                .set("limits", new Integer[]{100, 100}).set("keyed", new Boolean[]{true, false}).set("key_tenants", new String[]{T1})
                .set("key_names", new String[]{"k"}).set("key_rooms", new Integer[]{2}), Admission.CANDIDATES));
        assertNoTableWalk("finished work", plan(Admission.FINISHED_WORK.bind().clock(clock).set("tenant_ids", tenants)
                .set("sinces", new String[]{java.time.OffsetDateTime.now().minusSeconds(5).toString(), null})
                .set("floor_seconds", 0.001), Admission.FINISHED_WORK));
        assertNoTableWalk("load", plan(Admission.LOAD.bind().clock(clock).set("liveness_ms", 30_000L), Admission.LOAD));
        assertNoTableWalk("tenants with work", plan(Admission.TENANTS_WITH_WORK.bind(), Admission.TENANTS_WITH_WORK));
        assertNoTableWalk("next due", plan(Admission.NEXT_DUE.bind().clock(clock).set("tenant_ids", tenants)
                .set("picked_ids", new Long[]{1L}), Admission.NEXT_DUE));
        assertNoTableWalk("queue room", plan(Enqueue.QUEUED_COUNTS.bind().set("tenant_ids", tenants), Enqueue.QUEUED_COUNTS));
        assertNoTableWalk("queue room, one tenant", plan(Enqueue.QUEUED_COUNT.bind().set("tenant_id", T1), Enqueue.QUEUED_COUNT));
        assertNoTableWalk("promote next", plan(KeyHandoff.PROMOTE_NEXT.bind().set("tenant_ids", tenants)
                .set("ordering_keys", new String[]{"k", "k"}), KeyHandoff.PROMOTE_NEXT));
    }

    /** The API's per-request reads and the dashboard rollup: index ranges of the tenant, whatever the statistics. */
    @Test
    void theApiReadsAndTheRollupKeepAnIndexPlan() {
        assertNoTableWalk("stats", plan(JobQueries.STATS.bind().set("tenant", T1).set("window_ms", 300_000L), JobQueries.STATS));
        assertNoTableWalk("explain's context", plan(JobQueries.WAITING_CONTEXT.bind().set("tenant", T1),
                JobQueries.WAITING_CONTEXT));
        assertNoTableWalk("dashboard head", plan(DashboardStore.TENANT_HEAD.bind().clock(clock).set("tenant", T1)
                .set("window_ms", 3_600_000L).set("recent_ms", 300_000L), DashboardStore.TENANT_HEAD));
        assertNoTableWalk("rollup", plan(DashboardStore.ROLLUP.bind().clock(clock)
                .set("since", java.time.OffsetDateTime.now().minusMinutes(1)).set("commit_lag_ms", 2_000L)
                .set("tenant_ids", new String[]{T1, T2}),
                DashboardStore.ROLLUP));
    }

    /**
     * A tenant's page of one status (the dashboard's dead letters, GET /v1/jobs?status=) once PostgreSQL has
     * switched the prepared statement to a generic plan: it must still use jobs_tenant_status_idx (partial:
     * not ready, not running), not walk the primary key backwards through the tenant's history.
     */
    @Test
    void aPageOfOneStatusKeepsItsIndexInAGenericPlan() {
        var query = JobQueries.tenantStatusPage(dsl, T1, dev.fairq.schema.generated.enums.JobStatus.dead, 50);
        String indexed = dsl.render(query); // '?' per bound value, as the driver sends it
        StringBuilder sql = new StringBuilder();
        int n = 0;
        for (char ch : indexed.toCharArray()) {
            if (ch == '?') sql.append('$').append(++n);
            else sql.append(ch);
        }
        StringBuilder plan = new StringBuilder();
        dsl.connection(c -> {
            try (var st = c.createStatement()) {
                st.execute("SET plan_cache_mode = force_generic_plan");
                st.execute("PREPARE dead_page AS " + sql);
                String args = String.join(", ", query.getBindValues().stream().map(v -> "'" + v + "'").toList());
                try (var rs = st.executeQuery("EXPLAIN EXECUTE dead_page(" + args + ")")) {
                    while (rs.next()) plan.append(rs.getString(1)).append('\n');
                }
                st.execute("DEALLOCATE dead_page");
                st.execute("RESET plan_cache_mode");
            }
        });
        assertFalse(plan.toString().contains("jobs_pkey"), "walks the primary key:\n" + plan);
        org.junit.jupiter.api.Assertions.assertTrue(plan.toString().contains("jobs_tenant_status_idx"), plan.toString());
    }

    @Test
    void retentionDeletesExactlyThePastJobsWhateverTheStatisticsSay() {
        int deleted = 0;
        for (int i = 0; i < 10; i++) {
            int n = store.retention().deleteFinished(dsl, Duration.ofDays(1), Duration.ofDays(7), 5000);
            deleted += n;
            if (n < 5000) break;
        }
        assertEquals(FINISHED, deleted);
        assertEquals(FLOOD, countJobs(), "the flood is untouched");
    }

    /**
     * The read of finished attempts probes each tenant's own range, whatever the statistics say: written as a plain
     * lateral join it was pulled up into one scan of every tenant's finished jobs hash-joined to the tenants (with
     * fresh statistics too: 87,199 rows, 273 ms a read in the latency benchmark).
     */
    @Test
    void theReadOfFinishedAttemptsProbesEachTenantsOwnRange() {
        NamedSql.Binding read = Admission.FINISHED_WORK.bind().clock(clock).set("tenant_ids", new String[]{T1, T2})
                .set("sinces", new String[]{java.time.OffsetDateTime.now().minusDays(3).toString(), null})
                .set("floor_seconds", 0.001);
        // fresh statistics, in a transaction rolled back: ANALYZE's statistics are transactional, and the other
        // tests of this class need the ones of an empty table (an ANALYZE of an empty table keeps older ones)
        StringBuilder out = new StringBuilder();
        try {
            dsl.transaction(tx -> {
                tx.dsl().execute("ANALYZE jobs");
                for (var r : tx.dsl().resultQuery("EXPLAIN " + Admission.FINISHED_WORK.sql(), read.args()).fetch()) {
                    out.append(r.get(0)).append('\n');
                }
                throw new IllegalStateException("roll back");
            });
        } catch (IllegalStateException expected) {
            // rolled back
        }
        String plan = out.toString();
        assertFalse(plan.contains("Hash Join"), "one scan of all tenants' finished jobs:\n" + plan);
        assertTrue(plan.lines().anyMatch(l -> l.contains("Index Cond") && l.contains("tenant_id = t.tenant_id")),
                "no index range per tenant:\n" + plan);
    }

    /**
     * Statistics taken while a tenant's flood was all pending (enqueueAll analyses inside its own transaction), then
     * the flood finishes: the read of finished attempts must still walk only the window of each (tenant, status)
     * range of jobs_tenant_finished_idx. Written with {@code status IN (...)} and no order, it took
     * jobs_tenant_status_idx with the window as a filter: the tenant's whole finished history at every read (70 ms
     * a read with the tenants benchmark's flood, four reads a second inside the tick). Both with the planner's
     * defaults and with the scheduler's session (no sorts, no sequential scans).
     */
    @Test
    void theReadOfFinishedAttemptsWalksOnlyTheWindowWhenTheStatisticsPredateTheFinishes() {
        OffsetDateTime now = dbNow();
        OffsetDateTime since = now.minusSeconds(3);
        List<String> plans = new ArrayList<>();
        List<Long> attempts = new ArrayList<>();
        try {
            dsl.transaction(tx -> {
                DSLContext t = tx.dsl();
                t.execute("DELETE FROM jobs");
                t.execute("INSERT INTO jobs (tenant_id, type) SELECT ?, 'noop' FROM generate_series(1, 20000)", T1);
                t.execute("ANALYZE jobs"); // every row pending, no finished_at anywhere
                // 20,000 finished over the last 20 s (the window from `since` to a second before now holds 2,000)
                t.execute("""
                        UPDATE jobs SET status = 'succeeded', attempts = 1, run_us = 5000,
                               started_at = ?::timestamptz - (id % 20000) * interval '1 ms' - interval '5 ms',
                               finished_at = ?::timestamptz - (id % 20000) * interval '1 ms'""", now, now);
                NamedSql.Binding read = Admission.FINISHED_WORK.bind().clock(clock).set("tenant_ids", new String[]{T1, T2})
                        .set("sinces", new String[]{since.toString(), since.toString()}).set("floor_seconds", 0.001);
                for (boolean schedulerSession : new boolean[]{false, true}) {
                    if (schedulerSession) for (String setting : Admission.PLANNER_SETTINGS) t.execute("SET LOCAL " + setting);
                    StringBuilder plan = new StringBuilder();
                    for (var r : t.resultQuery("EXPLAIN " + Admission.FINISHED_WORK.sql(), read.args()).fetch()) {
                        plan.append(r.get(0)).append('\n');
                    }
                    plans.add(plan.toString());
                    attempts.add(store.admission().finishedWork(t, List.of(T1, T2), List.of(since, since), 0.001)
                            .work().stream().mapToLong(Admission.FinishedWork::attempts).sum());
                }
                attempts.add(t.resultQuery("SELECT count(*) FROM jobs WHERE tenant_id = ? AND finished_at > ?::timestamptz "
                        + "AND finished_at <= ?::timestamptz - interval '1 second'", T1, since, now).fetchOne(0, Long.class));
                throw new IllegalStateException("roll back");
            });
        } catch (IllegalStateException expected) {
            // rolled back: the other tests keep the statistics of an empty table
        }
        assertEquals(2, plans.size());
        for (String plan : plans) {
            assertFalse(plan.contains("jobs_tenant_status_idx"), "the tenant's whole history, the window a filter:\n" + plan);
            assertTrue(plan.lines().anyMatch(l -> l.contains("Index Cond") && l.contains("tenant_id = t.tenant_id")
                    && l.contains("status = s.status") && l.contains("finished_at >")), "not the window's range:\n" + plan);
        }
        assertEquals(2000L, attempts.get(2), "the window as set up");
        assertEquals(attempts.get(2), attempts.get(0));
        assertEquals(attempts.get(2), attempts.get(1));
    }
}

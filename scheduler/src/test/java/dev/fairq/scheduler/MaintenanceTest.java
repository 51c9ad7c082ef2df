package dev.fairq.scheduler;

import dev.fairq.schema.ClaimedJob;
import dev.fairq.schema.Database;
import dev.fairq.schema.JobOutcome;
import dev.fairq.schema.JobStore;
import dev.fairq.testing.TestDatabase;
import org.jooq.DSLContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;

import static dev.fairq.scheduler.SimulatedScheduler.jobs;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Background duties run beside the admission loop: a maintenance statement held up by a lock does not hold
 * up a single admission, and a duty that fails (here: cut off by its statement_timeout) is retried later and
 * never costs the leadership. A real {@link SchedulerService}, real time, the test as the worker.
 */
class MaintenanceTest {
    static final String NAME = "maintenance-test";
    final TestDatabase db = TestDatabase.get();
    final JobStore store = new JobStore();
    DSLContext dsl;
    SchedulerService service;
    Connection locker;

    @BeforeEach
    void reset() throws Exception {
        db.reset();
        db.createTenant("m");
        dsl = db.dsl();
        locker = Database.dedicated(db.jdbcUrl, db.user, db.password, "maintenance-test-locker");
    }

    @AfterEach
    void stop() throws Exception {
        if (service != null) service.close();
        locker.close();
    }

    private void start(Duration statementTimeout) {
        SchedulerConfig config = SchedulerConfig.builder().fixedBuffer(4, 4).maintenanceStatementTimeout(statementTimeout).build();
        service = new SchedulerService(new Scheduler(store, config), store, config,
                () -> Database.dedicated(db.jdbcUrl, db.user, db.password, NAME)).start();
        await().atMost(Duration.ofSeconds(60)).until(service::isLeader);
    }

    /** Takes the rollup's table, as a long report or a migration would, until {@link #release}. */
    private void holdRollupTable() throws Exception {
        locker.setAutoCommit(false);
        try (Statement s = locker.createStatement()) {
            s.execute("LOCK TABLE tenant_minute_stats IN ACCESS EXCLUSIVE MODE");
        }
    }

    private void release() throws Exception {
        locker.rollback();
        locker.setAutoCommit(true);
    }

    /** Sessions of the service waiting for a lock right now (its maintenance connection, held up). */
    private long blockedSessions() {
        return db.count("SELECT count(*) FROM pg_stat_activity WHERE application_name = ? AND wait_event_type = 'Lock'", NAME);
    }

    private Integer leaderPid() {
        return dsl.resultQuery("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = 1717658993 "
                + "AND objid = 1 AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())").fetchOptional(0, Integer.class).orElse(null);
    }

    /** Runs jobs as a worker would until {@code total} have succeeded. */
    private void runUntilSucceeded(long total) {
        await().atMost(Duration.ofSeconds(60)).pollInSameThread().pollInterval(Duration.ofMillis(10)).until(() -> {
            List<ClaimedJob> claimed = store.claim(dsl, "w", 8, Duration.ofMinutes(5));
            if (!claimed.isEmpty()) {
                store.finish(dsl, "w", claimed.stream().map(j -> new JobOutcome.Succeeded(j.id(), j.attempt())).toList());
            }
            return db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded'") >= total;
        });
    }

    @Test
    void aMaintenanceStatementHeldUpByALockDoesNotHoldUpAdmissions() throws Exception {
        holdRollupTable();
        // long enough that the rollup stays blocked for the whole flow, however slow a loaded 2-core machine is
        start(Duration.ofMinutes(10));
        await().atMost(Duration.ofSeconds(60)).until(() -> blockedSessions() == 1);
        Integer pid = leaderPid();

        store.enqueueAll(dsl, jobs("m", 200));
        runUntilSucceeded(200);

        assertEquals(1, blockedSessions(), "the rollup was held up all along");
        assertTrue(service.isLeader());
        assertEquals(pid, leaderPid(), "the same session leads: nothing stepped down");

        release();
        await().atMost(Duration.ofSeconds(60)).until(() -> db.count("SELECT count(*) FROM tenant_minute_stats "
                + "WHERE tenant_id = 'm' AND succeeded > 0") > 0);
    }

    @Test
    void aFailedDutyIsRetriedAndNeverCostsTheLeadership() throws Exception {
        holdRollupTable();
        start(Duration.ofMillis(500)); // the blocked rollup is cut off after half a second: the duty fails
        await().atMost(Duration.ofSeconds(60)).until(() -> blockedSessions() == 1);
        Integer pid = leaderPid();
        await().atMost(Duration.ofSeconds(60)).until(() -> blockedSessions() == 0); // timed out, failed

        store.enqueueAll(dsl, jobs("m", 50));
        runUntilSucceeded(50);
        release();

        // the rollup runs again at its next turn (every 10 s) and catches up
        await().atMost(Duration.ofSeconds(60)).until(() -> db.count("SELECT coalesce(sum(succeeded), 0) "
                + "FROM tenant_minute_stats WHERE tenant_id = 'm'") == 50);
        assertTrue(service.isLeader());
        assertEquals(pid, leaderPid(), "a failing duty never made the leader step down");
    }

    /**
     * A tenant whose waiting jobs no round admits (one due in an hour, one behind a concurrency key closed at 0) drops
     * out of the scheduler's memory, but its backlog is real: the rollup still snapshots it, so the admin overview
     * lists it (it had not: the rollup covered only the tenants the scheduler remembered).
     */
    @Test
    void theRollupSeesATenantWhoseWaitingJobsNoRoundAdmits() {
        dsl.execute("UPDATE tenants SET concurrency_limits = '{\"erp\": 0}'::jsonb WHERE id = 'm'");
        SchedulerConfig config = SchedulerConfig.builder().fixedBuffer(4, 4).build();
        Scheduler scheduler = new Scheduler(store, config);
        service = new SchedulerService(scheduler, store, config,
                () -> Database.dedicated(db.jdbcUrl, db.user, db.password, NAME)).start();
        await().atMost(Duration.ofSeconds(60)).until(service::isLeader);
        store.enqueueAll(dsl, List.of(
                dev.fairq.schema.JobRequest.builder("m", "noop").delay(Duration.ofHours(1)).build(),
                dev.fairq.schema.JobRequest.builder("m", "noop").concurrencyKey("erp").build()));
        await().atMost(Duration.ofSeconds(60)).until(() -> !scheduler.tenantsWithWork().contains("m"));
        dsl.execute("DELETE FROM tenant_minute_stats WHERE tenant_id = 'm'"); // what the rollup saw while it remembered m

        await().atMost(Duration.ofSeconds(30)).until(() -> db.count("SELECT count(*) FROM tenant_minute_stats "
                + "WHERE tenant_id = 'm' AND pending = 2") > 0);
        assertTrue(!scheduler.tenantsWithWork().contains("m"), "the scheduler still does not hold it");
        assertEquals(2, db.count("SELECT count(*) FROM jobs WHERE tenant_id = 'm' AND status = 'pending'"), "nothing admitted");
    }

    /**
     * More jobs past retention than one run deletes (20 batches of 5,000): the rest go in the runs that follow at once,
     * not a maintenance interval (here 10 minutes) later. At 100,000 per 30 s, a queue that finished more than 3,333
     * jobs a second for longer than its retention kept more and more of them.
     */
    @Test
    void retentionBehindItsBatchCapRunsAgainAtOnce() {
        int past = SchedulerService.RETENTION_BATCH * SchedulerService.RETENTION_BATCHES_PER_RUN + 2_000;
        dsl.execute("INSERT INTO jobs (tenant_id, type, status, attempts, created_at, started_at, finished_at) "
                + "SELECT 'm', 'noop', 'succeeded', 1, now() - interval '3 days', now() - interval '3 days', "
                + "now() - interval '2 days' FROM generate_series(1, ?)", past);
        dsl.execute("INSERT INTO jobs (tenant_id, type, status, attempts, created_at, started_at, finished_at) "
                + "VALUES ('m', 'noop', 'succeeded', 1, now(), now(), now())"); // within retention: kept
        SchedulerConfig config = SchedulerConfig.builder().fixedBuffer(4, 4).maintenanceEvery(Duration.ofMinutes(10)).build();
        service = new SchedulerService(new Scheduler(store, config), store, config,
                () -> Database.dedicated(db.jdbcUrl, db.user, db.password, NAME)).start();
        await().atMost(Duration.ofSeconds(120)).until(() -> db.count("SELECT count(*) FROM jobs") == 1);
        assertTrue(service.isLeader());
    }

    /**
     * A process frozen inside a duty's transaction (here the duty's thread stops between the rollup's two statements,
     * as a SIGSTOP would stop it) loses the transaction and its locks after the statement timeout: the rollup cursor
     * it locked is free for the next leader. It had kept them for as long as it stayed frozen, and the new leader's
     * rollup waited on them at every run.
     */
    @Test
    void aDutyFrozenInsideItsTransactionReleasesItsLocks() throws Exception {
        java.util.concurrent.CountDownLatch frozen = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch thaw = new java.util.concurrent.CountDownLatch(1);
        Maintenance m = new Maintenance("frozen-duty", () -> Database.dedicated(db.jdbcUrl, db.user, db.password, NAME),
                Duration.ofSeconds(1), List.of(new Maintenance.Duty("frozen", Duration.ofHours(1), ctx -> ctx.transaction(c -> {
                    c.dsl().execute("INSERT INTO rollup_cursor (id, rolled_through) VALUES (1, now()) "
                            + "ON CONFLICT (id) DO UPDATE SET rolled_through = excluded.rolled_through");
                    frozen.countDown();
                    thaw.await();
                }))));
        try {
            m.start();
            assertTrue(frozen.await(60, java.util.concurrent.TimeUnit.SECONDS));
            await().atMost(Duration.ofSeconds(30)).until(() ->
                    db.count("SELECT count(*) FROM pg_stat_activity WHERE application_name = ?", NAME) == 0);
            try (Connection c = Database.dedicated(db.jdbcUrl, db.user, db.password, "maintenance-test-next")) {
                c.createStatement().execute("SET lock_timeout = 5000");
                c.createStatement().execute("UPDATE rollup_cursor SET rolled_through = now() WHERE id = 1"); // not held up
            }
        } finally {
            thaw.countDown();
            m.close();
        }
    }

    private long manualVacuums(String table) {
        return db.count("SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = ?", table);
    }

    /**
     * The small tables every tick or enqueue rewrites are vacuumed by the scheduler itself (autovacuum may be off, and
     * visits a database once a minute at best): the grants made and used here leave dead rows that only a vacuum takes
     * out of the tick's read.
     */
    @Test
    void theConstantlyRewrittenTablesAreVacuumedByTheLeader() {
        for (int i = 0; i < 200; i++) {
            dsl.execute("INSERT INTO admission_grants (tenant_id, granted_at) VALUES ('m', now())");
            dsl.execute("DELETE FROM admission_grants");
        }
        long grants = manualVacuums("admission_grants"), states = manualVacuums("scheduler_tenant_state");
        start(Duration.ofSeconds(10));
        // statistics reach pg_stat_user_tables when the vacuuming session next reports them (within seconds)
        await().atMost(Duration.ofSeconds(40)).until(() -> manualVacuums("admission_grants") > grants
                && manualVacuums("scheduler_tenant_state") > states);
        // the session that deleted the grants reports its 200 dead rows when it next flushes its statistics (up to
        // seconds later), which can come after the vacuum's report of 0: the next vacuum (10 s) reports 0 again
        await().atMost(Duration.ofSeconds(40)).until(() ->
                db.count("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'admission_grants'") == 0);
        assertTrue(service.isLeader());
    }
}

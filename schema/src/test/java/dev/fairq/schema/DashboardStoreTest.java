package dev.fairq.schema;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * The dashboard rollup against the jobs table. Started attempts are counted without an index on started_at (V6):
 * from the finished, failed and lease indexes; every place a started job can be in is covered here, and the
 * counts are checked against a plain scan of started_at. Which minutes a run recounts, and for which tenants, on
 * the settable clock.
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

    private static final OffsetDateTime M = OffsetDateTime.of(2030, 1, 1, 12, 0, 0, 0, ZoneOffset.UTC);

    /** Where each run of the rollup starts, and the cursor it leaves, in steady state and after gaps. */
    @Test
    void aRunRecountsThePreviousMinuteOnlyUntilItSettlesAndCatchesUpOnlyAfterAGap() {
        // the first run ever: the previous minute, not final before SETTLE
        assertEquals(new DashboardStore.Window(M.minusMinutes(1), false, M.minusMinutes(2)),
                DashboardStore.window(M.plusSeconds(3), M, null));
        // the minute turned; the one before the previous is final: the previous is recounted ...
        assertEquals(new DashboardStore.Window(M.minusMinutes(1), false, M.minusMinutes(2)),
                DashboardStore.window(M.plusSeconds(5), M, M.minusMinutes(2)));
        // ... and settles at the first run SETTLE into the minute
        assertEquals(new DashboardStore.Window(M.minusMinutes(1), false, M.minusMinutes(1)),
                DashboardStore.window(M.plus(DashboardStore.SETTLE), M, M.minusMinutes(2)));
        // then the runs of the minute count it alone
        assertEquals(new DashboardStore.Window(M, false, M.minusMinutes(1)),
                DashboardStore.window(M.plusSeconds(45), M, M.minusMinutes(1)));
        // the turn of the minute is no gap: no catch-up (it was one at every turn)
        assertFalse(DashboardStore.window(M.plusMinutes(1).plusSeconds(2), M.plusMinutes(1), M.minusMinutes(1)).catchUp());
        // a minute without a run (the previous minute's runs never settled the one before): catch up from the cursor
        assertEquals(new DashboardStore.Window(M.minusMinutes(3), true, M.minusMinutes(1)),
                DashboardStore.window(M.plusSeconds(30), M, M.minusMinutes(3)));
        // a cursor ahead of the clock (the clock was set back): the previous minute is recounted, the cursor moves back
        assertEquals(new DashboardStore.Window(M.minusMinutes(1), false, M.minusMinutes(2)),
                DashboardStore.window(M.plusSeconds(5), M, M.plusMinutes(60)));
        // never more than MAX_CATCH_UP back, from the first minute wholly within it
        assertEquals(new DashboardStore.Window(M.minus(DashboardStore.MAX_CATCH_UP).plusMinutes(1), true, M.minusMinutes(2)),
                DashboardStore.window(M.plusSeconds(1), M, M.minusDays(3)));
        // nor further back than a shorter retention keeps the finished jobs
        assertEquals(new DashboardStore.Window(M.minusMinutes(59), true, M.minusMinutes(1)),
                DashboardStore.window(M.plusSeconds(30), M, M.minusHours(2), Duration.ofHours(1)));
    }

    /**
     * A gap longer than the retention of finished jobs (one hour here): the minutes before the gap keep their counts.
     * The catch-up had recounted from the cursor, over minutes whose jobs retention had deleted meanwhile, and wrote
     * zeros over them (the minute of the last run before the gap, and the one before it until it had settled).
     */
    @Test
    void aCatchUpLongerThanTheRetentionLeavesTheMinutesRetentionEmptied() {
        Duration retention = Duration.ofHours(1);
        DashboardStore rollup = new DashboardStore(clock, retention);
        dsl.execute("DELETE FROM rollup_cursor");
        Instant m0 = clock.instant().truncatedTo(ChronoUnit.MINUTES).plus(Duration.ofMinutes(1));
        clock.set(m0.plusSeconds(2));
        finishOne(T1);
        clock.set(m0.plusSeconds(20));
        rollup.rollup(dsl, List.of(T1));
        assertEquals(1, succeeded(T1, m0));

        clock.set(m0.plus(Duration.ofHours(2)).plusSeconds(30)); // no scheduler for two hours; then retention ran
        store.deleteFinished(dsl, retention, retention, 1000);
        assertEquals(0L, scalar(Long.class, "SELECT count(*) FROM jobs WHERE tenant_id = ?", T1));
        finishOne(T1);
        clock.set(m0.plus(Duration.ofHours(2)).plusSeconds(40)); // past the run's COMMIT_LAG
        rollup.rollup(dsl, List.of(T1));
        assertEquals(1, succeeded(T1, m0), "the minute before the gap keeps its count");
        assertEquals(1, succeeded(T1, m0.plus(Duration.ofHours(2))), "the current minute is counted");
    }

    /**
     * Runs every 10 s on the queue's clock: a job that finished in a minute's last second but committed after
     * the next minute's first run is counted in its minute; once settled, a minute is not rewritten by the runs
     * after (its row keeps the settling run's time); a tenant the scheduler did not name is found by the
     * catch-up after a gap, and by a new leader's first run. Every row matches a plain count of the jobs table.
     */
    @Test
    void runsEveryTenSecondsCountEachMinuteExactlyAndLeaveSettledMinutesAlone() {
        DashboardStore rollup = new DashboardStore(clock);
        dsl.execute("DELETE FROM rollup_cursor");
        Instant m0 = clock.instant().truncatedTo(ChronoUnit.MINUTES).plus(Duration.ofMinutes(1));
        clock.set(m0.plusSeconds(2));
        finishOne(T1);
        rollup.rollup(dsl, List.of(T1));
        clock.set(m0.plusSeconds(20));
        rollup.rollup(dsl, List.of(T1));

        clock.set(m0.plusSeconds(59));
        long late = enqueue(job(T1));
        int attempt = admitAndClaim("w1", late).attempt();
        dsl.transaction(c -> { // finished at :59 of the first minute, committed after the next minute's first run
            store.finish(c.dsl(), "w1", List.of(new JobOutcome.Succeeded(late, attempt)));
            clock.set(m0.plusSeconds(62));
            rollup.rollup(dsl, List.of(T1));
        });
        assertEquals(1, succeeded(T1, m0), "the late commit is not in the first minute yet");
        clock.set(m0.plusSeconds(72));
        rollup.rollup(dsl, List.of(T1)); // 12 s into the minute: the first minute is recounted, not yet settled
        assertEquals(2, succeeded(T1, m0));
        clock.set(m0.plusSeconds(82));
        rollup.rollup(dsl, List.of(T1)); // settles the first minute
        OffsetDateTime settledAt = clock.sqlNow().minus(DashboardStore.COMMIT_LAG); // the time it counted through
        for (int s = 92; s <= 112; s += 10) {
            clock.set(m0.plusSeconds(s - 5)); // before the run's COMMIT_LAG
            finishOne(T1);
            clock.set(m0.plusSeconds(s));
            rollup.rollup(dsl, List.of(T1));
        }
        assertEquals(settledAt, scalar(OffsetDateTime.class,
                "SELECT updated_at FROM tenant_minute_stats WHERE tenant_id = ? AND minute = ?::timestamptz", T1, m0.toString()),
                "a settled minute is left alone");
        assertEquals(3, succeeded(T1, m0.plusSeconds(60)));

        // no scheduler for three minutes; T2's jobs finished meanwhile and it is not among the named tenants
        clock.set(m0.plusSeconds(150));
        finishOne(T2);
        clock.set(m0.plusSeconds(250));
        rollup.rollup(dsl, List.of(T1));
        assertEquals(1, succeeded(T2, m0.plusSeconds(120)), "caught up for every tenant that finished jobs");

        // a new leader's first run: T2 finished a job since the last run and is not named; a run that trusts the
        // names leaves it out, the first run of a term counts every tenant that finished jobs
        clock.set(m0.plusSeconds(262));
        finishOne(T2);
        clock.set(m0.plusSeconds(266));
        rollup.rollup(dsl, List.of(T1));
        assertEquals(0, succeeded(T2, m0.plusSeconds(240)), "a steady run counts the tenants it is given");
        rollup.rollup(dsl, List.of(T1), true);
        assertEquals(1, succeeded(T2, m0.plusSeconds(240)), "the first run of a leader's term counts every tenant");

        for (String tenant : List.of(T1, T2)) {
            assertEquals(scalar(Long.class, "SELECT count(*) FROM jobs WHERE tenant_id = ? AND status = 'succeeded'", tenant),
                    scalar(Long.class, "SELECT sum(succeeded) FROM tenant_minute_stats WHERE tenant_id = ?", tenant),
                    tenant + ": the rollup against the jobs table");
        }
    }

    /**
     * The database clock stepped back an hour (the cursor stands an hour ahead of it): each minute is still
     * counted whole, its last seconds by the next minute's first runs, as before the step. Trusting the cursor
     * made every run count the current minute only, and a job that finished in a minute's last seconds (after the
     * minute's last run counted through) was in no minute until the clock caught up with the cursor.
     */
    @Test
    void aClockSetBackStillCountsTheLastSecondsOfEachMinute() {
        DashboardStore rollup = new DashboardStore(clock);
        dsl.execute("DELETE FROM rollup_cursor");
        Instant m0 = clock.instant().truncatedTo(ChronoUnit.MINUTES).plus(Duration.ofMinutes(1));
        // before the step (its own clock: a SettableClock only moves forward), the cursor an hour ahead of what follows
        new DashboardStore(new SettableClock(m0.plus(Duration.ofHours(1)).plusSeconds(20))).rollup(dsl, List.of(T1));
        clock.set(m0.plusSeconds(50));
        rollup.rollup(dsl, List.of(T1));
        clock.set(m0.plusSeconds(59));
        finishOne(T1); // after the minute's last run counted through (58 s)
        for (int s = 60; s <= 100; s += 10) {
            clock.set(m0.plusSeconds(s));
            rollup.rollup(dsl, List.of(T1));
        }
        assertEquals(1, succeeded(T1, m0), "the completion at 59 s is in its minute");
    }

    /**
     * The tenant dashboard's hour: its chart has a point for the current minute and each of the 59 before it, and
     * its totals (succeeded_last_hour, the success rate) sum the same minutes, as the admin overview's do. They had
     * summed one more, the minute an hour ago, off the chart's left edge: a user adding up the bars found fewer
     * jobs than the totals said. The recent (five-minute) sums keep counting from the start of the minute five
     * minutes ago, as GET /v1/stats does.
     */
    @Test
    void theHoursTotalsSumTheMinutesOfTheChart() {
        DashboardStore rollup = new DashboardStore(clock);
        Instant m = clock.instant().truncatedTo(ChronoUnit.MINUTES).plus(Duration.ofMinutes(1));
        clock.set(m.plusSeconds(20));
        for (int[] row : new int[][] {{60, 5}, {59, 1}, {5, 2}, {0, 3}}) {
            dsl.execute("INSERT INTO tenant_minute_stats (tenant_id, minute, started, succeeded, failed, dead, busy_ms, "
                    + "updated_at) VALUES (?, ?::timestamptz, ?, ?, 0, 0, 0, ?::timestamptz)",
                    T1, m.minus(Duration.ofMinutes(row[0])).toString(), row[1], row[1], m.toString());
        }
        List<DashboardStore.MinuteStats> chart = rollup.minuteStats(dsl, T1, Duration.ofHours(1));
        assertEquals(3, chart.size(), "the chart's minutes: the current one and the 59 before it");
        long onTheChart = chart.stream().mapToLong(DashboardStore.MinuteStats::succeeded).sum();
        DashboardStore.RollupTotals head = rollup.tenantHead(dsl, T1, Duration.ofHours(1), Duration.ofMinutes(5))
                .orElseThrow().totals();
        assertEquals(onTheChart, head.succeeded(), "the dashboard's hour is its chart's");
        assertEquals(6, head.succeeded());
        assertEquals(5, head.startedRecent(), "five minutes: from the start of the minute five minutes ago");
        DashboardStore.RollupTotals overview = rollup.rollupTotals(dsl, List.of(T1), Duration.ofHours(1),
                Duration.ofMinutes(5)).get(T1);
        assertEquals(6, overview.succeeded(), "the overview's hour too");
        assertEquals(5, overview.startedRecent());
    }

    /**
     * The start rate divides the starts the rollup counted by the time they cover, up to the run that counted them
     * (its rows' updated_at), not up to now: a steady 1 start/s read 78 starts over 86 s, 0.91/s, eight seconds
     * after the run. A tenant no recent run counted (nothing since) decays over the time up to now.
     */
    @Test
    void theStartRateIsOverTheTimeItsCountsCover() {
        DashboardStore rollup = new DashboardStore(clock);
        Instant m = clock.instant().truncatedTo(ChronoUnit.MINUTES).plus(Duration.ofMinutes(1));
        clock.set(m.plusSeconds(26));
        String sql = "INSERT INTO tenant_minute_stats (tenant_id, minute, started, succeeded, failed, dead, busy_ms, "
                + "updated_at) VALUES (?, ?::timestamptz, ?, 0, 0, 0, 0, ?::timestamptz)";
        // counted by the run at m+20 s, through m+18 s: 60 starts in the previous minute, 18 in this one
        dsl.execute(sql, T1, m.minus(Duration.ofMinutes(1)).toString(), 60, m.plusSeconds(18).toString());
        dsl.execute(sql, T1, m.toString(), 18, m.plusSeconds(18).toString());
        // counted last at m-20 s, through m-22 s: 38 starts, none since
        dsl.execute(sql, T2, m.minus(Duration.ofMinutes(1)).toString(), 38, m.minusSeconds(22).toString());
        for (String t : List.of(T1, T2)) {
            double head = rollup.tenantHead(dsl, t, Duration.ofHours(1), Duration.ofMinutes(5)).orElseThrow().totals().startRatePerSecond();
            double overview = rollup.rollupTotals(dsl, List.of(t), Duration.ofHours(1), Duration.ofMinutes(5)).get(t).startRatePerSecond();
            double expected = t.equals(T1) ? 78.0 / 78 : 38.0 / 86;
            assertEquals(expected, head, 1e-9, t);
            assertEquals(expected, overview, 1e-9, t);
        }
    }

    /**
     * A catch-up that cannot finish within the statement timeout (here a gap minute's row is locked; in production,
     * more completions in the gap than one statement counts in time: 8 s for 1,000,000) gives the gap up and counts
     * from the previous minute on, as a steady run. It had failed at every run after, each over a longer gap: the
     * cursor never moved, and the dashboards, the admin overview's active tenants and the stats' recent counts
     * stopped for good.
     */
    @Test
    void aCatchUpThatTimesOutStillCountsTheCurrentMinute() throws Exception {
        DashboardStore rollup = new DashboardStore(clock);
        Instant m0 = clock.instant().truncatedTo(ChronoUnit.MINUTES).plus(Duration.ofMinutes(1));
        clock.set(m0.plusSeconds(30));
        dsl.execute("DELETE FROM rollup_cursor");
        dsl.execute("INSERT INTO rollup_cursor (id, rolled_through) VALUES (1, ?::timestamptz)",
                m0.minus(Duration.ofMinutes(10)).toString());
        Instant gap = m0.minus(Duration.ofMinutes(5));
        dsl.execute("INSERT INTO tenant_minute_stats (tenant_id, minute, started, succeeded, failed, dead, busy_ms, "
                + "updated_at) VALUES (?, ?::timestamptz, 7, 7, 0, 0, 0, ?::timestamptz)", T1, gap.toString(), gap.toString());
        finishOne(T1);
        clock.set(m0.plusSeconds(40));
        try (java.sql.Connection locker = Database.dedicated(db.jdbcUrl, db.user, db.password, "rollup-test-locker");
             java.sql.Connection timed = Database.dedicated(db.jdbcUrl, db.user, db.password, "rollup-test-run")) {
            locker.setAutoCommit(false);
            Database.dsl(locker).execute("SELECT 1 FROM tenant_minute_stats WHERE tenant_id = ? AND minute = ?::timestamptz "
                    + "FOR UPDATE", T1, gap.toString());
            Database.dsl(timed).execute("SET statement_timeout = 1000");
            rollup.rollup(Database.dsl(timed), List.of(T1));
            locker.rollback();
        }
        assertEquals(1, succeeded(T1, m0), "the current minute is counted");
        assertEquals(7, succeeded(T1, gap), "the gap keeps what it had");
        assertEquals(OffsetDateTime.ofInstant(m0.minus(Duration.ofMinutes(1)), ZoneOffset.UTC),
                scalar(OffsetDateTime.class, "SELECT rolled_through FROM rollup_cursor"), "the cursor moved on");
    }

    /**
     * A tenant whose backlog drained after its minute's last run: the next minute's first run snapshots its depth at 0
     * (a row of its own), so the admin overview, which shows each tenant's latest snapshot, says 0. A tenant got a row
     * only when something happened or waited, so the overview showed the drained backlog (and sorted the tenant by it,
     * counted it in the totals, gave it a weight share) for the five minutes its last row stayed in the window.
     */
    @Test
    void aBacklogThatDrainedAfterTheMinutesLastRunShowsAsZeroAtTheNextRun() {
        DashboardStore rollup = new DashboardStore(clock);
        dsl.execute("DELETE FROM rollup_cursor");
        Instant m0 = clock.instant().truncatedTo(ChronoUnit.MINUTES).plus(Duration.ofMinutes(1));
        clock.set(m0.plusSeconds(50));
        long waiting = enqueue(job(T1));
        rollup.rollup(dsl, List.of(T1));
        assertEquals(1L, rollup.activity(dsl, Duration.ofMinutes(5), List.of(T1)).get(0).pending());
        clock.set(m0.plusSeconds(58));
        store.cancel(dsl, T1, waiting); // drained after the minute's last run
        for (int s = 62; s <= 92; s += 10) {
            clock.set(m0.plusSeconds(s));
            rollup.rollup(dsl, List.of(T1));
        }
        DashboardStore.Activity a = rollup.activity(dsl, Duration.ofMinutes(5), List.of(T1)).get(0);
        assertEquals(List.of(0L, 0L, 0L), List.of(a.pending(), a.ready(), a.running()), "the latest snapshot: nothing waits");
        assertEquals(Integer.valueOf(1), scalar(Integer.class,
                "SELECT pending FROM tenant_minute_stats WHERE tenant_id = ? AND minute = ?::timestamptz", T1, m0.toString()),
                "the minute before keeps the last depth seen during it");
    }

    /**
     * GET /v1/stats adds to the rollup the jobs that finished after the time the rollup's rows carry. A run's
     * statement takes its snapshot milliseconds after its own now() (the planning of the big statement), so a
     * completion can begin after a run's time and commit before its snapshot, and another can begin before it
     * and commit after: each is counted once, by the rollup or by the stats, never by both or neither.
     */
    @Test
    void statsCountACompletionThatRacesTheRollupOnce() {
        DashboardStore rollup = new DashboardStore(clock);
        JobQueries queries = new JobQueries();
        // the cursor another test left (on its own clock, minutes ahead) would make these runs count from the
        // current minute only; and 20 s into a minute, both runs fall in the minute of the completions
        dsl.execute("DELETE FROM rollup_cursor");
        Instant t = clock.instant().truncatedTo(ChronoUnit.MINUTES).plus(Duration.ofMinutes(1)).plusSeconds(20);
        clock.set(t);
        finishOne(T1);
        // the run's time is before the completion, its snapshot after the commit
        new DashboardStore(new SettableClock(t.minusMillis(500))).rollup(dsl, List.of(T1));
        assertEquals(1, queries.tenantFigures(dsl, T1, Duration.ofMinutes(5)).orElseThrow().stats().succeededRecent());

        clock.set(t.plusSeconds(10));
        long late = enqueue(job(T1));
        int attempt = admitAndClaim("w1", late).attempt();
        dsl.transaction(c -> { // finished before the run's time, committed after its snapshot
            store.finish(c.dsl(), "w1", List.of(new JobOutcome.Succeeded(late, attempt)));
            clock.set(t.plusSeconds(10).plusMillis(500));
            rollup.rollup(dsl, List.of(T1));
        });
        assertEquals(2, queries.tenantFigures(dsl, T1, Duration.ofMinutes(5)).orElseThrow().stats().succeededRecent());
    }

    /**
     * A tool's rollup through its own time (rollupMinutes), then a scheduler run 1 s later that recounts only the
     * current minute, through 2 s before its time: the older minute's row now carries a later time than the current
     * one's. A completion between the two times is in neither row; the stats count it, from the latest minute's
     * time (counting from the latest time of any row missed it).
     */
    @Test
    void statsCountFromTheLatestMinutesRow() {
        dsl.execute("DELETE FROM rollup_cursor");
        JobQueries queries = new JobQueries();
        Instant m0 = clock.instant().truncatedTo(ChronoUnit.MINUTES).plus(Duration.ofMinutes(1));
        clock.set(m0.plusSeconds(50));
        finishOne(T1);
        clock.set(m0.plusMillis(69_500));
        finishOne(T1); // in the next minute, between the scheduler run's time and the tool's
        clock.set(m0.plusSeconds(70));
        new DashboardStore(clock).rollupMinutes(dsl, 2);
        dsl.execute("INSERT INTO rollup_cursor (id, rolled_through) VALUES (1, ?::timestamptz)", m0.toString()); // m0 final
        clock.set(m0.plusSeconds(71));
        new DashboardStore(clock).rollup(dsl, List.of(T1));
        assertEquals(0, succeeded(T1, m0.plusSeconds(60)), "the run counted the minute through 69 s");
        assertEquals(2, queries.tenantFigures(dsl, T1, Duration.ofMinutes(5)).orElseThrow().stats().succeededRecent());
    }

    /**
     * A tenant whose only waiting job is due in an hour is in a run that does not name it: a scheduler forgets such a
     * tenant until the job comes due, but its backlog is real, and the admin overview lists what the rollup saw.
     */
    @Test
    void aRunSnapshotsATenantWithWaitingJobsThatNobodyNamed() {
        dsl.execute("DELETE FROM rollup_cursor");
        enqueue(job(T2).delay(Duration.ofHours(1)));
        new DashboardStore(clock).rollup(dsl, List.of(T1));
        assertEquals(1L, scalar(Long.class, "SELECT max(pending)::bigint FROM tenant_minute_stats WHERE tenant_id = ?", T2));
    }

    private void finishOne(String tenant) {
        long id = enqueue(job(tenant));
        int attempt = admitAndClaim("w1", id).attempt();
        store.finish(dsl, "w1", List.of(new JobOutcome.Succeeded(id, attempt)));
    }

    private long succeeded(String tenant, Instant minute) {
        Long n = scalar(Long.class, "SELECT succeeded::bigint FROM tenant_minute_stats WHERE tenant_id = ? AND minute = ?::timestamptz",
                tenant, minute.toString());
        return n == null ? 0 : n;
    }

    /** What the dropped index answered: jobs of the tenant whose latest attempt started since {@code since}. */
    private long plainScan(String tenant, String since) {
        return scalar(Long.class, "SELECT count(*) FROM jobs WHERE tenant_id = ? AND started_at >= " + since, tenant);
    }
}

package dev.fairq.scheduler;

import dev.fairq.schema.JobRequest;
import org.junit.jupiter.api.Test;

import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Shares by worker time read finished attempts for at most {@link Scheduler#SETTLE_BATCH} busy tenants a read,
 * those read longest ago first, each from its own bound: with more busy tenants than that, every tenant's
 * attempts are still learnt, once, even when its turn comes after it stopped being busy. On a settable clock.
 */
class SettleFinishedTest extends SimulatedSchedulerTest {
    @Test
    void everyBusyTenantsFinishedAttemptsAreLearntWhenMoreAreBusyThanOneReadCovers() {
        int n = Scheduler.SETTLE_BATCH + 44;
        db.dsl().execute("INSERT INTO tenants (id) SELECT 's-' || g FROM generate_series(1, ?) g", n);
        SimulatedScheduler s = new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(1_000, 0)
                .fairShare(SchedulerConfig.FairShare.TIME).build());
        List<JobRequest> jobs = new ArrayList<>();
        for (int g = 1; g <= n; g++) jobs.addAll(SimulatedScheduler.jobs("s-" + g, 1));
        s.enqueue(jobs);
        s.tick(); // admits all of them
        s.clock.advance(Duration.ofMillis(300));
        s.tick(); // sees them busy (ready): each starts reading from the end of the previous read
        double before = s.scheduler.estimateOf("s-1", "noop");

        // every job ran 2 s (its handler's own time) and finished half a second ago on the queue's clock
        Timestamp finished = Timestamp.from(s.clock.instant().minusMillis(500));
        assertEquals(n, db.dsl().execute("UPDATE jobs SET status = 'succeeded', started_at = ?::timestamptz - interval '2 s', "
                + "finished_at = ?, run_us = 2000000, attempts = 1 WHERE status = 'ready'", finished, finished));
        // reads 4 s apart: the tenants a read leaves out have not been busy for longer than the scheduler
        // remembers a busy tenant by default (3 s), and must not be forgotten before their read
        for (int i = 0; i < 3; i++) {
            s.clock.advance(Duration.ofSeconds(4));
            s.tick();
        }
        double learnt = s.scheduler.estimateOf("s-1", "noop");
        assertNotEquals(before, learnt, 1e-9, "the first tenant's attempt was read");
        for (int g = 1; g <= n; g++) {
            assertEquals(learnt, s.scheduler.estimateOf("s-" + g, "noop"), 1e-9, "tenant s-" + g + " learnt its attempt once");
        }
    }

    /** Shares by time, a fixed buffer of {@code buffer}, no admission grants (every job goes through a round). */
    private SimulatedScheduler byTimeWithoutGrants(int buffer) {
        return new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(buffer, 0).grants(false)
                .fairShare(SchedulerConfig.FairShare.TIME).build());
    }

    /**
     * A tenant picked in a round is read when its attempts end, even if no LOAD ever saw it ready or running:
     * otherwise its estimate keeps the 10 ms guess of its first charge while the busy tenant's no-ops are
     * learnt at the 1 ms floor, and the quiet tenant, charged ten times as much per job, falls behind (fails
     * without it: the quiet tenant's jobs stop being admitted after 79 cycles).
     */
    @Test
    void aQuietTenantWhoseJobsEndBetweenTwoLoadsIsStillLearntAndNotLeftBehind() {
        db.dsl().execute("INSERT INTO tenants (id) VALUES ('busy'), ('quiet')");
        SimulatedScheduler s = byTimeWithoutGrants(8);
        s.enqueue(SimulatedScheduler.jobs("busy", 2_000));
        List<Integer> waits = new ArrayList<>();
        List<Long> pending = new ArrayList<>(); // the quiet tenant's jobs not admitted yet, by the cycle they came
        for (int cycle = 0; cycle < 120; cycle++) {
            s.enqueue(SimulatedScheduler.jobs("quiet", 1));
            pending.add((long) cycle);
            s.tick();
            long admittedQuiet = s.count("SELECT count(*) FROM jobs WHERE tenant_id = 'quiet' AND status = 'ready'");
            for (long k = 0; k < admittedQuiet && !pending.isEmpty(); k++) waits.add((int) (cycle - pending.remove(0)));
            // the workers run each admitted job for 10 us: the quiet tenant's at once, the busy tenant's in the
            // next cycle (so that each round's LOAD sees the busy tenant running, as a busy tenant is seen)
            Timestamp now = Timestamp.from(s.clock.instant());
            s.db.dsl().execute("UPDATE jobs SET status = 'succeeded', finished_at = ?, run_us = 10, locked_by = NULL, "
                    + "locked_until = NULL WHERE status = 'running'", now);
            s.db.dsl().execute("UPDATE jobs SET status = 'running', started_at = ?, attempts = 1, locked_by = 'w', "
                    + "locked_until = ?::timestamptz + interval '1 minute' WHERE status = 'ready' AND tenant_id = 'busy'", now, now);
            s.db.dsl().execute("UPDATE jobs SET status = 'succeeded', started_at = ?::timestamptz - interval '10 microseconds', "
                    + "finished_at = ?, run_us = 10, attempts = 1 WHERE status = 'ready'", now, now);
            s.clock.advance(Duration.ofMillis(100));
        }
        assertTrue(pending.size() <= 1, "the quiet tenant's jobs still waiting: " + pending);
        assertTrue(waits.stream().allMatch(w -> w <= 1), "rounds each quiet job waited: " + waits);
    }

    /**
     * A job is never free: settling moves a tenant's virtual time by at least the floor for each attempt. Refunded
     * to a no-op's 10 us, busy tenants' virtual times stood still and a tenant lifted to the virtual time waited
     * behind them (the latency benchmark's quiet tenant: created to admitted p50 170 ms, p99 2.6 s).
     */
    @Test
    void settlingChargesEachAttemptAtLeastTheFloor() {
        db.dsl().execute("INSERT INTO tenants (id) VALUES ('busy')");
        SimulatedScheduler s = byTimeWithoutGrants(50);
        s.enqueue(SimulatedScheduler.jobs("busy", 50));
        s.tick();
        Timestamp now = Timestamp.from(s.clock.instant());
        assertEquals(50, db.dsl().execute("UPDATE jobs SET status = 'succeeded', started_at = ?::timestamptz - interval '10 microseconds', "
                + "finished_at = ?, run_us = 10, attempts = 1 WHERE status = 'ready'", now, now));
        s.clock.advance(Duration.ofSeconds(2));
        var read = s.store.admission().finishedWork(db.dsl(), List.of("busy"),
                List.of(java.time.OffsetDateTime.ofInstant(s.clock.instant().minusSeconds(60), java.time.ZoneOffset.UTC)),
                WorkerTimeCosts.MIN_SECONDS);
        assertEquals(1, read.work().size());
        assertEquals(50, read.work().get(0).attempts());
        // fifty 10 us attempts are worth fifty times the 1 ms floor, not 0.5 ms
        assertEquals(50 * WorkerTimeCosts.MIN_SECONDS, read.work().get(0).seconds(), 1e-9);
    }
}

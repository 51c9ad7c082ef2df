package dev.fairq.scheduler;

import dev.fairq.schema.JobRequest;
import org.junit.jupiter.api.Test;

import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

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
}

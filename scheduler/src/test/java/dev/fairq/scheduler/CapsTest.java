package dev.fairq.scheduler;

import dev.fairq.schema.ClaimedJob;
import dev.fairq.schema.JobOutcome;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static dev.fairq.scheduler.SimulatedScheduler.countOf;
import static dev.fairq.scheduler.SimulatedScheduler.jobs;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Per-tenant concurrency cap (max_running) and pause, with a buffer far bigger than either. */
class CapsTest extends SimulatedSchedulerTest {
    private long activeOf(SimulatedScheduler s, String tenant) {
        return s.count("SELECT count(*) FROM jobs WHERE tenant_id = ? AND status IN ('ready', 'running')", tenant);
    }

    private long statusCount(SimulatedScheduler s, String tenant, String status) {
        return s.count("SELECT count(*) FROM jobs WHERE tenant_id = ? AND status = ?::job_status", tenant, status);
    }

    @Test
    void maxRunningCapsReadyPlusRunning() {
        db.createTenant("capped", 1, 1_000_000, 1_000_000, 3);
        db.createTenant("free");
        SimulatedScheduler s = new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(100, 20).build());
        s.enqueue(jobs("capped", 200));
        s.enqueue(jobs("free", 200));

        List<ClaimedJob> running = new ArrayList<>();
        long cappedAdmitted = 0, slotsFreed = 0;
        boolean reachedCap = false;
        int rounds = 60;
        for (int i = 0; i < rounds; i++) {
            List<String> admitted = s.tick().admittedTenants();
            cappedAdmitted += countOf(admitted, "capped");
            long active = activeOf(s, "capped");
            assertTrue(active <= 3, "tick " + i + ": capped has " + active + " ready + running");
            reachedCap |= active == 3;

            // A worker claims what is ready (the capped tenant's jobs then run and never finish on their own)...
            for (ClaimedJob j : s.store.claim(s.dsl, "w", 1_000, LEASE)) {
                if (j.tenantId().equals("capped")) running.add(j);
                else s.store.finish(s.dsl, "w", List.of(new JobOutcome.Succeeded(j.id(), j.attempt())));
            }
            assertTrue(activeOf(s, "capped") <= 3);
            // ... except that every fifth round one of them finishes, freeing exactly one slot.
            if (i % 5 == 4 && i < rounds - 1) {
                ClaimedJob done = running.remove(0);
                slotsFreed++;
                assertEquals(1, s.store.finish(s.dsl, "w", List.of(new JobOutcome.Succeeded(done.id(), done.attempt()))).size());
            }
            s.clock.advance(Duration.ofMillis(100));
        }
        assertTrue(reachedCap, "the cap was reached");
        // 3 at the start, then one per slot freed before the last round: 11 of them.
        assertEquals(11, slotsFreed);
        assertEquals(3 + slotsFreed, cappedAdmitted, "the capped tenant was admitted exactly into the slots it had");
        assertEquals(0, statusCount(s, "free", "pending"), "the other tenant was not held back by the cap");
    }

    @Test
    void loweringMaxRunningLiveStopsAdmissionsUntilBelowTheNewCap() {
        db.createTenant("t", 1, 1_000_000, 1_000_000, 5);
        SimulatedScheduler s = new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(100, 0).build());
        s.enqueue(jobs("t", 50));
        assertEquals(5, s.tick().admitted());
        List<ClaimedJob> running = s.store.claim(s.dsl, "w", 100, LEASE);
        assertEquals(5, running.size());

        s.dsl.execute("UPDATE tenants SET max_running = 2 WHERE id = 't'");
        s.clock.advance(RELOAD);
        // 5 running, cap now 2: finishing one, two, three of them admits nothing.
        for (int i = 0; i < 3; i++) {
            ClaimedJob j = running.remove(0);
            s.store.finish(s.dsl, "w", List.of(new JobOutcome.Succeeded(j.id(), j.attempt())));
            assertEquals(0, s.tick().admitted(), "still at or over the new cap with " + running.size() + " running");
        }
        ClaimedJob j = running.remove(0);
        s.store.finish(s.dsl, "w", List.of(new JobOutcome.Succeeded(j.id(), j.attempt())));
        assertEquals(1, s.tick().admitted(), "one running: one slot under the new cap of 2");
        assertEquals(2, activeOf(s, "t"));
    }

    @Test
    void pauseStopsAdmissionsAndUnadmitsReadyJobs() {
        db.createTenant("p");
        db.createTenant("other");
        SimulatedScheduler s = new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(5, 0).build());
        s.enqueue(jobs("p", 30));

        assertEquals(5, s.tick().admitted());
        assertEquals(5, statusCount(s, "p", "ready"));
        // one of them is already running: pausing does not stop a job that has started
        List<ClaimedJob> started = s.store.claim(s.dsl, "w", 1, LEASE);
        assertEquals(1, started.size());

        s.dsl.execute("UPDATE tenants SET paused = true WHERE id = 'p'");
        s.clock.advance(RELOAD);
        Scheduler.TickResult paused = s.tick();
        assertEquals(0, paused.admitted(), "a paused tenant is admitted nothing");
        assertEquals(0, statusCount(s, "p", "ready"), "its ready jobs went back to pending at the next tick");
        assertEquals(29, statusCount(s, "p", "pending"));
        assertEquals(1, statusCount(s, "p", "running"), "the started job keeps running");
        assertEquals(0, s.count("SELECT count(*) FROM jobs WHERE admitted_at IS NOT NULL AND status = 'pending'"),
                "un-admitted jobs carry no admission time");

        // While paused: nothing, however long; another tenant is not held back by it.
        s.enqueue(jobs("other", 10));
        long otherAdmitted = 0;
        for (int i = 0; i < 20; i++) {
            s.clock.advance(Duration.ofMillis(100));
            List<String> admitted = s.round();
            assertEquals(0, countOf(admitted, "p"), "round " + i + " admitted a paused tenant's job");
            otherAdmitted += countOf(admitted, "other");
        }
        assertEquals(10, otherAdmitted);
        assertEquals(29, statusCount(s, "p", "pending"));

        // Unpaused: admissions resume at the next reload, oldest first.
        s.dsl.execute("UPDATE tenants SET paused = false WHERE id = 'p'");
        s.clock.advance(RELOAD);
        List<String> resumed = s.tick().admittedTenants();
        assertEquals(4, countOf(resumed, "p"), "capacity 5 less the one still running");
    }
}

package dev.fairq.scheduler;

import dev.fairq.schema.ClaimedJob;
import dev.fairq.schema.JobOutcome;
import dev.fairq.schema.JobRequest;
import dev.fairq.testing.TestDatabase;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Set;

import static dev.fairq.scheduler.SimulatedScheduler.jobs;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The scheduler's memory follows the active tenants, not the registered ones: a tenant enters it through a
 * wake-up (an enqueue, a retry, a promoted head), a timer (a job that comes due) or the rescan, leaves the set
 * of tenants with work when a probe finds nothing due, and leaves the cache once forgetting it loses nothing.
 * On a settable clock, ticked by hand, with the database's real wake-ups.
 */
class ActiveSetTest {
    static final Duration LEASE = Duration.ofSeconds(30);
    final TestDatabase db = TestDatabase.get();

    @BeforeEach
    void reset() {
        db.reset();
    }

    private SimulatedScheduler scheduler() {
        return new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(100, 0).build());
    }

    private long status(SimulatedScheduler s, String tenant, String status) {
        return s.count("SELECT count(*) FROM jobs WHERE tenant_id = ? AND status = ?::job_status", tenant, status);
    }

    @Test
    void idleRegisteredTenantsCostNothingAndATenantThatBecomesActiveIsServedAtItsFirstTick() {
        db.dsl().execute("INSERT INTO tenants (id) SELECT 'idle-' || g FROM generate_series(1, 2000) g");
        db.createTenant("a");
        SimulatedScheduler s = scheduler();
        s.tick();
        assertEquals(0, s.scheduler.cachedTenants(), "2,000 registered idle tenants: none read into memory");

        s.enqueue(jobs("a", 3)); // after the first tick: only its wake-up can bring it in
        s.tick();
        assertEquals(3, status(s, "a", "ready"));
        assertEquals(1, s.scheduler.cachedTenants(), "only the active tenant is held");
        assertTrue(s.scheduler.tenantsWithWork().isEmpty(), "the probe found its work all admitted");
    }

    @Test
    void anIdleTenantIsForgottenOnceNothingIsLostAndComesBackLikeNew() {
        db.createTenant("r", 1, 10, 5, 100);
        SimulatedScheduler s = scheduler();
        s.enqueue(jobs("r", 5));
        s.tick();
        assertEquals(5, status(s, "r", "ready"), "its burst of 5");
        s.completeReady();
        s.tick();
        assertEquals(1, s.scheduler.cachedTenants(), "an empty bucket is remembered: forgetting it would refill it");

        s.clock.advance(Duration.ofSeconds(61)); // past the grant window, and the bucket refilled (5 tokens at 10/s)
        s.tick();
        s.clock.advance(Duration.ofSeconds(2));
        s.tick();
        assertEquals(0, s.scheduler.cachedTenants(), "idle, full bucket, no credit: forgotten");

        s.enqueue(jobs("r", 10));
        s.tick();
        assertEquals(5, status(s, "r", "ready"), "back with a full bucket, as the forgotten one had: burst 5, not more");
    }

    @Test
    void aPausedTenantKeepsItsWorkAndStartsAgainWhenUnpausedWithoutANewWakeUp() {
        db.createTenant("p");
        SimulatedScheduler s = scheduler();
        db.dsl().execute("UPDATE tenants SET paused = true WHERE id = 'p'");
        s.enqueue(jobs("p", 4));
        s.tick();
        assertEquals(4, status(s, "p", "pending"), "paused: nothing starts");
        assertEquals(Set.of("p"), s.scheduler.tenantsWithWork(), "but its work is remembered");

        db.dsl().execute("UPDATE tenants SET paused = false WHERE id = 'p'"); // plain SQL: no wake-up at all
        s.clock.advance(SchedulerConfig.DEFAULT_TENANT_RELOAD);
        s.tick();
        assertEquals(4, status(s, "p", "ready"), "the changed row was re-read and its jobs admitted");
    }

    @Test
    void aJobDueLaterIsAdmittedWhenItsTimerFiresAndARetryWhenItsBackoffEnds() {
        db.createTenant("d");
        SimulatedScheduler s = scheduler();
        s.enqueue(List.of(JobRequest.builder("d", "noop").delay(Duration.ofSeconds(5)).build()));
        s.tick();
        assertEquals(1, status(s, "d", "pending"), "not due yet");
        assertTrue(s.scheduler.tenantsWithWork().isEmpty(), "nothing due: a timer instead");
        assertTrue(s.tick().nanosUntilNextEvent() <= Duration.ofSeconds(5).toNanos(), "the wait ends by the due time");

        s.clock.advance(Duration.ofSeconds(5));
        s.tick();
        assertEquals(1, status(s, "d", "ready"), "due: admitted on its timer, no wake-up needed");

        ClaimedJob job = s.store.claim(s.dsl, "w", 1, LEASE).get(0);
        s.store.finish(s.dsl, "w", List.of(new JobOutcome.Failed(job.id(), job.attempt(), false, 3_000, "try again")));
        s.tick();
        assertEquals(1, status(s, "d", "pending"), "backing off");
        s.clock.advance(Duration.ofSeconds(3));
        s.tick();
        assertEquals(1, status(s, "d", "ready"), "the retry is admitted when its backoff ends");
    }

    @Test
    void aPromotedOrderingHeadWakesItsTenant() {
        db.createTenant("k");
        SimulatedScheduler s = scheduler();
        s.enqueue(List.of(JobRequest.builder("k", "noop").orderingKey("o").build(),
                JobRequest.builder("k", "noop").orderingKey("o").build()));
        s.tick();
        assertEquals(1, status(s, "k", "ready"), "only the head");
        s.tick();
        assertTrue(s.scheduler.tenantsWithWork().isEmpty(), "nothing admissible: the second job waits for its turn");

        ClaimedJob head = s.store.claim(s.dsl, "w", 1, LEASE).get(0);
        s.store.finish(s.dsl, "w", List.of(new JobOutcome.Succeeded(head.id(), head.attempt())));
        s.tick();
        assertEquals(1, status(s, "k", "ready"), "the completion handed the key on and named the tenant");
    }

    @Test
    void workThatSlipsPastTheWakeUpsIsFoundByTheRescan() {
        db.createTenant("x");
        SimulatedScheduler s = scheduler();
        s.tick();
        // a job whose wake-up is lost (nothing known loses one while the leader's session lives: this is the
        // safety net for what nobody foresaw)
        s.enqueue(jobs("x", 1));
        s.dropWakeUps();
        s.tick();
        assertEquals(1, status(s, "x", "pending"), "nobody told the scheduler");
        s.clock.advance(SchedulerConfig.DEFAULT_ACTIVE_RESCAN);
        s.tick();
        assertEquals(1, status(s, "x", "ready"), "the safety-net rescan found it");
    }

    @Test
    void aDeletedTenantAndAWakeUpForAnUnknownTenantAreHarmless() {
        db.createTenant("gone");
        db.createTenant("stays");
        SimulatedScheduler s = scheduler();
        s.enqueue(jobs("gone", 1));
        s.tick();
        s.completeReady();
        s.dsl.execute("DELETE FROM jobs WHERE tenant_id = 'gone'");
        s.dsl.execute("DELETE FROM tenants WHERE id = 'gone'");
        s.scheduler.onWakeUp("t:gone");
        s.scheduler.onWakeUp("t:never-existed");
        s.scheduler.onWakeUp("drained");
        s.enqueue(jobs("stays", 2));
        s.tick();
        assertEquals(2, status(s, "stays", "ready"), "the others are served as usual");
        assertFalse(s.scheduler.tenantsWithWork().contains("never-existed"), "an unknown tenant is dropped");
        s.clock.advance(Duration.ofSeconds(61));
        s.tick();
        s.clock.advance(Duration.ofSeconds(2));
        s.completeReady();
        s.tick();
        assertFalse(s.scheduler.tenants().containsKey("gone"), "the deleted tenant left memory");
    }
}

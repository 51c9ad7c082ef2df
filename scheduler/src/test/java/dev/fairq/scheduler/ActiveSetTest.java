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

    /**
     * A tenant whose read found no job with a concurrency or fairness key is read without the lane probe from
     * then on, until it is named again: a keyed job enqueued later (here one that goes first, by priority) is
     * admitted at the next round, and after the tenant's plain jobs have run out its keyed jobs are not left
     * behind until the minute's rescan.
     */
    @Test
    void aKeyedJobOfATenantKnownToHaveNoneIsReadOnceItsWakeUpArrives() {
        db.createTenant("a");
        SimulatedScheduler s = new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(2, 0).build());
        s.enqueue(jobs("a", 6));
        s.tick();
        assertEquals(2, status(s, "a", "ready"));
        assertTrue(s.scheduler.knownWithoutKeyedJobs().contains("a"), "its read found no lane");

        s.completeReady();
        s.enqueue(jobs("a", 1, b -> b.concurrencyKey("api").priority(10)));
        s.enqueue(jobs("a", 1, b -> b.fairnessKey("customer-1")));
        s.tick();
        assertEquals(1, s.count("SELECT count(*) FROM jobs WHERE concurrency_key = 'api' AND status = 'ready'"),
                "the keyed job that goes first is admitted at the round after its enqueue");
        for (int i = 0; i < 5; i++) s.round();
        assertEquals(0, status(s, "a", "pending"), "every job admitted, the fairness-keyed one behind the plain ones too");
        assertEquals(8, status(s, "a", "succeeded") + status(s, "a", "ready"));
    }

    /**
     * With more tenants that may have work than a round looks at closely (a short list of the lowest passes),
     * every tenant still gets its first job before any gets a second, and when every tenant on the short list
     * is held back (here by an empty token bucket; their ids sort first, so they lead every tie) the round
     * looks at everyone instead of admitting nothing.
     */
    @Test
    void manyActiveTenantsAreServedInStrideOrderThroughTheShortList() {
        int n = 1_500, held = 400;
        db.dsl().execute("INSERT INTO tenants (id) SELECT 'a-' || g FROM generate_series(1, ?) g", n);
        // one token, refilled once in 1,000 s: the settable clock never gets there
        db.dsl().execute("INSERT INTO tenants (id, rate_per_second, burst) SELECT '0-held-' || g, 0.001, 1"
                + " FROM generate_series(1, ?) g", held);
        List<dev.fairq.schema.JobRequest> all = new java.util.ArrayList<>();
        for (int g = 1; g <= held; g++) all.addAll(jobs("0-held-" + g, 2));
        for (int g = 1; g <= n; g++) all.addAll(jobs("a-" + g, 2));
        SimulatedScheduler s = new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(100, 0).build());
        s.enqueue(all);

        List<String> order = new java.util.ArrayList<>();
        while (order.size() < held + 2 * n) {
            List<String> r = s.round();
            if (r.isEmpty()) throw new AssertionError("no admission after " + order.size() + " (the short list stalled)");
            order.addAll(r);
        }
        assertEquals(held + 2 * n, order.size());
        List<String> first = order.subList(0, held + n);
        assertEquals(held + n, Set.copyOf(first).size(), "every tenant had its first job before any had a second");
        java.util.Map<String, Long> counts = new java.util.HashMap<>();
        for (String t : order) counts.merge(t, 1L, Long::sum);
        assertTrue(counts.entrySet().stream().allMatch(e -> e.getValue() == (e.getKey().startsWith("0-held-") ? 1 : 2)),
                "held tenants one job (no token for a second), the others both of theirs");
        assertEquals(held, s.count("SELECT count(*) FROM jobs WHERE status = 'pending'"), "the held tenants' second jobs wait");
    }

    /**
     * A limit change is read by updated_at with a 5 s overlap; one stamped earlier than that (a writer whose
     * transaction ran long, or any write the incremental read missed) is still applied by the sweep that
     * re-reads every cached tenant within a minute.
     */
    @Test
    void aChangeTheIncrementalReadMissesIsAppliedByTheSweep() {
        db.createTenant("w");
        SimulatedScheduler s = scheduler();
        s.enqueue(jobs("w", 1));
        s.tick();
        assertEquals(1, s.scheduler.tenants().get("w").limits().weight());
        db.dsl().connection(c -> {
            try (var st = c.createStatement()) {
                st.execute("SET session_replication_role = replica"); // the trigger would stamp now()
                st.execute("UPDATE tenants SET weight = 5, updated_at = now() - interval '1 hour' WHERE id = 'w'");
                st.execute("SET session_replication_role = origin");
            }
        });
        for (int i = 0; i < 130 && s.scheduler.tenants().get("w").limits().weight() != 5; i++) {
            s.clock.advance(Duration.ofMillis(500)); // a reload each tick; 120 slices make a sweep
            s.tick();
        }
        assertEquals(5, s.scheduler.tenants().get("w").limits().weight(), "the sweep read the change");
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

package dev.fairq.scheduler;

import dev.fairq.schema.JobRequest;
import dev.fairq.schema.WorkerRoute;
import dev.fairq.testing.TestDatabase;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Routing at admission, tick by tick on a settable clock: jobs no live worker can run are parked (out of the
 * admission index, so no later probe walks them), the others are admitted past them, and parked jobs come back
 * when a worker that serves them registers. A ready job whose only worker went away is taken back and parked.
 * Jobs with concurrency and fairness keys (issue 14) are routed the same way, and their keys' limits hold.
 */
class RoutingAdmissionTest {
    final TestDatabase db = TestDatabase.get();
    SimulatedScheduler s;

    @BeforeEach
    void reset() {
        db.reset();
        db.createTenant("t");
        s = new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(100, 100).build());
    }

    private List<JobRequest> jobs(String queue, String type, int n) {
        OffsetDateTime due = OffsetDateTime.now(ZoneOffset.UTC).minusMinutes(1);
        List<JobRequest> out = new ArrayList<>();
        for (int i = 0; i < n; i++) out.add(JobRequest.builder("t", type).queue(queue).runAt(due).build());
        return out;
    }

    private void register(String id, Set<String> queues, Set<String> types) {
        s.store.leases().registerWorker(s.dsl, id, 4, WorkerRoute.of(queues, types, Map.of()));
    }

    private long count(String where) {
        return s.count("SELECT count(*) FROM jobs WHERE " + where);
    }

    @Test
    void unservedJobsAreParkedOnceAndTheServedOnesBehindThemAdmitted() {
        register("w-a", null, Set.of("a"));
        s.enqueue(jobs("default", "b", 300)); // ahead in the tenant's aging order
        s.enqueue(jobs("default", "a", 5));
        for (int i = 0; i < 10 && count("status = 'ready'") < 5; i++) s.tick();

        assertEquals(5, count("status = 'ready' AND type = 'a'"));
        assertEquals(0, count("status = 'ready' AND type = 'b'"));
        long parked = count("no_worker_since IS NOT NULL AND status = 'pending'");
        assertEquals(parked, count("type = 'b' AND no_worker_since IS NOT NULL"), "only unserved jobs are parked");
        // nothing more to admit: the candidate probe no longer returns the parked jobs
        s.completeReady();
        for (int i = 0; i < 10; i++) s.tick();
        assertEquals(300, count("type = 'b' AND no_worker_since IS NOT NULL"));
        assertEquals(List.of(), s.store.admissionCandidates(s.dsl, Map.of("t", 100)).getOrDefault("t", List.of()));

        // a worker serving b registers: after the routes are re-read, b's jobs are un-parked and admitted
        register("w-b", Set.of("default"), Set.of("b"));
        s.clock.advance(Duration.ofSeconds(2));
        for (int i = 0; i < 20 && count("status = 'pending'") > 0; i++) {
            s.tick();
            s.completeReady();
        }
        assertEquals(0, count("status = 'pending'"));
        assertEquals(305, count("status = 'succeeded'"));
    }

    @Test
    void aQueueNobodyServesIsParkedAndAReadyJobWhoseWorkerLeftIsTakenBack() {
        register("w-all", null, Set.of("a"));
        s.enqueue(jobs("urgent", "a", 3));
        s.tick();
        assertEquals(3, count("status = 'ready'"));

        // the only worker now serves another queue: the ready jobs go back to pending, parked
        register("w-all", Set.of("bulk"), Set.of("a"));
        s.clock.advance(Duration.ofSeconds(2));
        s.tick();
        assertEquals(0, count("status = 'ready'"));
        assertEquals(3, count("status = 'pending' AND no_worker_since IS NOT NULL AND attempts = 0"));

        // no live worker at all (the registry's heartbeats lapse): nothing to route to, parked jobs stay parked
        s.clock.advance(SchedulerConfig.DEFAULT_WORKER_LIVENESS.plusSeconds(1));
        s.enqueue(jobs("urgent", "a", 1));
        s.tick();
        assertEquals(3, count("no_worker_since IS NOT NULL"));
        assertEquals(1, count("status = 'ready'"), "with no worker registered, jobs are admitted as before");
    }

    /**
     * Routing meets concurrency keys: jobs of a type nobody serves, first in their lanes' aging order, are parked
     * (never admitted) while the served jobs of the same keys get through, never more than the key's limit at
     * once; once a worker serves the type, the parked jobs run too, within the limit.
     */
    @Test
    void keyedJobsOfAnUnservedTypeAreParkedAndTheirKeysLimitsHold() {
        db.dsl().execute("UPDATE tenants SET concurrency_limits = '{\"k\": 2}' WHERE id = 't'");
        register("w-a", null, Set.of("a"));
        OffsetDateTime due = OffsetDateTime.now(ZoneOffset.UTC).minusMinutes(1);
        List<JobRequest> unserved = new ArrayList<>(), served = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            unserved.add(JobRequest.builder("t", "b").runAt(due).concurrencyKey("k").fairnessKey("f" + i % 2).build());
        }
        for (int i = 0; i < 10; i++) {
            served.add(JobRequest.builder("t", "a").runAt(due).concurrencyKey("k").fairnessKey("f" + i % 2).build());
            served.add(JobRequest.builder("t", "a").runAt(due).fairnessKey("f" + i % 2).build());
        }
        s.enqueue(unserved); // ahead of the served ones in every lane
        s.enqueue(served);
        long maxActive = 0;
        for (int i = 0; i < 200 && count("type = 'a' AND status = 'succeeded'") < 20; i++) {
            s.tick();
            maxActive = Math.max(maxActive, count("concurrency_key = 'k' AND status IN ('ready', 'running')"));
            assertEquals(0, count("type = 'b' AND status <> 'pending'"), "a job nobody serves is never admitted");
            s.completeReady();
        }
        assertEquals(20, count("type = 'a' AND status = 'succeeded'"));
        assertEquals(30, count("type = 'b' AND status = 'pending' AND no_worker_since IS NOT NULL"));
        assertTrue(maxActive <= 2, "key k had " + maxActive + " jobs admitted at once, its limit is 2");

        register("w-b", Set.of("default"), Set.of("b"));
        s.clock.advance(Duration.ofSeconds(2));
        for (int i = 0; i < 200 && count("status = 'pending'") > 0; i++) {
            s.tick();
            maxActive = Math.max(maxActive, count("concurrency_key = 'k' AND status IN ('ready', 'running')"));
            s.completeReady();
        }
        assertEquals(50, count("status = 'succeeded'"));
        assertTrue(maxActive <= 2, "key k had " + maxActive + " jobs admitted at once, its limit is 2");
    }
}

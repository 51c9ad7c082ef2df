package dev.fairq.worker;

import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.schema.JobRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Routing (issue 11): worker processes serve chosen queues and the types they have handlers for; the scheduler
 * admits a job only where a live worker can run it; a job nobody can run waits, parked, without using attempts;
 * a queue's reserved threads are never taken by another queue's jobs.
 */
class RoutingTest extends PlatformTest {
    private final List<ChildWorker> children = new ArrayList<>();

    @AfterEach
    void stopWhatTheTestStarted() throws Exception {
        for (ChildWorker c : children) c.process.destroyForcibly().waitFor();
    }

    private List<JobRequest> jobs(String queue, String type, int n) {
        List<JobRequest> out = new ArrayList<>();
        for (int i = 0; i < n; i++) out.add(JobRequest.builder("acme", type).queue(queue).payload("{\"n\": " + i + "}").build());
        return out;
    }

    /**
     * Two worker processes with disjoint queues, and jobs of a type nobody serves and of a queue nobody serves:
     * each queue's jobs run only on its process, the others wait with no attempt used (explain: no_worker), and
     * run once a worker that serves them registers.
     */
    @Test
    void twoWorkerProcessesWithDisjointQueuesAndATypeNobodyServes() throws Exception {
        children.add(ChildWorker.start(db, "urgent-worker", 2, 2, 10_000, 5_000, "urgent", ""));
        children.add(ChildWorker.start(db, "bulk-worker", 2, 2, 10_000, 5_000, "bulk,default", ""));
        await("both registered").atMost(Duration.ofMinutes(2))
                .until(() -> db.count("SELECT count(*) FROM workers WHERE types IS NOT NULL") == 2);
        assertEquals("urgent", db.dsl().fetchValue("SELECT array_to_string(queues, ',') FROM workers WHERE id = 'urgent-worker'"));
        assertTrue(String.valueOf(db.dsl().fetchValue("SELECT array_to_string(types, ',') FROM workers WHERE id = 'urgent-worker'"))
                .contains("record"), "a worker registers its handlers' types");

        List<JobRequest> all = new ArrayList<>(jobs("urgent", "record", 30));
        all.addAll(jobs("bulk", "record", 30));
        all.addAll(jobs("urgent", "nobody-serves-this", 3));
        all.addAll(jobs("orphan", "record", 2));
        platform.store.enqueueAll(db.dsl(), all);
        platform.startScheduler(SchedulerConfig.defaults());

        await("the served jobs ran").atMost(Duration.ofMinutes(2)).until(() ->
                db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded'") == 60);
        await("the others are parked").atMost(Duration.ofMinutes(1)).until(() ->
                db.count("SELECT count(*) FROM jobs WHERE no_worker_since IS NOT NULL AND status = 'pending'") == 5);
        assertEquals(0, db.count("""
                SELECT count(*) FROM test_runs r JOIN jobs j ON j.id = r.job_id
                WHERE (j.queue = 'urgent') <> (r.worker = 'urgent-worker')"""), "each queue ran only on its own process");
        assertEquals(30, db.count("SELECT count(DISTINCT job_id) FROM test_runs WHERE worker = 'bulk-worker'"));
        assertEquals(0, db.count("SELECT coalesce(sum(attempts), 0) FROM jobs WHERE status = 'pending'"),
                "the jobs nobody can run used no attempt");
        assertEquals(60, db.count("SELECT count(*) FROM test_runs"), "each served job ran once");

        // a worker that serves the orphan queue and the unknown type registers: their jobs run, and only there
        HandlerRegistry late = RecordingHandlers.registry(db.dataSource());
        late.register("nobody-serves-this", job -> RecordingHandlers.recordRun(db.dsl(), job, 0));
        platform.startWorker(TestPlatform.fastConfig("late-worker", 2).toBuilder().queues(Set.of("orphan", "urgent"))
                .build(), late);
        await("the parked jobs ran on the new worker").atMost(Duration.ofMinutes(2)).until(() ->
                db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded'") == 65);
        assertEquals(5, db.count("SELECT count(*) FROM test_runs WHERE worker = 'late-worker' AND job_id IN "
                + "(SELECT id FROM jobs WHERE queue = 'orphan' OR type = 'nobody-serves-this')"));
    }

    /**
     * A worker with 3 threads reserving 1 for "urgent": a flood of slow bulk jobs never runs more than 2 at once,
     * and an urgent job starts while the flood is still running instead of after it.
     */
    @Test
    void aReservedThreadIsNeverTakenByAnotherQueue() {
        List<JobRequest> flood = new ArrayList<>();
        for (int i = 0; i < 6; i++) flood.add(JobRequest.builder("acme", "sleep").queue("bulk").payload("{\"ms\": 1500}").build());
        platform.store.enqueueAll(db.dsl(), flood);
        platform.startScheduler(SchedulerConfig.defaults());
        platform.startWorker(TestPlatform.fastConfig("reserving", 3).toBuilder().reserved(Map.of("urgent", 1)).build(),
                RecordingHandlers.registry(db.dataSource()));
        await("bulk running").atMost(Duration.ofMinutes(1)).until(() -> db.count("SELECT count(*) FROM test_runs") >= 2);
        long urgent = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "record").queue("urgent").build())
                .job().getId();

        await("everything ran").atMost(Duration.ofMinutes(2)).until(() ->
                db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded'") == 7);
        // how many bulk jobs ran at each bulk start (the most at once is reached at a start); counting every run
        // that overlaps a run instead would count a job that ended before another began as running with it
        assertEquals(2, db.count("""
                SELECT max(c) FROM (SELECT (SELECT count(*) FROM test_runs s
                                            WHERE s.job_id <> ? AND s.worker = 'reserving'
                                              AND s.started_at <= r.started_at AND s.ended_at > r.started_at) AS c
                                    FROM test_runs r WHERE r.job_id <> ? AND r.worker = 'reserving') x""", urgent, urgent),
                "at most the 2 shared threads ran bulk jobs at once");
        assertTrue(db.count("""
                SELECT count(*) FROM test_runs u, test_runs b
                WHERE u.job_id = ? AND b.job_id <> ? AND b.started_at > u.ended_at""", urgent, urgent) > 0,
                "the urgent job ran before the bulk flood was through");
    }
}

package dev.fairq.worker;

import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.schema.JobRequest;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class WorkerEngineTest extends PlatformTest {

    @Test
    void tenThousandJobsOnEightThreadsOverSeveralConnectionsEachSucceedExactlyOnce() {
        List<JobRequest> jobs = new ArrayList<>();
        for (int i = 0; i < 10_000; i++) jobs.add(JobRequest.builder("acme", "record").payload("{\"n\":" + i + "}").build());
        platform.store.enqueueAll(db.dsl(), jobs);

        platform.startScheduler(SchedulerConfig.defaults());
        HandlerRegistry handlers = RecordingHandlers.registry(db.dataSource());
        platform.startWorker(TestPlatform.fastConfig("w1", 4), handlers);
        platform.startWorker(TestPlatform.fastConfig("w2", 4), handlers);

        await().atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(200))
                .until(() -> db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded'") == 10_000);

        assertEquals(10_000, db.count("SELECT count(*) FROM test_runs"), "runs");
        assertEquals(10_000, db.count("SELECT count(DISTINCT job_id) FROM test_runs"), "distinct jobs run");
        assertEquals(0, db.count("SELECT count(*) FROM jobs WHERE status <> 'succeeded'"));
        assertEquals(10_000, db.count("SELECT count(*) FROM jobs WHERE attempts = 1"), "one attempt each");
        assertEquals(2, db.count("SELECT count(DISTINCT worker) FROM test_runs"), "both workers took part");
        assertEquals(0, db.count("SELECT count(*) FROM jobs WHERE locked_by IS NOT NULL OR locked_until IS NOT NULL"));
    }

    /**
     * A long lease's heartbeat (a third of it by default) must not leave the worker counted dead: the registry's
     * readers (routing, GET /v1/admin/workers, the health check) give a heartbeat 30 s, so a worker renews its row at
     * least every 10 s whatever its lease. With a 240 s lease (80 s heartbeats) it had been "not live" 50 s out of 80.
     */
    @Test
    void aLongLeaseStillRenewsTheRegistryWithinTheLivenessWindow() {
        platform.startWorker(TestPlatform.fastConfig("long-lease", 1).toBuilder()
                .lease(Duration.ofSeconds(240), Duration.ofSeconds(80)).build(), new HandlerRegistry());
        await("a heartbeat within 10 s").atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(500)).until(() ->
                db.count("SELECT count(*) FROM workers WHERE id = 'long-lease' AND heartbeat_at > started_at") == 1);
    }

    /**
     * Jobs a worker has claimed but not started yet start in claim order (ready_rank), not in the order they
     * were claimed: one claimed later at the front of that order does not wait behind those claimed before.
     */
    @Test
    void claimedJobsStartInRankOrderNotInTheOrderTheyWereClaimed() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        List<Long> started = new CopyOnWriteArrayList<>();
        HandlerRegistry handlers = new HandlerRegistry()
                .register("block", job -> assertTrue(release.await(60, TimeUnit.SECONDS)))
                .register("note", job -> started.add(job.jobId()));
        long blocker = admitted("block", 0.0);
        platform.startWorker(TestPlatform.fastConfig("w1", 1).toBuilder().prefetch(4).build(), handlers);
        await().atMost(Duration.ofSeconds(30)).until(() -> claimed(blocker));

        long late = admitted("note", 10.0); // claimed first, behind the busy thread
        await().atMost(Duration.ofSeconds(30)).until(() -> claimed(late));
        long early = admitted("note", 1.0); // claimed after it, but ahead of it in the claim order
        await().atMost(Duration.ofSeconds(30)).until(() -> claimed(early));

        release.countDown();
        await().atMost(Duration.ofSeconds(30)).until(() -> started.size() == 2);
        assertEquals(List.of(early, late), started);
    }

    /**
     * A fresh worker (no job finished yet) holds 3 claimed jobs beyond its threads, not its whole prefetch (128):
     * on slow jobs it had taken all 20, so a second worker started a moment later found none to run.
     */
    @Test
    void aFreshWorkerOnSlowJobsLeavesTheRestToOtherWorkers() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        HandlerRegistry handlers = new HandlerRegistry()
                .register("block", job -> assertTrue(release.await(60, TimeUnit.SECONDS)));
        for (int i = 0; i < 20; i++) admitted("block", i);
        String held = "SELECT count(*) FROM jobs WHERE status = 'running' AND locked_by = ?";
        try {
            platform.startWorker(TestPlatform.fastConfig("first", 2), handlers);
            await().atMost(Duration.ofSeconds(30)).until(() -> db.count(held, "first") == 5);
            await().during(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(5)).until(() -> db.count(held, "first") == 5);
            platform.startWorker(TestPlatform.fastConfig("second", 2), handlers);
            await().atMost(Duration.ofSeconds(30)).until(() -> db.count(held, "second") == 5);
        } finally {
            release.countDown();
        }
        await().atMost(Duration.ofSeconds(60)).until(() -> db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded'") == 20);
        assertEquals(20, db.count("SELECT count(*) FROM jobs WHERE attempts = 1"), "one attempt each");
    }

    private long admitted(String type, double rank) {
        long id = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", type).build()).job().getId();
        assertEquals(List.of(id), platform.store.admit(db.dsl(), List.of(id), List.of(rank)));
        return id;
    }

    private boolean claimed(long id) {
        return db.count("SELECT count(*) FROM jobs WHERE id = ? AND status = 'running'", id) == 1;
    }

    @Test
    void permanentErrorDeadLettersAfterOneAttempt() {
        AtomicInteger calls = new AtomicInteger();
        HandlerRegistry handlers = new HandlerRegistry().register("bad", job -> {
            calls.incrementAndGet();
            throw new PermanentJobException("payload names no customer");
        });
        long id = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "bad").maxAttempts(5).build()).job().getId();
        platform.startScheduler(SchedulerConfig.defaults());
        platform.startWorker(TestPlatform.fastConfig("w1", 2), handlers);

        await().atMost(Duration.ofSeconds(30)).until(() -> "dead".equals(status(id)));
        assertEquals(1, calls.get());
        assertEquals(1, db.count("SELECT attempts FROM jobs WHERE id = ?", id));
        String error = db.dsl().fetchValue("SELECT last_error FROM jobs WHERE id = ?", id).toString();
        assertEquals("payload names no customer", error, "the handler's verdict, in its words (ErrorTextTest)");
    }

    /**
     * A handler's exception whose getMessage() throws made the worker's judging of the attempt throw: the attempt
     * stayed held, its lease renewed by every heartbeat, and the job stayed running for as long as the worker lived.
     */
    @Test
    void anErrorWhoseMessageCannotBeReadStillEndsTheAttempt() {
        class Unreadable extends RuntimeException {
            @Override public String getMessage() {
                throw new NullPointerException("the message's order is null");
            }
        }
        HandlerRegistry handlers = new HandlerRegistry().register("unreadable", job -> {
            throw new Unreadable();
        });
        long id = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "unreadable").maxAttempts(1).build()).job().getId();
        platform.startScheduler(SchedulerConfig.defaults());
        platform.startWorker(TestPlatform.fastConfig("w1", 2), handlers);

        // the symptom is the job's, not the handler thread's uncaught exception (which Awaitility would report)
        await().dontCatchUncaughtExceptions().atMost(Duration.ofSeconds(30)).until(() -> "dead".equals(status(id)));
        String error = db.dsl().fetchValue("SELECT last_error FROM jobs WHERE id = ?", id).toString();
        assertTrue(error.startsWith("the attempt failed and its error could not be read"), error);
    }

    @Test
    void transientErrorIsRetriedUpToMaxAttemptsThenDead() {
        Map<Long, AtomicInteger> calls = new ConcurrentHashMap<>();
        HandlerRegistry handlers = new HandlerRegistry().register("flaky", job -> {
            calls.computeIfAbsent(job.jobId(), k -> new AtomicInteger()).incrementAndGet();
            throw new IllegalStateException("upstream timeout on attempt " + job.attempt());
        }, new RetryPolicy(Duration.ofMillis(10), 2.0, Duration.ofMillis(50), 0.5));
        long id = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "flaky").maxAttempts(4).build()).job().getId();
        platform.startScheduler(SchedulerConfig.defaults());
        platform.startWorker(TestPlatform.fastConfig("w1", 2), handlers);

        await().atMost(Duration.ofSeconds(30)).until(() -> "dead".equals(status(id)));
        assertEquals(4, calls.get(id).get(), "one call per attempt");
        assertEquals(4, db.count("SELECT attempts FROM jobs WHERE id = ?", id));
        String error = db.dsl().fetchValue("SELECT last_error FROM jobs WHERE id = ?", id).toString();
        assertTrue(error.contains("upstream timeout on attempt 4"), "last_error keeps the last error: " + error);
    }

    /**
     * A retryAfter past what a run_at can hold failed the completion statement ("interval out of range") at every
     * retry, with the other jobs of its batch: nothing the worker finished was recorded again.
     */
    @Test
    void aRetryAfterBeyondAYearIsTakenAsAYearAndTheWorkerGoesOnRecording() {
        HandlerRegistry handlers = new HandlerRegistry()
                .register("forever", job -> { throw new RetryableJobException("come back never", Duration.ofMillis(Long.MAX_VALUE)); })
                .register("past", job -> { throw new RetryableJobException("come back yesterday", Duration.ofDays(-1)); })
                .register("fine", job -> {});
        long forever = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "forever").build()).job().getId();
        long past = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "past").maxAttempts(1).build()).job().getId();
        platform.startScheduler(SchedulerConfig.defaults());
        platform.startWorker(TestPlatform.fastConfig("w1", 2), handlers);

        await().atMost(Duration.ofSeconds(30)).until(() -> "pending".equals(status(forever)) && "dead".equals(status(past)));
        long inDays = db.count("SELECT extract(day FROM run_at - now())::bigint FROM jobs WHERE id = ?", forever);
        assertTrue(inDays >= 364 && inDays <= 366, "a year ahead, not " + inDays + " days");
        long fine = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "fine").build()).job().getId();
        await().atMost(Duration.ofSeconds(30)).until(() -> "succeeded".equals(status(fine)));
    }

    /**
     * An error text PostgreSQL's text type cannot hold (a NUL, as a handler may quote binary data) failed the
     * completion statement at every retry, with every other outcome of its batch: the worker recorded nothing again.
     */
    @Test
    void anErrorWithANulIsRecordedAndTheWorkerGoesOnRecording() {
        HandlerRegistry handlers = new HandlerRegistry()
                .register("binary", job -> { throw new IllegalStateException("bad frame \u0000\u0001 at 7"); })
                .register("fine", job -> {});
        long binary = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "binary").maxAttempts(1).build()).job().getId();
        platform.startScheduler(SchedulerConfig.defaults());
        platform.startWorker(TestPlatform.fastConfig("w1", 2), handlers);

        await().atMost(Duration.ofSeconds(30)).until(() -> "dead".equals(status(binary)));
        assertEquals("java.lang.IllegalStateException: bad frame \uFFFD\u0001 at 7",
                db.dsl().fetchValue("SELECT last_error FROM jobs WHERE id = ?", binary));
        long fine = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "fine").build()).job().getId();
        await().atMost(Duration.ofSeconds(30)).until(() -> "succeeded".equals(status(fine)));
    }

    @Test
    void transientErrorThenSuccess() {
        HandlerRegistry handlers = new HandlerRegistry().register("second-time-lucky", job -> {
            if (job.attempt() < 2) throw new RuntimeException("first attempt fails");
        }, new RetryPolicy(Duration.ofMillis(10), 2.0, Duration.ofMillis(50), 0.5));
        long id = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "second-time-lucky").build()).job().getId();
        platform.startScheduler(SchedulerConfig.defaults());
        platform.startWorker(TestPlatform.fastConfig("w1", 2), handlers);

        await().atMost(Duration.ofSeconds(30)).until(() -> "succeeded".equals(status(id)));
        assertEquals(2, db.count("SELECT attempts FROM jobs WHERE id = ?", id));
    }

    /**
     * A keyed job retried or snoozed with a delay waits out of its lane (not_due, V20) and joins it when due: the
     * scheduler's tick must bring it back, or it would wait for ever.
     */
    @Test
    void keyedJobsRetriedAndSnoozedLaterRunWhenDue() {
        java.util.concurrent.atomic.AtomicInteger snoozed = new java.util.concurrent.atomic.AtomicInteger();
        HandlerRegistry handlers = new HandlerRegistry()
                .register("second-time-lucky", job -> {
                    if (job.attempt() < 2) throw new RuntimeException("first attempt fails");
                }, new RetryPolicy(Duration.ofMillis(200), 2.0, Duration.ofMillis(300), 0.5))
                .register("snoozy", job -> {
                    if (snoozed.getAndIncrement() == 0) throw new SnoozeJobException(Duration.ofMillis(300));
                });
        long retried = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "second-time-lucky")
                .fairnessKey("customer-1").build()).job().getId();
        long snoozy = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "snoozy")
                .concurrencyKey("stripe").build()).job().getId();
        long later = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "second-time-lucky")
                .fairnessKey("customer-2").delay(Duration.ofMillis(500)).maxAttempts(2).build()).job().getId();
        assertEquals(1, db.count("SELECT count(*) FROM jobs WHERE not_due"), "the delayed keyed job waits out of its lane");
        platform.startScheduler(SchedulerConfig.defaults());
        platform.startWorker(TestPlatform.fastConfig("w1", 2), handlers);

        await().atMost(Duration.ofSeconds(30)).until(() -> "succeeded".equals(status(retried))
                && "succeeded".equals(status(snoozy)) && "succeeded".equals(status(later)));
        assertEquals(2, db.count("SELECT attempts FROM jobs WHERE id = ?", retried));
        assertEquals(1, db.count("SELECT snoozes FROM jobs WHERE id = ?", snoozy));
        assertEquals(2, db.count("SELECT attempts FROM jobs WHERE id = ?", later));
        assertEquals(0, db.count("SELECT count(*) FROM jobs WHERE not_due"));
    }

    @Test
    void aJobEnqueuedInARolledBackTransactionNeverRuns() {
        assertThrows(IllegalStateException.class, () -> db.dsl().transaction(c -> {
            platform.store.enqueue(c.dsl(), JobRequest.builder("acme", "record").jobKey("rolled-back").build());
            throw new IllegalStateException("the caller's own write failed");
        }));
        long marker = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "record").jobKey("marker").build())
                .job().getId();
        platform.startScheduler(SchedulerConfig.defaults());
        platform.startWorker(TestPlatform.fastConfig("w1", 2), RecordingHandlers.registry(db.dataSource()));

        await().atMost(Duration.ofSeconds(30)).until(() -> "succeeded".equals(status(marker)));
        assertEquals(1, db.count("SELECT count(*) FROM jobs"), "only the committed job exists");
        assertEquals(1, db.count("SELECT count(*) FROM test_runs"), "only the committed job ran");
        assertEquals(marker, db.count("SELECT job_id FROM test_runs"));
    }

    @Test
    void handlerContextCarriesAStableIdempotencyKeyAcrossAttempts() {
        List<String> keys = new java.util.concurrent.CopyOnWriteArrayList<>();
        HandlerRegistry handlers = new HandlerRegistry().register("keyed", job -> {
            keys.add(job.idempotencyKey() + "#" + job.attempt() + "#" + job.payload().path("order").asInt());
            if (job.attempt() < 3) throw new RuntimeException("try again");
        }, new RetryPolicy(Duration.ofMillis(5), 2.0, Duration.ofMillis(20), 0.0));
        long id = platform.store.enqueue(db.dsl(),
                JobRequest.builder("acme", "keyed").payload("{\"order\": 42}").build()).job().getId();
        platform.startScheduler(SchedulerConfig.defaults());
        platform.startWorker(TestPlatform.fastConfig("w1", 1), handlers);

        await().atMost(Duration.ofSeconds(30)).until(() -> "succeeded".equals(status(id)));
        String key = "fairq-acme-" + id;
        assertEquals(List.of(key + "#1#42", key + "#2#42", key + "#3#42"), keys);
    }

    /**
     * A worker never claims a job it has no handler for: the scheduler parks it (no live worker serves its type)
     * and it waits without using attempts, until a worker that serves it registers and runs it.
     */
    @Test
    void aTypeWithoutHandlerWaitsUntilAWorkerServesItAndUsesNoAttempt() {
        long id = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "unknown-type").maxAttempts(1).build())
                .job().getId();
        platform.startScheduler(SchedulerConfig.defaults());
        platform.startWorker(TestPlatform.fastConfig("w1", 1), RecordingHandlers.registry(db.dataSource()));
        await().atMost(Duration.ofSeconds(30)).until(() ->
                db.count("SELECT count(*) FROM jobs WHERE id = ? AND no_worker_since IS NOT NULL", id) == 1);
        assertEquals("pending", status(id));
        assertEquals(0, db.count("SELECT attempts FROM jobs WHERE id = ?", id));

        HandlerRegistry late = new HandlerRegistry();
        late.register("unknown-type", job -> RecordingHandlers.recordRun(db.dsl(), job, 0));
        platform.startWorker(TestPlatform.fastConfig("w2", 1), late);
        await().atMost(Duration.ofSeconds(30)).until(() -> "succeeded".equals(status(id)));
        assertEquals("w2", db.dsl().fetchValue("SELECT worker FROM test_runs WHERE job_id = ?", id));
        assertEquals(1, db.count("SELECT attempts FROM jobs WHERE id = ?", id));
    }

    private String status(long id) {
        Object s = db.dsl().fetchValue("SELECT status::text FROM jobs WHERE id = ?", id);
        return s == null ? null : s.toString();
    }

    /**
     * close() returns once every outcome is recorded, for a second caller too (a shutdown hook and the application's
     * own close): it returned at once while the first was still stopping, and a caller that then closed the pool
     * left the running job's outcome unrecorded (its lease lapses and it runs again).
     */
    @Test
    void aSecondCloseReturnsOnlyOnceTheFirstHasRecordedEveryOutcome() throws Exception {
        CountDownLatch finish = new CountDownLatch(1);
        HandlerRegistry handlers = new HandlerRegistry();
        handlers.register("wait", job -> assertTrue(finish.await(30, TimeUnit.SECONDS)));
        long id = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "wait").build()).job().getId();
        platform.startScheduler(SchedulerConfig.defaults());
        Worker worker = platform.startWorker(TestPlatform.fastConfig("w1", 1), handlers);
        await().atMost(Duration.ofSeconds(20)).until(() -> db.count("SELECT count(*) FROM jobs WHERE id = ? AND status = 'running'", id) == 1);

        Thread first = new Thread(worker::close);
        first.start();
        await().atMost(Duration.ofSeconds(10)).until(worker::isStopping);
        CountDownLatch secondReturned = new CountDownLatch(1);
        Thread second = new Thread(() -> {
            worker.close();
            secondReturned.countDown();
        });
        second.start();
        await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(5)).until(() -> secondReturned.getCount() == 1);
        finish.countDown();
        assertTrue(secondReturned.await(30, TimeUnit.SECONDS));
        assertEquals(1, db.count("SELECT count(*) FROM jobs WHERE id = ? AND status = 'succeeded'", id),
                "recorded before the second close returned");
        first.join(30_000);
    }
}

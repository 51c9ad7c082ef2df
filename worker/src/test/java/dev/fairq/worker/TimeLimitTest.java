package dev.fairq.worker;

import org.junit.jupiter.api.AfterEach;
import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.schema.JobRequest;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Time limits: the job's {@code timeout_ms}, else its type's, else the worker's default. A handler past its
 * limit is interrupted and the attempt fails as transient ("timed out after N ms"); a handler that ignores
 * the interruption is abandoned and its thread replaced, never beyond maxAbandonedThreads.
 */
class TimeLimitTest extends PlatformTest {
    private static final RetryPolicy FAST = new RetryPolicy(Duration.ofMillis(10), 2.0, Duration.ofMillis(50), 0.5);

    private final List<String> seen = new CopyOnWriteArrayList<>();
    private final CountDownLatch unstick = new CountDownLatch(1);

    @AfterEach
    void stopWhatTheTestStarted() throws Exception {
        unstick.countDown();
    }

    private long enqueue(String type, String payload, Duration timeout, int maxAttempts) {
        return platform.store.enqueue(db.dsl(), JobRequest.builder("acme", type).payload(payload).timeout(timeout)
                .maxAttempts(maxAttempts).build()).job().getId();
    }

    private String status(long id) {
        return String.valueOf(db.dsl().fetchValue("SELECT status::text FROM jobs WHERE id = ?", id));
    }

    private String lastError(long id) {
        return String.valueOf(db.dsl().fetchValue("SELECT last_error FROM jobs WHERE id = ?", id));
    }

    /** Sleeps the payload's ms (interruptibly), noting the attempt, its limit and how it ended. */
    private void sleepy(JobContext job) throws InterruptedException {
        try {
            Thread.sleep(job.payload().path("ms").asLong());
            seen.add(job.jobId() + "#" + job.attempt() + " limit=" + job.timeout().toMillis() + " done");
        } catch (InterruptedException e) {
            seen.add(job.jobId() + "#" + job.attempt() + " limit=" + job.timeout().toMillis() + " "
                    + job.cancelReason().orElse(null));
            throw e;
        }
    }

    @Test
    void anAttemptPastTheJobsLimitIsInterruptedAndRetriedAsATransientFailure() {
        HandlerRegistry handlers = new HandlerRegistry().register("work", job -> {
            if (job.attempt() == 1) sleepy(job);
        }, FAST);
        long id = enqueue("work", "{\"ms\": 120000}", Duration.ofMillis(300), 2);
        platform.startScheduler(SchedulerConfig.defaults());
        platform.startWorker(TestPlatform.fastConfig("w1", 1), handlers);

        await().atMost(Duration.ofSeconds(30)).until(() -> "succeeded".equals(status(id)));
        assertEquals(List.of(id + "#1 limit=300 TIMED_OUT"), seen);
        assertEquals(2, db.count("SELECT attempts FROM jobs WHERE id = ?", id), "the timed-out attempt counted");
        assertEquals("timed out after 300 ms", lastError(id));
    }

    @Test
    void theTypesLimitAppliesWhenTheJobSetsNoneAndTheJobsOwnLimitWins() {
        HandlerRegistry handlers = new HandlerRegistry().register("slow", this::sleepy, FAST, Duration.ofMillis(300));
        long byType = enqueue("slow", "{\"ms\": 120000}", null, 1);
        long ownLimit = enqueue("slow", "{\"ms\": 1000}", Duration.ofMinutes(1), 1);
        long workerDefault = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "plain").build()).job().getId();
        handlers.register("plain", job -> seen.add("plain limit=" + job.timeout().toMillis()));
        platform.startScheduler(SchedulerConfig.defaults());
        platform.startWorker(TestPlatform.fastConfig("w1", 2), handlers);

        await().atMost(Duration.ofSeconds(30)).until(() -> "dead".equals(status(byType))
                && "succeeded".equals(status(ownLimit)) && "succeeded".equals(status(workerDefault)));
        assertEquals("timed out after 300 ms", lastError(byType));
        assertTrue(seen.contains(byType + "#1 limit=300 TIMED_OUT"), seen.toString());
        assertTrue(seen.contains(ownLimit + "#1 limit=60000 done"), seen.toString());
        assertTrue(seen.contains("plain limit=" + WorkerConfig.DEFAULT_TIMEOUT.toMillis()), seen.toString());
    }

    @Test
    void aHandlerThatIgnoresTheInterruptionIsAbandonedAndReplacedNeverBeyondTheCap() {
        AtomicInteger ignored = new AtomicInteger();
        HandlerRegistry handlers = new HandlerRegistry()
                .register("stuck", job -> {
                    while (true) {
                        try {
                            if (unstick.await(60, TimeUnit.SECONDS)) return;
                        } catch (InterruptedException e) {
                            ignored.incrementAndGet(); // a handler that swallows the interruption
                        }
                    }
                })
                .register("note", job -> seen.add("note ran"));
        long stuck1 = enqueue("stuck", "{}", Duration.ofMillis(200), 1);
        long stuck2 = enqueue("stuck", "{}", Duration.ofMillis(200), 1);
        long note = enqueue("note", "{}", null, 1);
        assertEquals(List.of(stuck1, stuck2, note), platform.store.admit(db.dsl(), List.of(stuck1, stuck2, note)));
        Worker worker = platform.startWorker(TestPlatform.fastConfig("w1", 1).toBuilder().prefetch(2)
                .abandonAfter(Duration.ofMillis(300)).maxAbandonedThreads(1).build(), handlers);

        // stuck1 is abandoned and replaced; stuck2 runs on the replacement and is abandoned too, but the cap
        // (one replacement) is reached: the pool stays at two threads and the note waits
        await().atMost(Duration.ofSeconds(30)).until(() -> worker.abandonedThreads() == 2 && "dead".equals(status(stuck2)));
        assertTrue(worker.abandonedCapReached());
        assertEquals(2, worker.handlerPoolSize(), "one thread and one replacement, no more");
        assertEquals(List.of(), seen, "no thread left for the note");
        assertEquals(2, ignored.get(), "each stuck handler was interrupted once");
        for (long id : List.of(stuck1, stuck2)) {
            assertEquals("dead", status(id));
            assertEquals("timed out after 200 ms; the handler ignored the interruption and its thread was abandoned",
                    lastError(id));
        }

        unstick.countDown();
        await().atMost(Duration.ofSeconds(30)).until(() -> "succeeded".equals(status(note)));
        await().atMost(Duration.ofSeconds(30)).until(() -> worker.abandonedThreads() == 0 && worker.handlerPoolSize() == 1);
        assertEquals(List.of("note ran"), seen);
        assertEquals("dead", status(stuck1), "the late return of an abandoned handler changes nothing");
    }
}

package dev.fairq.worker;

import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.JobStore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link JobContext#once}: a side effect guarded by a key runs once, whoever races for it, and a worker process
 * killed between the effect and the job's completion does not make the re-run repeat it.
 */
class SideEffectOnceTest extends PlatformTest {
    private final JobStore store = new JobStore();
    private final List<ChildWorker> children = new ArrayList<>();

    @Override
    void prepareDatabase() {
        super.prepareDatabase();
        RecordingHandlers.createEffectTables(db.dsl());
    }

    @AfterEach
    void stopWhatTheTestStarted() throws Exception {
        for (ChildWorker c : children) c.process.destroyForcibly().waitFor();
    }

    private JobContext attempt(long jobId, int attempt) {
        return new JobContext(jobId, "acme", "default", "charge", "{}", attempt, 25, null, null, OffsetDateTime.now(),
                "test-" + jobId).withSideEffects(store, db.dsl());
    }

    /** A result PostgreSQL's text cannot hold (a NUL) is stored with U+FFFD: the next attempt gets it, no second run. */
    @Test
    void aResultWithANulIsStoredAndTheEffectDoesNotRunAgain() throws Exception {
        AtomicInteger effects = new AtomicInteger();
        JobContext.SideEffect effect = () -> "frame\u0000" + effects.incrementAndGet();
        assertEquals("frame\uFFFD1", attempt(2000, 1).once("raw:7", Duration.ofSeconds(30), effect));
        assertEquals("frame\uFFFD1", attempt(2000, 2).once("raw:7", Duration.ofSeconds(30), effect));
        assertEquals(1, effects.get());
    }

    /**
     * Twenty attempts (threads, each its own connection from the pool) race for one key: the effect runs once,
     * the others wait (a snooze each time they find it held) and then all get the first one's result.
     */
    @Test
    void concurrentAttemptsOfOneKeyRunTheEffectOnce() throws Exception {
        int attempts = 20;
        AtomicInteger effects = new AtomicInteger();
        AtomicInteger busy = new AtomicInteger();
        CountDownLatch go = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(attempts);
        List<Future<String>> results = new ArrayList<>();
        for (int i = 0; i < attempts; i++) {
            JobContext ctx = attempt(1000 + i, 1);
            results.add(pool.submit(() -> {
                go.await();
                long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
                while (true) {
                    try {
                        return ctx.once("charge:order-7", Duration.ofSeconds(30), () -> {
                            int n = effects.incrementAndGet();
                            Thread.sleep(300); // the effect takes a while: the others find the key held meanwhile
                            return "receipt-" + n;
                        });
                    } catch (SnoozeJobException held) {
                        busy.incrementAndGet();
                        if (System.nanoTime() > deadline) throw held;
                        Thread.sleep(10); // a worker would snooze the job; here the attempt simply asks again
                    }
                }
            }));
        }
        go.countDown();
        for (Future<String> r : results) assertEquals("receipt-1", r.get(2, TimeUnit.MINUTES));
        pool.shutdownNow();
        assertEquals(1, effects.get(), "the effect ran once");
        assertTrue(busy.get() > 0, "some attempts found the key held (the race happened)");
        assertEquals(1, db.count("SELECT count(*) FROM side_effects WHERE tenant_id = 'acme' AND status = 'done'"));
    }

    @Test
    void anEffectThatThrowsGivesTheKeyUpAndTheNextAttemptRunsIt() throws Exception {
        IllegalStateException boom = assertThrows(IllegalStateException.class,
                () -> attempt(1, 1).once("k", Duration.ofSeconds(30), () -> { throw new IllegalStateException("boom"); }));
        assertEquals("boom", boom.getMessage());
        assertEquals(0, db.count("SELECT count(*) FROM side_effects"));
        assertEquals("second", attempt(1, 2).once("k", Duration.ofSeconds(30), () -> "second"));
        assertEquals("second", attempt(1, 3).once("k", Duration.ofSeconds(30), () -> "third"));
    }

    @Test
    void aResultOfAnyTypeRoundTripsAsJson() throws Exception {
        record Receipt(String id, int cents) {}
        assertEquals(new Receipt("r1", 1250), attempt(1, 1).once("k", Duration.ofSeconds(30), Receipt.class,
                () -> new Receipt("r1", 1250)));
        assertEquals(new Receipt("r1", 1250), attempt(1, 2).once("k", Duration.ofSeconds(30), Receipt.class,
                () -> new Receipt("other", 0)));
    }

    /**
     * A result Jackson cannot write (a java.time field, with no module for it) after the effect ran: the key is kept
     * (null stored) and the job fails permanently, so no retry runs the effect again (it gave the key up: a charge
     * on every attempt).
     */
    @Test
    void aResultThatCannotBeWrittenAsJsonDoesNotMakeTheEffectRunAgain() throws Exception {
        record Charged(String id, java.time.Instant at) {}
        AtomicInteger charges = new AtomicInteger();
        java.util.concurrent.Callable<Charged> charge = () -> new Charged("c" + charges.incrementAndGet(), java.time.Instant.now());
        PermanentJobException e = assertThrows(PermanentJobException.class,
                () -> attempt(3000, 1).once("charge:9", Duration.ofSeconds(30), Charged.class, charge));
        assertTrue(e.getMessage().startsWith("side effect 'charge:9' ran, but its result"), e.getMessage());
        assertEquals(null, attempt(3000, 2).once("charge:9", Duration.ofSeconds(30), Charged.class, charge));
        assertEquals(1, charges.get(), "the effect ran once");
    }

    /**
     * A worker process runs the effect, stores its result, and is SIGKILLed before the job completes. Once its
     * lease lapses another worker runs the job again: once() answers the stored result, the effect does not
     * run a second time, and the job succeeds on its second attempt.
     */
    @Test
    void aWorkerKilledBetweenTheEffectAndTheCompletionDoesNotRepeatTheEffect() throws Exception {
        long id = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "effect").payload("{\"hang\": true}")
                .build()).job().getId();
        platform.startScheduler(SchedulerConfig.defaults());
        ChildWorker first = ChildWorker.start(db, "effect-first", 1, 0, 3_000, 5_000);
        children.add(first);
        await("the effect ran and once() returned in the first process").atMost(Duration.ofMinutes(2))
                .until(() -> db.count("SELECT count(*) FROM test_effect_results WHERE job_id = ?", id) == 1);
        assertEquals("done", db.dsl().fetchValue("SELECT status FROM side_effects WHERE key = ?", "effect:" + id));
        assertEquals("running", db.dsl().fetchValue("SELECT status::text FROM jobs WHERE id = ?", id), first.output());
        first.kill();

        platform.startWorker(TestPlatform.fastConfig("effect-second", 1), RecordingHandlers.registry(db.dataSource()));
        await("the re-run completes the job").atMost(Duration.ofMinutes(2))
                .until(() -> "succeeded".equals(db.dsl().fetchValue("SELECT status::text FROM jobs WHERE id = ?", id)));

        assertEquals(1, db.count("SELECT count(*) FROM test_effects WHERE job_id = ?", id), "the effect ran once");
        assertEquals(2, db.count("SELECT attempts FROM jobs WHERE id = ?", id));
        assertEquals("receipt of attempt 1", db.dsl().fetchValue(
                "SELECT result FROM test_effect_results WHERE job_id = ? AND attempt = 2 AND worker = 'effect-second'", id),
                "the re-run got the stored result of the first attempt's effect");
    }
}

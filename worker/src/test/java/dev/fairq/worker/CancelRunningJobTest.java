package dev.fairq.worker;

import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.OperatorActions;
import org.junit.jupiter.api.Test;

import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Cancelling a running job through the store (what the API calls): the worker running it learns (NOTIFY
 * fairq_cancel, or its periodic check when it cannot listen), interrupts the handler, records the job
 * cancelled and hands its ordering key on; a handler that finishes anyway keeps its success.
 */
class CancelRunningJobTest extends PlatformTest {
    private final CountDownLatch started = new CountDownLatch(1);
    private final List<String> seen = new CopyOnWriteArrayList<>();
    private final List<Long> notes = new CopyOnWriteArrayList<>();

    /** "hold" sleeps until interrupted and reports what its context said; "note" records its job. */
    private HandlerRegistry handlers(boolean ignoreInterrupt) {
        return new HandlerRegistry()
                .register("hold", job -> {
                    started.countDown();
                    try {
                        Thread.sleep(120_000);
                    } catch (InterruptedException e) {
                        seen.add("interrupted reason=" + job.cancelReason().orElse(null));
                        if (!ignoreInterrupt) throw e;
                    }
                })
                .register("note", job -> notes.add(job.jobId()));
    }

    private long enqueue(String type, String orderingKey) {
        return platform.store.enqueue(db.dsl(), JobRequest.builder("acme", type).orderingKey(orderingKey).build())
                .job().getId();
    }

    private String status(long id) {
        return String.valueOf(db.dsl().fetchValue("SELECT status::text FROM jobs WHERE id = ?", id));
    }

    private void cancel(long id, OperatorActions.ActionResult expected) {
        assertEquals(expected, platform.store.cancel(db.dsl(), "acme", id).result());
    }

    @Test
    void cancelStopsTheHandlerEndsTheJobCancelledAndHandsTheKeyOn() throws Exception {
        long held = enqueue("hold", "acct-1");
        long next = enqueue("note", "acct-1");
        platform.startScheduler(SchedulerConfig.defaults());
        Worker worker = platform.startWorker(TestPlatform.fastConfig("w1", 2), handlers(false));
        assertTrue(started.await(30, TimeUnit.SECONDS));

        cancel(held, OperatorActions.ActionResult.STOPPING);

        await().atMost(Duration.ofSeconds(30)).until(() -> "cancelled".equals(status(held)));
        assertEquals(List.of("interrupted reason=REQUESTED"), seen);
        assertEquals(1, db.count("SELECT attempts FROM jobs WHERE id = ?", held));
        String error = String.valueOf(db.dsl().fetchValue("SELECT last_error FROM jobs WHERE id = ?", held));
        assertTrue(error.startsWith("cancelled while running; the attempt ended with: java.lang.InterruptedException"), error);
        await().atMost(Duration.ofSeconds(30)).until(() -> "succeeded".equals(status(next)));
        assertEquals(List.of(next), notes, "the key moved on to the next job");
        // the completer forgets an attempt right after its outcome commits: the row can be read a moment before
        await().atMost(Duration.ofSeconds(30)).until(() -> worker.heldCount() == 0);
        cancel(held, OperatorActions.ActionResult.ALREADY_ENDED);
    }

    @Test
    void withoutItsListenConnectionTheWorkerStillLearnsFromItsPeriodicCheck() throws Exception {
        long held = enqueue("hold", null);
        platform.startScheduler(SchedulerConfig.defaults());
        platform.startWorker(TestPlatform.fastConfig("w1", 1), handlers(false), () -> {
            throw new SQLException("no LISTEN for this worker (test)");
        });
        assertTrue(started.await(30, TimeUnit.SECONDS));

        cancel(held, OperatorActions.ActionResult.STOPPING);

        await().atMost(Duration.ofSeconds(30)).until(() -> "cancelled".equals(status(held)));
        assertEquals(List.of("interrupted reason=REQUESTED"), seen);
    }

    @Test
    void aHandlerThatFinishesDespiteTheCancelKeepsItsSuccess() throws Exception {
        long held = enqueue("hold", null);
        platform.startScheduler(SchedulerConfig.defaults());
        platform.startWorker(TestPlatform.fastConfig("w1", 1), handlers(true));
        assertTrue(started.await(30, TimeUnit.SECONDS));

        cancel(held, OperatorActions.ActionResult.STOPPING);

        await().atMost(Duration.ofSeconds(30)).until(() -> "succeeded".equals(status(held)));
        assertEquals(List.of("interrupted reason=REQUESTED"), seen);
        assertNotNull(db.dsl().fetchValue("SELECT cancel_requested_at FROM jobs WHERE id = ?", held),
                "the late request stays on record");
    }

    @Test
    void aClaimedJobCancelledBeforeItStartsNeverRuns() throws Exception {
        long blocker = enqueue("hold", null);
        long waiting = enqueue("note", null);
        assertEquals(List.of(blocker, waiting), platform.store.admit(db.dsl(), List.of(blocker, waiting)));
        Worker worker = platform.startWorker(TestPlatform.fastConfig("w1", 1).toBuilder().prefetch(1).build(), handlers(false));
        assertTrue(started.await(30, TimeUnit.SECONDS));
        await().atMost(Duration.ofSeconds(30)).until(() -> "running".equals(status(waiting)));

        cancel(waiting, OperatorActions.ActionResult.STOPPING);

        await().atMost(Duration.ofSeconds(30)).until(() -> "cancelled".equals(status(waiting)));
        assertEquals(List.of(), notes, "it never ran");
        assertEquals("cancelled before it started",
                db.dsl().fetchValue("SELECT last_error FROM jobs WHERE id = ?", waiting));
        assertEquals("running", status(blocker), "the running job is untouched");
        assertEquals(1, worker.heldCount());
        cancel(blocker, OperatorActions.ActionResult.STOPPING);
        await().atMost(Duration.ofSeconds(30)).until(() -> "cancelled".equals(status(blocker)));
    }

    @Test
    void aClaimedJobOfATenantPausedBeforeItStartsDoesNotStart() throws Exception {
        platform.startScheduler(SchedulerConfig.defaults());
        long blocker = enqueue("hold", null);
        long waiting = enqueue("note", null);
        Worker worker = platform.startWorker(TestPlatform.fastConfig("w1", 1).toBuilder().prefetch(1)
                .cancelCheckInterval(Duration.ofMillis(100)).build(), handlers(false));
        assertTrue(started.await(30, TimeUnit.SECONDS));
        await().atMost(Duration.ofSeconds(30)).until(() -> "running".equals(status(waiting)));

        // paused while 'waiting' is claimed (running) but queued behind the blocker for the one thread
        db.dsl().execute("UPDATE tenants SET paused = true WHERE id = 'acme'");
        await().atMost(Duration.ofSeconds(30)).until(() -> worker.sawPaused("acme"));
        cancel(blocker, OperatorActions.ActionResult.STOPPING);

        // handed back, and the scheduler takes a paused tenant's admitted job back to pending
        await().atMost(Duration.ofSeconds(10)).until(() -> status(waiting) + " " + notes, "pending []"::equals);
        assertEquals(List.of(), notes, "a paused tenant's job did not start");
        assertEquals(0, db.count("SELECT attempts FROM jobs WHERE id = ?", waiting), "the attempt was given back");

        db.dsl().execute("UPDATE tenants SET paused = false WHERE id = 'acme'");
        await().atMost(Duration.ofSeconds(30)).until(() -> "succeeded".equals(status(waiting)));
        assertEquals(List.of(waiting), notes);
    }
}

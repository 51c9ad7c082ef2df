package dev.fairq.worker;

import dev.fairq.schema.EnqueueResult;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.JobStore;
import dev.fairq.schema.SettableClock;
import dev.fairq.schema.generated.enums.JobStatus;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A job a grant admits in its enqueue while every thread is busy: taken here (inserted running, queued for the next
 * free thread) only while threads free up quickly, on average and now; else inserted ready, for a claim. On a
 * settable clock: the worker measures its handlers' rate and its last free thread on the store's clock, and a
 * frozen clock makes every handler run quick; the test moves time to make the last free thread an old one.
 */
class QueuedStartInEnqueueTest extends PlatformTest {
    private final SettableClock clock = new SettableClock();
    private final List<Long> ran = new CopyOnWriteArrayList<>();
    private final AtomicInteger claimedJobs = new AtomicInteger();
    /** What the next "hold" job waits for. */
    private volatile CountDownLatch hold = new CountDownLatch(1);

    @Override
    TestPlatform newPlatform() {
        return new TestPlatform(db, new JobStore(clock));
    }

    @AfterEach
    void releaseTheThread() {
        hold.countDown();
    }

    private Worker start() {
        HandlerRegistry h = new HandlerRegistry();
        h.register("noop", job -> ran.add(job.jobId()));
        h.register("hold", job -> {
            CountDownLatch mine = hold;
            ran.add(job.jobId());
            if (!mine.await(30, TimeUnit.SECONDS)) throw new IllegalStateException("never released");
        });
        // one thread; heartbeats every 20 minutes, so only the commit's notification starts a job inserted running
        WorkerConfig config = TestPlatform.fastConfig("w1", 1).toBuilder().prefetch(4)
                .lease(Duration.ofHours(1), Duration.ofMinutes(20)).build();
        Worker w = platform.startWorker(config, h, new WorkerObserver() {
            @Override public void claimed(int jobs, long nanos) {
                claimedJobs.addAndGet(jobs);
            }
        });
        await().atMost(Duration.ofSeconds(10)).until(w::takesStartsInEnqueue);
        return w;
    }

    private EnqueueResult grantedEnqueue(String type) {
        db.dsl().execute("INSERT INTO admission_grants (tenant_id) VALUES ('acme') ON CONFLICT (tenant_id, slot) "
                + "DO UPDATE SET granted_at = now(), used_at = NULL");
        return platform.store.enqueue(db.dsl(), JobRequest.builder("acme", type).build());
    }

    private String status(long id) {
        return db.dsl().fetchValue("SELECT status::text FROM jobs WHERE id = ?", id).toString();
    }

    private void awaitSucceeded(long id) {
        await().atMost(Duration.ofSeconds(10)).until(() -> "succeeded".equals(status(id)));
    }

    @Test
    void whileTheBusyThreadFreesUpQuicklyAGrantedJobIsTakenHereAndStartsNextWithoutAClaim() {
        start();
        long first = grantedEnqueue("noop").job().getId(); // the thread is free: the rate and the last free become known
        awaitSucceeded(first);
        EnqueueResult holding = grantedEnqueue("hold");
        assertEquals(JobStatus.running, holding.job().getStatus());
        await().atMost(Duration.ofSeconds(10)).until(() -> ran.contains(holding.job().getId()));

        EnqueueResult queued = grantedEnqueue("noop");
        assertEquals(JobStatus.running, queued.job().getStatus(), "the only thread is busy but frees up quickly: taken here");
        assertEquals("w1", queued.job().getLockedBy());
        assertFalse(ran.contains(queued.job().getId()), "it waits for the thread");
        hold.countDown();
        awaitSucceeded(queued.job().getId());
        assertEquals(List.of(first, holding.job().getId(), queued.job().getId()), ran);
        assertEquals(0, claimedJobs.get(), "no claim took any of them");
        assertEquals(1, db.count("SELECT attempts FROM jobs WHERE id = ?", queued.job().getId()));
    }

    @Test
    void aThreadBusyForLongerThanTheWaitAllowedLeavesTheJobReadyForAClaim() {
        start();
        awaitSucceeded(grantedEnqueue("noop").job().getId());
        EnqueueResult holding = grantedEnqueue("hold");
        await().atMost(Duration.ofSeconds(10)).until(() -> ran.contains(holding.job().getId()));
        // the handlers' rate still says quick, but no thread has freed up for longer than the wait allowed
        clock.advance(Duration.ofNanos(Worker.QUEUED_START_MAX_WAIT_NANOS + 1_000_000));

        EnqueueResult ready = grantedEnqueue("noop");
        assertEquals(JobStatus.ready, ready.job().getStatus(), "the thread is stuck in a long job: left for a claim");
        assertEquals(null, ready.job().getLockedBy());
        hold.countDown();
        awaitSucceeded(ready.job().getId());
        assertEquals(1, claimedJobs.get(), "the ready one was claimed");
    }

    @Test
    void theRoomFollowsTheRateTheLastFreeThreadAndTheClaimersLimit() {
        double quick = 1.0 / 5_000_000; // 5 ms jobs
        // a free thread: always, even before anything is known
        assertTrue(Worker.roomForStartInEnqueue(8, 16, 0, 0, 7, 0, Long.MAX_VALUE));
        // 8 busy threads of 5 ms jobs free one every 0.6 ms: room, up to the claimer's limit (8 + 3 round trips)
        assertTrue(Worker.roomForStartInEnqueue(8, 16, quick, 500_000, 8, 0, 100_000));
        int limit = 8 + (int) Math.ceil(3 * Worker.jobsPerClaimRoundTrip(8, 16, quick, 500_000));
        assertTrue(Worker.roomForStartInEnqueue(8, 16, quick, 500_000, limit - 1, 0, 100_000));
        assertFalse(Worker.roomForStartInEnqueue(8, 16, quick, 500_000, limit, 0, 100_000), "the claimer's limit");
        assertFalse(Worker.roomForStartInEnqueue(8, 16, quick, 500_000, 8, 2 * limit - 8, 100_000), "outcomes unrecorded");
        // nothing known yet, a last free thread too long ago, or threads that free up too slowly on average
        assertFalse(Worker.roomForStartInEnqueue(8, 16, 0, 0, 8, 0, 0));
        assertFalse(Worker.roomForStartInEnqueue(8, 16, quick, 500_000, 8, 0, Worker.QUEUED_START_MAX_WAIT_NANOS + 1));
        assertFalse(Worker.roomForStartInEnqueue(2, 16, 1.0 / 200_000_000, 500_000, 2, 0, 0), "200 ms jobs on 2 threads");
    }
}

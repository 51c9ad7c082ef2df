package dev.fairq.worker;

import org.junit.jupiter.api.AfterEach;
import dev.fairq.schema.ClaimedJob;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.JobStore;
import dev.fairq.schema.SettableClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Lease-safe starts on a settable clock (the worker measures leases on the store's clock, so a test moves
 * time as a pause would): a claimed job whose lease may have lapsed is handed back, not started; a heartbeat
 * that proves the lease lets it start; a heartbeat that no longer finds a running job's lease stops it and
 * writes nothing.
 */
class LeaseSafeStartTest extends PlatformTest {
    /**
     * An hour's lease with heartbeats and reaping every 20 minutes of real time: nothing renews or reaps
     * behind the test's back, so only the test's own moves of the clock and heartbeats decide.
     */
    private static final Duration LEASE = Duration.ofHours(1);
    private static final Duration HEARTBEAT = Duration.ofMinutes(20);

    private final SettableClock clock = new SettableClock();
    private final JobStore store = new JobStore(clock);
    private final CountDownLatch release = new CountDownLatch(1);
    /** Every handler start: job, attempt, and how much of its lease the database says is left then. */
    private final List<String> starts = new CopyOnWriteArrayList<>();
    private final List<String> startsWithoutMargin = new CopyOnWriteArrayList<>();
    private final List<Long> handedBack = new CopyOnWriteArrayList<>();

    @Override
    TestPlatform newPlatform() {
        return new TestPlatform(db, store);
    }

    @AfterEach
    void stopWhatTheTestStarted() throws Exception {
        release.countDown();
    }

    private WorkerConfig config() {
        return WorkerConfig.builder().workerId("w1").threads(1).prefetch(1).lease(LEASE, HEARTBEAT)
                .reapInterval(HEARTBEAT).pollInterval(Duration.ofMillis(100))
                .defaultTimeout(Duration.ofHours(24)).build();
    }

    private Worker worker;

    private Worker start(HandlerRegistry handlers) {
        worker = platform.startWorker(config(), handlers, new WorkerObserver() {
            @Override
            public void handedBack(ClaimedJob job) {
                handedBack.add(job.id());
            }
        });
        return worker;
    }

    /** Records the start and checks the lease the database holds for it against the start margin. */
    private void recordStart(JobContext job) {
        OffsetDateTime until = (OffsetDateTime) db.dsl().fetchValue(
                "SELECT locked_until FROM jobs WHERE id = ? AND attempts = ?", job.jobId(), job.attempt());
        Duration left = until == null ? Duration.ZERO : Duration.between(clock.instant(), until.toInstant());
        starts.add(job.jobId() + "#" + job.attempt());
        if (left.compareTo(HEARTBEAT) < 0) startsWithoutMargin.add(job.jobId() + "#" + job.attempt() + " with " + left + " left");
    }

    private HandlerRegistry handlers() {
        return new HandlerRegistry()
                .register("block", job -> {
                    recordStart(job);
                    assertTrue(release.await(60, TimeUnit.SECONDS));
                })
                .register("note", this::recordStart);
    }

    private long admitted(String type, double rank) {
        long id = store.enqueue(db.dsl(), JobRequest.builder("acme", type).build()).job().getId();
        assertEquals(List.of(id), store.admit(db.dsl(), List.of(id), List.of(rank)));
        return id;
    }

    private boolean running(long id) {
        return db.count("SELECT count(*) FROM jobs WHERE id = ? AND status = 'running'", id) == 1;
    }

    private String status(long id) {
        return String.valueOf(db.dsl().fetchValue("SELECT status::text FROM jobs WHERE id = ?", id));
    }

    /** The blocker holds the only thread; the other job is claimed and waits for it. */
    private long[] oneRunningOneWaiting() {
        long blocker = admitted("block", 0.0);
        long waiting = admitted("note", 1.0);
        start(handlers());
        await().atMost(Duration.ofSeconds(30)).until(() -> running(blocker) && running(waiting) && starts.size() == 1);
        assertEquals(List.of(blocker + "#1"), starts);
        return new long[]{blocker, waiting};
    }

    @Test
    void aClaimedJobWhoseLeaseMayHaveLapsedIsHandedBackNotStarted() {
        long[] ids = oneRunningOneWaiting();
        long blocker = ids[0], waiting = ids[1];

        // a pause: 50 minutes pass on every clock; the waiting job's lease has 10 minutes left, under the
        // margin (one heartbeat interval, 20 minutes)
        clock.advance(Duration.ofMinutes(50));
        release.countDown();

        await().atMost(Duration.ofSeconds(30)).until(() -> "succeeded".equals(status(waiting)) && "succeeded".equals(status(blocker)));
        assertEquals(List.of(waiting), handedBack, "handed back once, at its first start");
        assertEquals(List.of(), startsWithoutMargin, "no handler started without the margin left");
        assertEquals(List.of(blocker + "#1", waiting + "#1"), starts,
                "it ran once, on a new claim: the handed-back attempt was not counted");
        assertEquals(1, db.count("SELECT attempts FROM jobs WHERE id = ?", waiting));
    }

    @Test
    void aHeartbeatAfterThePauseProvesTheLeaseAndTheJobStartsWithoutAHandBack() {
        long[] ids = oneRunningOneWaiting();
        long waiting = ids[1];

        clock.advance(Duration.ofMinutes(50));
        worker.heartbeat(); // nobody reaped meanwhile: the leases are still this worker's, renewed for an hour
        release.countDown();

        await().atMost(Duration.ofSeconds(30)).until(() -> "succeeded".equals(status(waiting)));
        assertEquals(List.of(), handedBack);
        assertEquals(List.of(), startsWithoutMargin);
        assertEquals(2, starts.size());
    }

    @Test
    void aHeartbeatThatNoLongerFindsTheLeaseStopsTheHandlerAndWritesNothing() throws Exception {
        AtomicReference<String> seen = new AtomicReference<>();
        CountDownLatch stopped = new CountDownLatch(1);
        HandlerRegistry handlers = new HandlerRegistry().register("hold", job -> {
            recordStart(job);
            try {
                Thread.sleep(60_000);
                seen.set("not interrupted");
            } catch (InterruptedException e) {
                seen.set("interrupted, cancelled=" + job.isCancelled() + " reason=" + job.cancelReason().orElse(null));
                stopped.countDown();
                throw e;
            }
        });
        long id = admitted("hold", 0.0);
        Worker worker = start(handlers);
        await().atMost(Duration.ofSeconds(30)).until(() -> starts.size() == 1);

        // the reaper gave the job to another attempt (of another worker) while this one ran on
        assertEquals(1, db.dsl().execute("UPDATE jobs SET locked_by = 'w2', attempts = attempts + 1 WHERE id = ?", id));
        worker.heartbeat();

        assertTrue(stopped.await(30, TimeUnit.SECONDS), "the handler was interrupted");
        assertEquals("interrupted, cancelled=true reason=LEASE_LOST", seen.get());
        await().atMost(Duration.ofSeconds(30)).until(() -> worker.heldCount() == 0);
        // nothing was written over the other attempt's job
        assertEquals("running", status(id));
        assertEquals("w2", db.dsl().fetchValue("SELECT locked_by FROM jobs WHERE id = ?", id));
        assertEquals(2, db.count("SELECT attempts FROM jobs WHERE id = ?", id));
        assertEquals(1, db.count("SELECT count(*) FROM jobs WHERE id = ? AND last_error IS NULL", id));
    }
}

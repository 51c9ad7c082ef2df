package dev.fairq.worker;

import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.schema.ClaimedJob;
import dev.fairq.schema.JobOutcome;
import dev.fairq.schema.JobRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An outcome the database refuses for its data (here a trigger raising a data exception, as a NUL in an error text
 * and an out-of-range retry delay once did) must not stop the worker: before, the completer retried the whole batch
 * forever, so nothing was recorded again and the batch's jobs stayed running under live leases. An outcome that
 * was not recorded (refused, or dropped by the fence) is not reported to the observer (the metrics) as finished.
 */
class RefusedOutcomeTest extends PlatformTest {
    /** What the observer heard: "finished TYPE OUTCOME", "lease lost TYPE" and "reaped TENANT STATUS", in order. */
    private final List<String> heard = new CopyOnWriteArrayList<>();
    private final WorkerObserver observer = new WorkerObserver() {
        @Override
        public void finished(ClaimedJob job, JobOutcome outcome, long nanos) {
            heard.add("finished " + job.type() + " " + outcome.getClass().getSimpleName());
        }

        @Override
        public void leaseLost(ClaimedJob job) {
            heard.add("lease lost " + job.type());
        }

        @Override
        public void reaped(String tenantId, String status) {
            heard.add("reaped " + tenantId + " " + status);
        }
    };

    @AfterEach
    void dropTrigger() {
        db.dsl().execute("DROP TRIGGER IF EXISTS refuse_outcome ON jobs");
        db.dsl().execute("DROP FUNCTION IF EXISTS refuse_outcome()");
    }

    private void refuseWhen(String condition) {
        db.dsl().execute("""
                CREATE FUNCTION refuse_outcome() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RAISE EXCEPTION 'refused by the test' USING ERRCODE = '22023'; END $$""");
        db.dsl().execute("CREATE TRIGGER refuse_outcome BEFORE UPDATE ON jobs FOR EACH ROW WHEN (" + condition
                + ") EXECUTE FUNCTION refuse_outcome()");
    }

    @Test
    void aRefusedErrorTextIsRecordedWithoutItAndTheRestOfTheBatchIsRecorded() {
        refuseWhen("NEW.last_error LIKE '%poison%'");
        HandlerRegistry handlers = new HandlerRegistry()
                .register("poison", job -> { throw new PermanentJobException("poison pill"); })
                .register("fine", job -> {});
        List<Long> fine = new ArrayList<>();
        long poison = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "poison").build()).job().getId();
        for (int i = 0; i < 20; i++) {
            fine.add(platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "fine").build()).job().getId());
        }
        platform.startScheduler(SchedulerConfig.defaults());
        platform.startWorker(TestPlatform.fastConfig("w1", 2), handlers);

        await().atMost(Duration.ofSeconds(30)).until(() -> "dead".equals(status(poison)));
        String error = db.dsl().fetchValue("SELECT last_error FROM jobs WHERE id = ?", poison).toString();
        assertTrue(error.startsWith("the outcome could not be stored (SQLSTATE 22023: ERROR: refused by the test"), error);
        await().atMost(Duration.ofSeconds(30)).until(() -> fine.stream().allMatch(id -> "succeeded".equals(status(id))));
        long later = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "fine").build()).job().getId();
        await().atMost(Duration.ofSeconds(30)).until(() -> "succeeded".equals(status(later)));
        assertEquals(21, db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded'"));
    }

    @Test
    void aRefusedSuccessIsLeftToItsLeaseAndTheWorkerGoesOn() {
        refuseWhen("NEW.status = 'succeeded' AND NEW.type = 'cursed'");
        HandlerRegistry handlers = new HandlerRegistry()
                .register("cursed", job -> {})
                .register("fine", job -> {});
        long cursed = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "cursed").maxAttempts(2).build()).job().getId();
        platform.startScheduler(SchedulerConfig.defaults());
        platform.startWorker(WorkerConfig.builder().workerId("w1").threads(2)
                .lease(Duration.ofSeconds(2), Duration.ofMillis(500)).reapInterval(Duration.ofMillis(200))
                .pollInterval(Duration.ofMillis(200)).build(), handlers, observer);

        // each attempt's lease lapses and the reaper counts it: the second ends the job in the dead-letter queue
        await().atMost(Duration.ofSeconds(60)).until(() -> "dead".equals(status(cursed)));
        assertEquals(2, db.count("SELECT attempts FROM jobs WHERE id = ?", cursed));
        assertTrue(db.dsl().fetchValue("SELECT last_error FROM jobs WHERE id = ?", cursed).toString().startsWith("lease expired"));
        long fine = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "fine").build()).job().getId();
        await().atMost(Duration.ofSeconds(30)).until(() -> "succeeded".equals(status(fine)));
        // the refused successes were never recorded: no success reported (it had been, twice: two in the metrics);
        // the reaper's retry and dead letter are (they had been in no counter: a job that crashed its worker at
        // every attempt was dead-lettered uncounted)
        await().atMost(Duration.ofSeconds(30)).until(() -> heard.size() == 3);
        assertEquals(List.of("finished fine Succeeded", "reaped acme dead", "reaped acme pending"),
                heard.stream().sorted().toList());
    }

    /**
     * An attempt whose lease another worker took while its handler ran: its outcome is dropped by the fence, so it is
     * reported as a lost lease only. It had been reported finished first (a success counted in the metrics, and the
     * job's next attempt counted another), then as a lost lease.
     */
    @Test
    void anOutcomeTheFenceDropsIsReportedAsALostLeaseOnly() {
        HandlerRegistry handlers = new HandlerRegistry()
                .register("stolen", job -> db.dsl().execute("UPDATE jobs SET locked_by = 'w2' WHERE id = ?", job.jobId()));
        long stolen = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "stolen").build()).job().getId();
        platform.startScheduler(SchedulerConfig.defaults());
        platform.startWorker(TestPlatform.fastConfig("w1", 1), handlers, observer);

        await().atMost(Duration.ofSeconds(30)).until(() -> heard.contains("lease lost stolen"));
        assertEquals("running", status(stolen), "w2's now: nothing of w1's attempt was written");
        assertEquals(List.of("lease lost stolen"), heard);
    }

    private String status(long id) {
        return db.dsl().fetchValue("SELECT status::text FROM jobs WHERE id = ?", id).toString();
    }
}

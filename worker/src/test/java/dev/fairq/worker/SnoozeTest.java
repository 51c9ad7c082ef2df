package dev.fairq.worker;

import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.schema.JobRequest;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link SnoozeJobException}: back to waiting without an attempt, keeping the ordering key, bounded per job. */
class SnoozeTest extends PlatformTest {
    private static final RetryPolicy QUICK = new RetryPolicy(Duration.ofMillis(5), 2.0, Duration.ofMillis(20), 0.0);

    private HandlerRegistry handlers() {
        HandlerRegistry h = RecordingHandlers.registry(db.dataSource());
        // snoozes until it has been snoozed the payload's "times", then records its run
        h.register("snoozer", job -> {
            if (job.snoozes() < job.payload().path("times").asInt()) throw new SnoozeJobException(Duration.ofMillis(50));
            RecordingHandlers.recordRun(db.dsl(), job, 0);
        }, QUICK);
        h.register("forever", job -> {
            throw new SnoozeJobException("not yet", Duration.ofMillis(10));
        }, QUICK);
        return h;
    }

    private String status(long id) {
        return String.valueOf(db.dsl().fetchValue("SELECT status::text FROM jobs WHERE id = ?", id));
    }

    @Test
    void aSnoozedJobRunsLaterWithoutUsingAnAttemptAndItsHeadKeepsTheOrderingKey() {
        long head = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "snoozer").payload("{\"times\": 3}")
                .orderingKey("customer-1").maxAttempts(1).build()).job().getId();
        long next = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "record")
                .orderingKey("customer-1").build()).job().getId();
        platform.startScheduler(SchedulerConfig.defaults());
        platform.startWorker(TestPlatform.fastConfig("w1", 2), handlers());

        await().atMost(Duration.ofSeconds(60)).until(() -> "succeeded".equals(status(next)));
        assertEquals("succeeded", status(head));
        assertEquals(3, db.count("SELECT snoozes FROM jobs WHERE id = ?", head));
        assertEquals(1, db.count("SELECT attempts FROM jobs WHERE id = ?", head), "three snoozes, one attempt (of max 1)");
        assertEquals(1, db.count("""
                SELECT count(*) FROM test_runs h, test_runs n
                WHERE h.job_id = ? AND n.job_id = ? AND n.started_at >= h.ended_at""", head, next),
                "the job behind the snoozed head ran only after the head had run");
    }

    @Test
    void snoozesBeyondTheLimitFailTheAttemptSoAJobThatSnoozesForeverEnds() {
        long id = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "forever").maxAttempts(2).build())
                .job().getId();
        platform.startScheduler(SchedulerConfig.defaults());
        platform.startWorker(TestPlatform.fastConfig("w1", 1).toBuilder().maxSnoozes(2).build(), handlers());

        await().atMost(Duration.ofSeconds(60)).until(() -> "dead".equals(status(id)));
        assertEquals(2, db.count("SELECT snoozes FROM jobs WHERE id = ?", id));
        assertEquals(2, db.count("SELECT attempts FROM jobs WHERE id = ?", id));
        String error = String.valueOf(db.dsl().fetchValue("SELECT last_error FROM jobs WHERE id = ?", id));
        assertTrue(error.startsWith("snoozed 2 times, the most a job may be (FAIRQ_MAX_SNOOZES 2)"), error);
    }

    @Test
    void aSnoozeIsZeroToOneYear() {
        assertThrows(IllegalArgumentException.class, () -> new SnoozeJobException(Duration.ofMillis(-1)));
        assertThrows(IllegalArgumentException.class, () -> new SnoozeJobException(Duration.ofDays(367)));
        assertEquals(Duration.ZERO, new SnoozeJobException(Duration.ZERO).delay());
    }
}

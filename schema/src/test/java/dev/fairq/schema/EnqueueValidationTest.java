package dev.fairq.schema;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Requests that must be refused before anything is written: invalid fields, unknown tenants, full queues. */
class EnqueueValidationTest extends StoreTestSupport {

    private List<String> fieldsOf(InvalidJobException e) {
        return e.errors().stream().map(FieldError::field).toList();
    }

    private InvalidJobException rejectSingle(JobRequest.Builder request) {
        InvalidJobException e = assertThrows(InvalidJobException.class, () -> store.enqueue(dsl, request.buildUnchecked()));
        assertEquals(0, countJobs(), "nothing may be written for an invalid request");
        return e;
    }

    @Test
    void emptyTypeIsRefused() {
        assertEquals(List.of("type"), fieldsOf(rejectSingle(JobRequest.builder(T1, ""))));
        assertEquals(List.of("type"), fieldsOf(rejectSingle(JobRequest.builder(T1, "has space"))));
    }

    @Test
    void priorityOutOfRangeIsRefused() {
        assertEquals(List.of("priority"), fieldsOf(rejectSingle(job(T1).priority(500))));
        assertEquals(List.of("priority"), fieldsOf(rejectSingle(job(T1).priority(-101))));
    }

    @Test
    void maxAttemptsOutOfRangeIsRefused() {
        assertEquals(List.of("max_attempts"), fieldsOf(rejectSingle(job(T1).maxAttempts(0))));
        assertEquals(List.of("max_attempts"), fieldsOf(rejectSingle(job(T1).maxAttempts(1001))));
    }

    @Test
    void invalidJsonPayloadIsRefused() {
        assertEquals(List.of("payload"), fieldsOf(rejectSingle(job(T1).payload("{not json"))));
        assertEquals(List.of("payload"), fieldsOf(rejectSingle(job(T1).payload(""))));
    }

    @Test
    void runAtAndDelayTogetherAreRefused() {
        InvalidJobException e = rejectSingle(job(T1).runAt(OffsetDateTime.now()).delay(Duration.ofSeconds(5)));
        assertEquals(List.of("run_at"), fieldsOf(e));
    }

    @Test
    void builderValidatesToo() {
        InvalidJobException e = assertThrows(InvalidJobException.class, () -> job(T1).priority(500).maxAttempts(0).build());
        assertEquals(List.of("priority", "max_attempts"), fieldsOf(e));
    }

    @Test
    void batchErrorsNameTheIndexAndNothingIsWritten() {
        List<JobRequest> batch = new ArrayList<>();
        for (int i = 0; i < 6; i++) batch.add(job(T1).jobKey("k" + i).build());
        batch.set(3, JobRequest.builder(T1, "").buildUnchecked());
        batch.set(5, job(T1).priority(500).payload("nope").buildUnchecked());

        InvalidJobException e = assertThrows(InvalidJobException.class, () -> store.enqueueAll(dsl, batch));

        assertEquals(List.of("jobs[3].type", "jobs[5].payload", "jobs[5].priority"), fieldsOf(e));
        assertEquals(0, countJobs());
    }

    @Test
    void unknownTenantIsRefusedAndNothingIsWritten() {
        assertThrows(UnknownTenantException.class, () -> store.enqueue(dsl, job("nobody").build()));
        assertEquals(0, countJobs());

        // one unknown tenant in a batch refuses the whole batch
        assertThrows(UnknownTenantException.class, () -> store.enqueueAll(dsl,
                List.of(job(T1).build(), job(T2).build(), job("nobody").build())));
        assertEquals(0, countJobs());
    }

    @Test
    void maxQueuedRefusesTheJobOverTheLimit() {
        dsl.execute("UPDATE tenants SET max_queued = 10 WHERE id = ?", T1);
        for (int i = 0; i < 10; i++) enqueue(job(T1));

        QueueFullException e = assertThrows(QueueFullException.class, () -> store.enqueue(dsl, job(T1).build()));
        assertEquals(T1, e.tenantId());
        assertEquals(10, e.queued());
        assertEquals(10, e.maxQueued());
        assertEquals(10, countJobs(T1));

        // a batch that would go over is refused as a whole
        assertThrows(QueueFullException.class, () -> store.enqueueAll(dsl, List.of(job(T2).build(), job(T1).build())));
        assertEquals(10, countJobs(T1));
        assertEquals(0, countJobs(T2));

        // the other tenant is not affected
        enqueue(job(T2));
        assertEquals(1, countJobs(T2));
    }

    @Test
    void maxQueuedCountsWaitingJobsOnly() {
        dsl.execute("UPDATE tenants SET max_queued = 3 WHERE id = ?", T1);
        List<Long> ids = List.of(enqueue(job(T1)), enqueue(job(T1)), enqueue(job(T1)));
        assertThrows(QueueFullException.class, () -> store.enqueue(dsl, job(T1).build()));

        // a running job is no longer queued: one more fits
        admitAndClaim("w1", ids.get(0));
        enqueue(job(T1));
        assertEquals(4, countJobs(T1));
        assertThrows(QueueFullException.class, () -> store.enqueue(dsl, job(T1).build()));
        assertEquals(4, countJobs(T1));
    }

    @Test
    void batchWithinTheLimitIsAccepted() {
        dsl.execute("UPDATE tenants SET max_queued = 10 WHERE id = ?", T1);
        List<JobRequest> batch = new ArrayList<>();
        for (int i = 0; i < 10; i++) batch.add(job(T1).build());
        assertEquals(10, store.enqueueAll(dsl, batch).stream().filter(EnqueueResult::created).count());
        assertEquals(10, countJobs(T1));
        assertTrue(assertThrows(QueueFullException.class, () -> store.enqueue(dsl, job(T1).build()))
                .getMessage().contains("max_queued is 10"));
    }
}

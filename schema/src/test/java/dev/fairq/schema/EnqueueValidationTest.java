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

    /** Content after the JSON value was accepted, then failed in the jsonb cast with an error naming no field. */
    @Test
    void aPayloadWithContentAfterItsValueIsRefusedNamingIt() {
        for (String payload : List.of("{} {}", "{\"a\": 1} trailing", "{\"a\": 1}]")) {
            assertEquals(List.of("payload"), fieldsOf(rejectSingle(job(T1).payload(payload))), payload);
            InvalidJobException e = assertThrows(InvalidJobException.class, () -> job(T1).payload(payload).build());
            assertEquals(List.of("payload"), fieldsOf(e), payload);
        }
    }

    @Test
    void runAtAndDelayTogetherAreRefused() {
        InvalidJobException e = rejectSingle(job(T1).runAt(OffsetDateTime.now()).delay(Duration.ofSeconds(5)));
        assertEquals(List.of("run_at"), fieldsOf(e));
    }

    /** The queue's clock decides: a test clock two years from now enqueues what is a year ahead of it. */
    @Test
    void runAtIsWithinAYearOfTheQueuesClock() {
        OffsetDateTime now = clock.sqlNow();
        assertEquals(List.of("run_at"), fieldsOf(rejectSingle(job(T1).runAt(now.plusDays(367)))));
        assertEquals(List.of("run_at"), fieldsOf(rejectSingle(job(T1).runAt(now.minusDays(367)))));
        assertEquals(List.of("run_at"), fieldsOf(rejectSingle(job(T1).runAt(OffsetDateTime.parse("+275760-09-13T00:00:00Z")))));
        assertEquals(List.of("run_at"), fieldsOf(rejectSingle(job(T1).runAt(OffsetDateTime.parse("0000-01-01T00:00:00Z")))));
        store.enqueue(dsl, job(T1).runAt(now.plusDays(365)).build());
        store.enqueue(dsl, job(T1).runAt(now.minusDays(365)).buildUnchecked());
        clock.advance(Duration.ofDays(730));
        store.enqueue(dsl, job(T1).runAt(clock.sqlNow().plusDays(300)).buildUnchecked());
        assertEquals(3, countJobs());
    }

    @Test
    void controlCharactersInKeysAndNulInPayloadsAreRefusedNamingTheField() {
        assertEquals(List.of("job_key"), fieldsOf(rejectSingle(job(T1).jobKey("a\0b"))));
        assertEquals(List.of("job_key"), fieldsOf(rejectSingle(job(T1).jobKey("tab\there"))));
        assertEquals(List.of("ordering_key"), fieldsOf(rejectSingle(job(T1).orderingKey("del\177"))));
        assertEquals(List.of("concurrency_key"), fieldsOf(rejectSingle(job(T1).concurrencyKey("a\0b"))));
        assertEquals(List.of("fairness_key"), fieldsOf(rejectSingle(job(T1).fairnessKey("line\nbreak"))));
        // a map limit's keys name the same keys: the same rule, and nothing is stored
        for (TenantLimit limit : List.of(TenantLimit.CONCURRENCY_LIMITS, TenantLimit.KEY_WEIGHTS)) {
            TenantLimit.InvalidLimitException e = assertThrows(TenantLimit.InvalidLimitException.class,
                    () -> limit.accept(java.util.Map.of("a\0b", 2)));
            assertEquals(limit.field(), e.field());
        }
        assertEquals(List.of("payload.a[1].b"), fieldsOf(rejectSingle(job(T1).payload("{\"a\": [0, {\"b\": \"x\\u0000\"}]}"))));
        assertEquals(List.of("payload.a"), fieldsOf(rejectSingle(job(T1).payload("{\"a\": {\"k\\u0000\": 1}}"))));
        assertEquals(List.of("payload"), fieldsOf(rejectSingle(job(T1).payload("\"\\u0000\""))));
        // an escaped backslash before u0000 is ordinary text, and unicode keys are fine
        store.enqueue(dsl, job(T1).jobKey("caf\u00e9 \u2603").payload("{\"s\": \"\\\\u0000\", \"\u00fc\": 1}").build());
        assertEquals(1, countJobs());
    }

    /**
     * A lone surrogate is no character: the driver would store '?' for it, so "k\\ud800" and "k\\udc00" would
     * become one key, and an enqueue would look for a key that was never stored (the API's repeat had answered
     * 500). Refused in every key, in payload strings and keys; a pair (an emoji) is one character and fine.
     */
    @Test
    void unpairedSurrogatesAreRefusedNamingTheFieldAndPairsAreFine() {
        assertEquals(List.of("job_key"), fieldsOf(rejectSingle(job(T1).jobKey("repro\ud800"))));
        assertEquals(List.of("ordering_key"), fieldsOf(rejectSingle(job(T1).orderingKey("\udc00x"))));
        assertEquals(List.of("concurrency_key"), fieldsOf(rejectSingle(job(T1).concurrencyKey("a\udbffb"))));
        assertEquals(List.of("fairness_key"), fieldsOf(rejectSingle(job(T1).fairnessKey("\udc00\ud800"))));
        assertEquals(JobRequest.KEY_RULE, rejectSingle(job(T1).jobKey("repro\ud800")).errors().get(0).message());
        for (TenantLimit limit : List.of(TenantLimit.CONCURRENCY_LIMITS, TenantLimit.KEY_WEIGHTS)) {
            TenantLimit.InvalidLimitException e = assertThrows(TenantLimit.InvalidLimitException.class,
                    () -> limit.accept(java.util.Map.of("x\ud800", 2)));
            assertEquals(limit.field(), e.field());
        }
        InvalidJobException escaped = rejectSingle(job(T1).payload("{\"a\": [0, {\"b\": \"x\\ud800\"}]}"));
        assertEquals(List.of("payload.a[1].b"), fieldsOf(escaped));
        assertEquals(JobRequest.SURROGATE_RULE, escaped.errors().get(0).message());
        assertEquals(List.of("payload.a"), fieldsOf(rejectSingle(job(T1).payload("{\"a\": {\"k\ud800\": 1}}")))); // a raw char
        assertEquals(0, countJobs());
        store.enqueue(dsl, job(T1).jobKey("emoji \ud83d\ude00").payload("{\"s\": \"\\ud83d\\ude00 \ud83d\ude00\"}").build());
        store.enqueue(dsl, job(T1).jobKey("emoji \ud83d\ude00").build()); // the same key: a duplicate, not a second job
        assertEquals(1, countJobs());
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

    /** A tenant id no tenant can have is a field error, not a database error (a NUL was one) nor "unknown". */
    @Test
    void aTenantIdNoTenantCanHaveNamesTheField() {
        for (String bad : List.of("ac\u0000me", "Acme", "a b", "-acme", "a".repeat(64), "\ud800")) {
            InvalidJobException e = assertThrows(InvalidJobException.class, () -> store.enqueue(dsl, job(bad).buildUnchecked()));
            assertEquals(List.of("tenant_id"), fieldsOf(e), bad);
        }
        InvalidJobException e = assertThrows(InvalidJobException.class, () -> store.enqueueAll(dsl,
                List.of(job(T1).build(), job("ac\u0000me").buildUnchecked())));
        assertEquals(List.of("jobs[1].tenant_id"), fieldsOf(e));
        assertEquals(0, countJobs());
    }

    /**
     * A batch in autocommit is one transaction even when it takes two statements: a job whose ordering key already
     * has a head goes in in a round after the others. That round failing left the others committed and the caller
     * an exception.
     */
    @Test
    void aBatchInAutocommitWhoseSecondRoundFailsLeavesNothing() {
        store.enqueue(dsl, job(T1).orderingKey("order-1").build()); // the key's head, from an earlier request
        dsl.execute("""
                CREATE FUNCTION test_fail_second_round() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RAISE EXCEPTION 'second round refused'; END $$""");
        dsl.execute("""
                CREATE TRIGGER test_fail_second_round BEFORE INSERT ON jobs FOR EACH ROW
                WHEN (NEW.ordering_key = 'order-1' AND NOT NEW.key_head) EXECUTE FUNCTION test_fail_second_round()""");
        try {
            assertThrows(org.jooq.exception.DataAccessException.class, () -> store.enqueueAll(dsl,
                    List.of(job(T1).build(), job(T1).orderingKey("order-1").build())));
            assertEquals(1, countJobs(), "the first round's job went in on its own and stayed");
        } finally {
            dsl.execute("DROP TRIGGER test_fail_second_round ON jobs");
            dsl.execute("DROP FUNCTION test_fail_second_round()");
        }
        // without the trigger the same batch goes in whole, the keyed job waiting behind the head
        store.enqueueAll(dsl, List.of(job(T1).build(), job(T1).orderingKey("order-1").build()));
        assertEquals(3, countJobs());
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

    /**
     * A single job of a tenant whose room this process has not counted in the last second (a tenant among thousands
     * submitting now and then) is counted in its own insert: one statement, not a count and then the insert. A full
     * queue and an unknown tenant are still refused, by the same statement, and nothing is written.
     */
    @Test
    void aSingleJobIsCountedInItsOwnInsert() throws Exception {
        dsl.execute("UPDATE tenants SET max_queued = 2 WHERE id = ?", T1);
        try (java.sql.Connection c = Database.dedicated(db.jdbcUrl, db.user, db.password, "enqueue-one-statement")) {
            java.util.concurrent.atomic.AtomicInteger prepared = new java.util.concurrent.atomic.AtomicInteger();
            java.sql.Connection counting = (java.sql.Connection) java.lang.reflect.Proxy.newProxyInstance(
                    getClass().getClassLoader(), new Class<?>[]{java.sql.Connection.class}, (proxy, m, args) -> {
                        if (m.getName().startsWith("prepare")) prepared.incrementAndGet();
                        try {
                            return m.invoke(c, args);
                        } catch (java.lang.reflect.InvocationTargetException e) {
                            throw e.getCause();
                        }
                    });
            org.jooq.DSLContext one = org.jooq.impl.DSL.using(counting, org.jooq.SQLDialect.POSTGRES);
            for (int i = 1; i <= 2; i++) {
                JobStore fresh = new JobStore(clock); // has counted no tenant's room yet
                assertTrue(fresh.enqueue(one, job(T1).build()).created());
                assertEquals(i, prepared.get(), "statements for " + i + " single jobs");
            }
            QueueFullException full = assertThrows(QueueFullException.class, () -> new JobStore(clock).enqueue(one, job(T1).build()));
            assertEquals(2, full.queued());
            assertEquals(2, full.maxQueued());
            assertEquals(3, prepared.get());
            assertThrows(UnknownTenantException.class, () -> new JobStore(clock).enqueue(one, job("nobody").build()));
            assertEquals(4, prepared.get());
        }
        assertEquals(2, countJobs(T1));
        assertEquals(2, countJobs());
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

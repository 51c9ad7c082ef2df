package dev.fairq.schema;

import dev.fairq.schema.generated.enums.JobStatus;
import dev.fairq.schema.generated.tables.records.JobsRecord;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static dev.fairq.schema.generated.Tables.JOBS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Enqueue: transactional with the caller, dedupe by job_key (also under concurrency), bulk batches. */
class EnqueueTest extends StoreTestSupport {

    @Test
    void enqueueCommitsWithTheCallersTransaction() {
        EnqueueResult result = dsl.transactionResult(c -> {
            EnqueueResult r = store.enqueue(c.dsl(), job(T1).payload("{\"to\":\"a@example.com\"}").build());
            // the caller's own write in the same transaction
            c.dsl().execute("INSERT INTO test_runs (job_id, attempt) VALUES (?, 0)", r.job().getId());
            // not visible to anyone else before the commit
            assertEquals(0, countJobs(), "uncommitted job visible to another connection");
            return r;
        });

        assertTrue(result.created());
        assertEquals(1, countJobs());
        JobsRecord stored = row(result.job().getId());
        assertEquals(JobStatus.pending, stored.getStatus());
        assertEquals(T1, stored.getTenantId());
        assertEquals("default", stored.getQueue());
        assertEquals("send-email", stored.getType());
        assertEquals(0, stored.getAttempts());
        assertEquals(JobRequest.DEFAULT_MAX_ATTEMPTS, stored.getMaxAttempts());
        assertEquals("a@example.com", scalar(String.class, "SELECT payload->>'to' FROM jobs WHERE id = ?", stored.getId()));
        assertFalse(stored.getKeyHead());
        assertEquals(1, dsl.fetchCount(dsl.selectFrom("test_runs")));
    }

    @Test
    void enqueueRollsBackWithTheCallersTransaction() {
        RuntimeException boom = new IllegalStateException("the caller's own work failed");
        RuntimeException thrown = assertThrows(RuntimeException.class, () -> dsl.transaction(c -> {
            EnqueueResult r = store.enqueue(c.dsl(), job(T1).jobKey("order-1").build());
            assertTrue(r.created());
            c.dsl().execute("INSERT INTO test_runs (job_id, attempt) VALUES (?, 0)", r.job().getId());
            throw boom;
        }));
        assertEquals(boom, thrown);

        assertEquals(0, countJobs());
        assertEquals(0, dsl.fetchCount(dsl.selectFrom("test_runs")));
        // the job_key is free again: the rolled-back job does not dedupe a later enqueue
        EnqueueResult again = store.enqueue(dsl, job(T1).jobKey("order-1").build());
        assertTrue(again.created());
        assertEquals(1, countJobs());
    }

    @RepeatedTest(3)
    void concurrentEnqueuesOfOneJobKeyCreateExactlyOneJob() throws Exception {
        int threads = 20;
        JobRequest request = job(T1).jobKey("invoice-42").payload("{\"n\":42}").build();
        CountDownLatch ready = new CountDownLatch(threads);
        CountDownLatch go = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<EnqueueResult>> futures = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                futures.add(pool.submit(() -> db.dsl().transactionResult(c -> {
                    // the transaction holds its own connection before anyone starts
                    c.dsl().fetchValue("SELECT 1");
                    ready.countDown();
                    assertTrue(go.await(60, TimeUnit.SECONDS));
                    return store.enqueue(c.dsl(), request);
                })));
            }
            assertTrue(ready.await(60, TimeUnit.SECONDS), "not every thread got a connection");
            go.countDown();

            List<EnqueueResult> results = new ArrayList<>();
            for (Future<EnqueueResult> f : futures) results.add(get(f));

            assertEquals(1, countJobs());
            long id = dsl.fetchValue(JOBS.ID);
            assertEquals(1, results.stream().filter(EnqueueResult::created).count(), "created=true results");
            for (EnqueueResult r : results) {
                assertEquals(id, r.job().getId());
                assertEquals("invoice-42", r.job().getJobKey());
            }
        } finally {
            shutdown(pool);
        }
    }

    @Test
    void jobKeyIsPerTenant() {
        EnqueueResult a = store.enqueue(dsl, job(T1).jobKey("k").build());
        EnqueueResult b = store.enqueue(dsl, job(T2).jobKey("k").build());
        EnqueueResult a2 = store.enqueue(dsl, job(T1).jobKey("k").build());

        assertTrue(a.created());
        assertTrue(b.created());
        assertFalse(a2.created());
        assertEquals(a.job().getId(), a2.job().getId());
        assertEquals(2, countJobs());
        assertEquals(1, countJobs(T1));
        assertEquals(1, countJobs(T2));
    }

    @Test
    void jobKeyDedupesAgainstAFinishedJobStillInTheTable() {
        long id = enqueue(job(T1).jobKey("once"));
        ClaimedJob claimed = admitAndClaim("w1", id);
        assertEquals(Set.of(id), store.finish(dsl, "w1", List.of(new JobOutcome.Succeeded(id, claimed.attempt()))));

        EnqueueResult again = store.enqueue(dsl, job(T1).jobKey("once").build());
        assertFalse(again.created());
        assertEquals(id, again.job().getId());
        assertEquals(JobStatus.succeeded, again.job().getStatus());
        assertEquals(1, countJobs());
    }

    @Test
    void bulkEnqueueOf5000KeepsRequestOrder() {
        int n = 5_000;
        List<JobRequest> requests = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            requests.add(job(i % 2 == 0 ? T1 : T2).payload("{\"i\":" + i + "}").priority(i % 7 - 3).build());
        }

        List<EnqueueResult> results = store.enqueueAll(dsl, requests);

        assertEquals(n, countJobs());
        assertEquals(n, results.size());
        long previous = Long.MIN_VALUE;
        for (int i = 0; i < n; i++) {
            EnqueueResult r = results.get(i);
            assertTrue(r.created());
            assertEquals(requests.get(i).tenantId(), r.job().getTenantId(), "result " + i);
            assertEquals(requests.get(i).priority(), r.job().getPriority().intValue(), "result " + i);
            assertTrue(r.job().getId() > previous, "ids must increase in request order at " + i);
            previous = r.job().getId();
        }
        // the stored payloads match the request they were returned for
        assertEquals(0L, scalar(Long.class, """
                SELECT count(*) FROM jobs j
                JOIN unnest(?::bigint[]) WITH ORDINALITY AS r(id, ord) ON r.id = j.id
                WHERE (j.payload->>'i')::int <> r.ord - 1
                """, (Object) results.stream().map(r -> r.job().getId()).toArray(Long[]::new)));
        assertEquals(n, dsl.fetchCount(JOBS, JOBS.STATUS.eq(JobStatus.pending)));
    }

    @Test
    void theReturnedJobsAreTheStoredRowsColumnForColumn() {
        long replayed = enqueue(job(T1).jobKey("seen").payload("{\"old\": 1}").priority(2));
        List<EnqueueResult> results = store.enqueueAll(dsl, List.of(
                job(T1).queue("mail").payload("{\"to\": \"a@example.com\", \"n\": [1, 2]}").priority(-3)
                        .jobKey("k1").maxAttempts(7).timeout(Duration.ofSeconds(9)).fairnessKey("customer-1")
                        .concurrencyKey("smtp").payloadVersion(2).build(),
                job(T1).orderingKey("order-9").delay(Duration.ofMinutes(5)).build(),
                job(T1).orderingKey("order-9").build(),
                job(T1).jobKey("seen").build(),
                job(T2).runAt(dbNow().plusDays(1)).build()));

        assertEquals(List.of(true, true, true, false, true), results.stream().map(EnqueueResult::created).toList());
        assertEquals(replayed, results.get(3).job().getId());
        for (EnqueueResult r : results) {
            JobsRecord stored = row(r.job().getId());
            for (org.jooq.Field<?> f : JOBS.fields()) {
                assertEquals(stored.get(f), r.job().get(f), f.getName() + " of job " + stored.getId());
            }
        }
        assertEquals("smtp", results.get(0).job().getConcurrencyKey());
        assertEquals(JobStatus.pending, results.get(0).job().getStatus());
        assertTrue(results.get(1).job().getKeyHead());
        assertFalse(results.get(2).job().getKeyHead());

        // batches without fairness keys take the other statements (INSERT_JOBS and its unflushed twin), and a
        // tenant grant inserts the first due job ready at the front of the claim order
        store.admission().grant(dsl, List.of(T2));
        List<EnqueueResult> plain = new ArrayList<>(store.enqueueAll(dsl, List.of(
                job(T2).payload("{\"a\": true}").build(), job(T2).priority(4).jobKey("k2").build())));
        store.admission().grant(dsl, List.of(T2));
        plain.addAll(store.enqueueAllUnflushed(dsl, List.of(job(T2).queue("q2").build(), job(T1).build())));
        // the quiet statement (FAIRQ_SUBMIT_START=flush), and the API's twin of the keyed statement
        plain.addAll(store.enqueueAllWakingAfterCommit(dsl, List.of(job(T2).jobKey("k4").build())));
        plain.addAll(store.enqueueAllUnflushed(dsl, List.of(job(T1).fairnessKey("customer-2").jobKey("k3").build())));
        assertEquals(List.of(JobStatus.ready, JobStatus.pending, JobStatus.ready, JobStatus.pending, JobStatus.pending,
                        JobStatus.pending),
                plain.stream().map(r -> r.job().getStatus()).toList());
        for (EnqueueResult r : plain) {
            JobsRecord stored = row(r.job().getId());
            for (org.jooq.Field<?> f : JOBS.fields()) {
                assertEquals(stored.get(f), r.job().get(f), f.getName() + " of job " + stored.getId());
            }
        }
        assertEquals(Double.valueOf(Double.NEGATIVE_INFINITY), plain.get(0).job().getReadyRank());
        assertEquals(plain.get(0).job().getCreatedAt(), plain.get(0).job().getAdmittedAt());

        // a single job takes the one-row statements (scalars, not arrays of one), each twin of them
        store.admission().grant(dsl, List.of(T2));
        List<EnqueueResult> single = new ArrayList<>();
        single.add(store.enqueue(dsl, job(T2).payload("{\"b\": [1, \"x\"]}").priority(-2).timeout(Duration.ofSeconds(3)).build()));
        single.add(store.enqueue(dsl, job(T1).orderingKey("order-10").delay(Duration.ofSeconds(30)).maxAttempts(3).build()));
        single.addAll(store.enqueueAllUnflushed(dsl, List.of(job(T1).jobKey("k5").payloadVersion(3).build())));
        single.addAll(store.enqueueAllWakingAfterCommit(dsl, List.of(job(T1).queue("q3").runAt(dbNow().plusHours(2)).build())));
        single.addAll(store.enqueueAllUnflushed(dsl, List.of(job(T1).fairnessKey("customer-3").build())));
        single.add(store.enqueue(dsl, job(T1).fairnessKey("customer-3").concurrencyKey("smtp").build()));
        single.add(store.enqueue(dsl, job(T1).jobKey("k5").build())); // the replay of an existing key
        assertEquals(List.of(true, true, true, true, true, true, false), single.stream().map(EnqueueResult::created).toList());
        assertEquals(single.get(2).job().getId(), single.get(6).job().getId());
        assertEquals(List.of(JobStatus.ready, JobStatus.pending, JobStatus.pending, JobStatus.pending, JobStatus.pending,
                JobStatus.pending, JobStatus.pending), single.stream().map(r -> r.job().getStatus()).toList());
        for (EnqueueResult r : single) {
            JobsRecord stored = row(r.job().getId());
            for (org.jooq.Field<?> f : JOBS.fields()) {
                assertEquals(stored.get(f), r.job().get(f), f.getName() + " of job " + stored.getId());
            }
        }
        assertTrue(single.get(1).job().getKeyHead());
        assertEquals("{\"b\": [1, \"x\"]}", single.get(0).job().getPayload().data());
    }

    @Test
    void duplicateJobKeyWithinOneBatchStoresOneJob() {
        List<EnqueueResult> results = store.enqueueAll(dsl, List.of(
                job(T1).jobKey("dup").payload("{\"first\":true}").build(),
                job(T1).jobKey("other").build(),
                job(T1).jobKey("dup").payload("{\"first\":false}").build()));

        assertEquals(2, countJobs());
        assertEquals(1, dsl.fetchCount(JOBS, JOBS.JOB_KEY.eq("dup")));
        assertTrue(results.get(0).created());
        assertTrue(results.get(1).created());
        assertFalse(results.get(2).created());
        assertEquals(results.get(0).job().getId(), results.get(2).job().getId());
        assertEquals("true", scalar(String.class, "SELECT payload->>'first' FROM jobs WHERE job_key = 'dup'"));
    }

    /**
     * More than one statement's batch given no transaction: a failure in the second statement used to leave the
     * first statement's 10,000 jobs committed, and the caller, told it failed, could not know which.
     */
    @Test
    void aBatchOfSeveralStatementsWithoutATransactionIsAllOrNothing() {
        dsl.execute("""
                CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RAISE EXCEPTION 'poison refused by the test' USING ERRCODE = '22023'; END $$""");
        dsl.execute("CREATE TRIGGER refuse_poison BEFORE INSERT ON jobs FOR EACH ROW WHEN (NEW.type = 'poison') "
                + "EXECUTE FUNCTION refuse_poison()");
        try {
            List<JobRequest> requests = new ArrayList<>();
            for (int i = 0; i < Enqueue.MAX_BATCH; i++) requests.add(job(T1).build());
            requests.add(JobRequest.builder(T1, "poison").build());
            assertThrows(RuntimeException.class, () -> store.enqueueAll(dsl, requests));
            assertEquals(0, countJobs());

            requests.remove(requests.size() - 1);
            requests.add(job(T1).build());
            assertEquals(Enqueue.MAX_BATCH + 1, store.enqueueAll(dsl, requests).size());
            assertEquals(Enqueue.MAX_BATCH + 1, countJobs());
        } finally {
            dsl.execute("DROP TRIGGER refuse_poison ON jobs");
            dsl.execute("DROP FUNCTION refuse_poison()");
        }
    }

    @Test
    void batchMixingNewAndExistingJobKeys() {
        long existing = enqueue(job(T1).jobKey("b"));
        List<EnqueueResult> results = store.enqueueAll(dsl, List.of(
                job(T1).jobKey("a").build(), job(T1).jobKey("b").build(), job(T1).jobKey("c").build()));

        assertEquals(3, countJobs());
        assertEquals(List.of(true, false, true), results.stream().map(EnqueueResult::created).toList());
        assertEquals(existing, results.get(1).job().getId());
        assertEquals(List.of("a", "b", "c"), results.stream().map(r -> r.job().getJobKey()).toList());
        assertEquals(3, new HashSet<>(results.stream().map(r -> r.job().getId()).toList()).size());
    }

    @Test
    void runAtAndDelayAreStoredOnTheDatabaseClock() {
        // within a year of now, as run_at must be
        OffsetDateTime at = dbNow().plusDays(30).withNano(0).withOffsetSameInstant(ZoneOffset.UTC);
        long scheduled = enqueue(job(T1).runAt(at));
        OffsetDateTime before = dbNow();
        long delayed = enqueue(job(T1).delay(Duration.ofHours(1)));
        long now = enqueue(job(T1));

        assertEquals(at.toInstant(), row(scheduled).getRunAt().toInstant());
        assertFalse(row(delayed).getRunAt().isBefore(before.plusHours(1)));
        assertTrue(row(delayed).getRunAt().isBefore(before.plusHours(2)));
        // only the job that is due is an admission candidate
        assertEquals(List.of(now), candidates(T1));
    }

    @Test
    void enqueueOfNothingWritesNothing() {
        assertEquals(List.of(), store.enqueueAll(dsl, List.of()));
        assertEquals(0, countJobs());
        assertNull(scalar(Long.class, "SELECT max(id) FROM jobs"));
    }

    /**
     * A single-job submit's max_queued check is planned once per connection, not at every call: after the five
     * custom plans PostgreSQL tries first, it runs a generic one. The array form of the same statement stays on
     * custom plans for ever (it was 0.48 ms of planning a submit under load).
     */
    @Test
    void theOneTenantQueueRoomCheckSettlesOnAGenericPlan() throws Exception {
        assertEquals(List.of(0L, 8L), plansAfterEightRuns(Enqueue.QUEUED_COUNTS.bind().set("tenant_ids", new String[]{T1})),
                "the array form (generic, custom): planned at every call");
        long generic = plansAfterEightRuns(Enqueue.QUEUED_COUNT.bind().set("tenant_id", T1)).get(0);
        assertTrue(generic >= 3, "generic plans of the one-tenant form: " + generic);
    }

    /**
     * Runs the statement eight times on one server-side prepared statement of a fresh session: its {generic,
     * custom} plan counts.
     */
    private List<Long> plansAfterEightRuns(NamedSql.Binding binding) throws java.sql.SQLException {
        try (java.sql.Connection c = Database.dedicated(db.jdbcUrl, db.user, db.password, "enqueue-test-plans")) {
            try (java.sql.PreparedStatement ps = binding.prepare(c)) {
                ps.unwrap(org.postgresql.PGStatement.class).setPrepareThreshold(1);
                for (int i = 0; i < 8; i++) {
                    try (java.sql.ResultSet rs = ps.executeQuery()) {
                        assertTrue(rs.next(), "the tenant's row");
                    }
                }
                try (java.sql.Statement st = c.createStatement();
                     java.sql.ResultSet rs = st.executeQuery("SELECT generic_plans, custom_plans FROM pg_prepared_statements "
                             + "WHERE NOT from_sql AND statement LIKE '%LIMIT t.max_queued%'")) {
                    assertTrue(rs.next(), "the statement is prepared on the server");
                    List<Long> out = List.of(rs.getLong(1), rs.getLong(2));
                    assertFalse(rs.next(), "one prepared statement of the check");
                    return out;
                }
            }
        }
    }
}

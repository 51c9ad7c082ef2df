package dev.fairq.api;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The tenant job endpoints over real HTTP: every status code of the contract. */
class JobsApiTest extends AppTest {
    @Test
    void submitReturns201WithLocationAndTheJobThenRunsIt() {
        String key = app.newTenantKey(TestApp.uniqueTenant("sub"));
        TestApp.Res r = app.call("POST", "/v1/jobs", key,
                "{\"type\": \"record\", \"payload\": {\"a\": [1, 2]}, \"priority\": 5, \"max_attempts\": 3, \"queue\": \"emails\"}");
        assertEquals(201, r.status(), r.toString());
        long id = r.body().get("id").asLong();
        assertTrue(r.header("Location").endsWith("/v1/jobs/" + id));
        assertEquals("record", r.body().get("type").asText());
        assertEquals("emails", r.body().get("queue").asText());
        assertEquals(5, r.body().get("priority").asInt());
        assertEquals(3, r.body().get("max_attempts").asInt());
        assertEquals(2, r.body().get("payload").get("a").get(1).asInt());
        assertTrue(r.body().get("created_at").asText().endsWith("Z"), "RFC 3339 UTC");
        for (String f : List.of("id", "queue", "type", "payload", "priority", "status", "attempts", "max_attempts", "run_at",
                "job_key", "ordering_key", "created_at", "started_at", "finished_at", "last_error")) {
            assertTrue(r.body().has(f), "field " + f);
        }
        await().atMost(Duration.ofSeconds(20)).until(() ->
                app.call("GET", "/v1/jobs/" + id, key, null).body().get("status").asText().equals("succeeded"));
        TestApp.Res done = app.call("GET", "/v1/jobs/" + id, key, null);
        assertEquals(1, done.body().get("attempts").asInt());
        assertNotNull(done.body().get("finished_at").asText(null));
        assertEquals("not_waiting", app.call("GET", "/v1/jobs/" + id + "/explain", key, null).body().get("reason").asText());
    }

    @Test
    void sameJobKeyReplaysWith200AndDifferentRequestIs409() {
        String key = app.newTenantKey(TestApp.uniqueTenant("idem"));
        String body = "{\"type\": \"record\", \"payload\": {\"x\": 1, \"y\": 2}, \"job_key\": \"order-1\"}";
        TestApp.Res first = app.call("POST", "/v1/jobs", key, body);
        assertEquals(201, first.status());
        // the same request with the payload's keys in another order is the same request
        TestApp.Res again = app.call("POST", "/v1/jobs", key, "{\"job_key\": \"order-1\", \"payload\": {\"y\": 2, \"x\": 1}, \"type\": \"record\"}");
        assertEquals(200, again.status());
        assertEquals("true", again.header("Idempotent-Replay"));
        assertEquals(first.body().get("id"), again.body().get("id"));
        List<Object> before = app.snapshot();
        app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {\"x\": 2}, \"job_key\": \"order-1\"}").assertRefused(409, "job_key");
        assertEquals(before, app.snapshot());
    }

    /**
     * {@code delay_ms: 0} is no delay: with it or without it, the same request. The second had been a 409 "already
     * used with a different request". A job stored before (its hash counted the 0) still takes the same request as a
     * replay.
     */
    @Test
    void aZeroDelayIsTheSameRequestAsNoDelay() throws Exception {
        String tenant = TestApp.uniqueTenant("zero-delay");
        String key = app.newTenantKey(tenant);
        String bare = "{\"type\": \"record\", \"payload\": {}, \"job_key\": \"%s\"}";
        String zero = "{\"type\": \"record\", \"payload\": {}, \"job_key\": \"%s\", \"delay_ms\": 0}";
        TestApp.Res a = app.call("POST", "/v1/jobs", key, bare.formatted("z1"));
        assertEquals(201, a.status(), a.toString());
        TestApp.Res a2 = app.call("POST", "/v1/jobs", key, zero.formatted("z1"));
        assertEquals(200, a2.status(), a2.toString());
        assertEquals(a.body().get("id"), a2.body().get("id"));
        TestApp.Res b = app.call("POST", "/v1/jobs", key, zero.formatted("z2"));
        assertEquals(201, b.status(), b.toString());
        TestApp.Res b2 = app.call("POST", "/v1/jobs/batch", key, "{\"jobs\": [" + bare.formatted("z2") + ", " + zero.formatted("z2") + "]}");
        assertEquals(200, b2.status(), b2.toString());
        assertEquals(b.body().get("id"), b2.body().path("jobs").path(1).path("job").path("id"));
        List<Object> before = app.snapshot();
        app.call("POST", "/v1/jobs", key, zero.formatted("z2").replace("\"delay_ms\": 0", "\"delay_ms\": 5")).assertRefused(409, "job_key");
        assertEquals(before, app.snapshot());

        // a job stored with the hash an earlier version gave delay_ms 0
        JobSubmission old = app.support.getObjectMapper().readValue(zero.formatted("z3"), JobSubmission.class);
        TestApp.Res c = app.call("POST", "/v1/jobs", key, zero.formatted("z3"));
        assertEquals(201, c.status(), c.toString());
        assertEquals(1, app.db.dsl().execute("UPDATE jobs SET request_hash = ? WHERE id = ?", old.earlierHash(tenant), c.body().get("id").asLong()));
        TestApp.Res c2 = app.call("POST", "/v1/jobs", key, zero.formatted("z3"));
        assertEquals(200, c2.status(), c2.toString());
        assertEquals(c.body().get("id"), c2.body().get("id"));
        assertEquals(3, app.db.dsl().fetchCount(app.db.dsl().selectOne().from("jobs").where("tenant_id = ?", tenant)),
                "three jobs: z1, z2, z3");
    }

    @Test
    void badInputIs400Or422Or413NamingTheFieldAndChangesNothing() {
        String key = app.newTenantKey(TestApp.uniqueTenant("bad"));
        List<Object> before = app.snapshot();

        assertEquals(400, app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", ").status());
        assertEquals(400, app.call("POST", "/v1/jobs", key, "[1, 2]").status());

        TestApp.Res invalid = app.call("POST", "/v1/jobs", key,
                "{\"type\": \"bad type!\", \"payload\": {}, \"priority\": 1000, \"run_at\": \"tomorrow\", \"max_attempts\": 0, \"colour\": 1}");
        assertEquals(422, invalid.status(), invalid.toString());
        List<String> fields = new ArrayList<>();
        invalid.body().get("errors").forEach(e -> fields.add(e.get("field").asText()));
        assertTrue(fields.containsAll(List.of("type", "run_at", "max_attempts", "colour")), fields.toString());
        app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}, \"priority\": 1000}").assertRefused(422, "priority");
        assertEquals(422, app.call("POST", "/v1/jobs", key, "{\"payload\": {}}").status());
        assertEquals(422, app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}, \"tenant\": \"other\"}").status());
        assertEquals(422, app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}, \"run_at\": \"2030-01-01T00:00:00Z\", \"delay_ms\": 5}").status());

        app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {\"s\": \"" + "x".repeat(2000) + "\"}}").assertRefused(413, "payload");

        assertEquals(before, app.snapshot());
    }

    @Test
    void anHttpJobsPayloadIsCheckedWhenSubmittedNotWhenItRuns() {
        String key = app.newTenantKey(TestApp.uniqueTenant("hook"));
        List<Object> before = app.snapshot();
        for (String url : List.of("file:///etc/passwd", "gopher://127.0.0.1:70/", "jar:http://h.example/x.jar!/", "ftp://h.example/")) {
            TestApp.Res r = app.call("POST", "/v1/jobs", key, "{\"type\": \"http\", \"payload\": {\"url\": \"" + url + "\"}}")
                    .assertRefused(422, "payload.url", url);
            assertTrue(r.body().get("errors").get(0).get("message").asText().startsWith("scheme must be http or https"), r.toString());
        }
        app.call("POST", "/v1/jobs", key, "{\"type\": \"http\", \"payload\": {}}").assertRefused(422, "payload.url");
        app.call("POST", "/v1/jobs", key, "{\"type\": \"http\", \"payload\": [1]}").assertRefused(422, "payload");
        TestApp.Res header = app.call("POST", "/v1/jobs", key, "{\"type\": \"http\", \"payload\": {\"url\": "
                + "\"https://h.example/\", \"headers\": {\"X-Sig\": \"s3cr3t\\r\\nX-Evil: 1\"}}}").assertRefused(422, "payload.headers.X-Sig");
        assertFalse(header.toString().contains("s3cr3t"), header.toString());
        app.call("POST", "/v1/jobs", key, "{\"type\": \"http\", \"payload\": {\"url\": \"https://h.example/\", "
                + "\"timeout_ms\": 0}}").assertRefused(422, "payload.timeout_ms");
        // credentials in the URL are never sent (the receiver answered 401 and the job died): where to put them instead
        TestApp.Res userInfo = app.call("POST", "/v1/jobs", key, "{\"type\": \"http\", \"payload\": {\"url\": "
                + "\"https://hooker:pa55w0rd@h.example/\"}}").assertRefused(422, "payload.url");
        assertTrue(userInfo.toString().contains("put the credentials in payload.headers"), userInfo.toString());
        assertFalse(userInfo.toString().contains("pa55w0rd"), userInfo.toString());
        app.call("POST", "/v1/jobs/batch", key, "{\"jobs\": [{\"type\": \"http\", \"payload\": {\"url\": \"https://h.example/\"}}, "
                + "{\"type\": \"http\", \"payload\": {\"url\": \"file:///x\"}}]}").assertRefused(422, "jobs[1].payload.url");
        assertEquals(before, app.snapshot());
        assertEquals(201, app.call("POST", "/v1/jobs", key, "{\"type\": \"http\", \"payload\": {\"url\": "
                + "\"https://h.example/hook\", \"method\": \"put\", \"body\": {\"n\": 1}}, \"delay_ms\": 3600000}").status());
    }

    @Test
    void beyondMaxQueuedIs429WithRetryAfter() {
        String tenant = TestApp.uniqueTenant("full");
        String key = app.newTenantKey(tenant);
        assertEquals(200, app.admin("PATCH", "/v1/admin/tenants/" + tenant, "{\"max_queued\": 2}").status());
        // due in an hour: queued, and no scheduler or worker can take them out of the count meanwhile
        String later = "{\"type\": \"record\", \"payload\": {}, \"delay_ms\": 3600000}";
        assertEquals(201, app.call("POST", "/v1/jobs", key, later).status());
        assertEquals(201, app.call("POST", "/v1/jobs", key, later).status());
        List<Object> before = app.snapshot();
        TestApp.Res r = app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}}");
        assertEquals(429, r.status());
        assertNotNull(r.header("Retry-After"));
        assertEquals(before, app.snapshot());
    }

    /**
     * A job_key replay adds no job, so a tenant at max_queued gets its job back (200, Idempotent-Replay), single or
     * batch: it had a 429, and the client that lost the answer to its submit (the documented way to recover) could not
     * learn that its job exists until the queue drained. A request that does add a job is still refused, counting
     * only what it adds.
     */
    @Test
    void aJobKeyReplayAtMaxQueuedIsAnsweredAsAReplayNotA429() {
        String tenant = TestApp.uniqueTenant("fullr");
        String key = app.newTenantKey(tenant);
        assertEquals(200, app.admin("PATCH", "/v1/admin/tenants/" + tenant, "{\"max_queued\": 2}").status());
        String a = "{\"type\": \"record\", \"payload\": {}, \"delay_ms\": 3600000, \"job_key\": \"a\"}";
        String b = "{\"type\": \"record\", \"payload\": {}, \"delay_ms\": 3600000, \"job_key\": \"b\"}";
        TestApp.Res first = app.call("POST", "/v1/jobs", key, a);
        assertEquals(201, first.status(), first.toString());
        assertEquals(201, app.call("POST", "/v1/jobs", key, b).status());
        List<Object> before = app.snapshot();

        TestApp.Res again = app.call("POST", "/v1/jobs", key, a);
        assertEquals(200, again.status(), again.toString());
        assertEquals("true", again.header("Idempotent-Replay"));
        assertEquals(first.body().get("id"), again.body().get("id"));
        TestApp.Res batch = app.call("POST", "/v1/jobs/batch", key, "{\"jobs\": [" + a + ", " + b + "]}");
        assertEquals(200, batch.status(), batch.toString());
        assertTrue(batch.body().get("jobs").get(1).get("idempotent_replay").asBoolean());
        // the same key with another request is the conflict it is, not a full queue
        app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {\"x\": 1}, \"job_key\": \"a\"}").assertRefused(409, "job_key");
        assertEquals(before, app.snapshot());

        TestApp.Res mixed = app.call("POST", "/v1/jobs/batch", key, "{\"jobs\": [" + a + ", {\"type\": \"record\", \"payload\": {}}]}");
        assertEquals(429, mixed.status(), mixed.toString());
        assertEquals("the tenant has at least 2 jobs queued and this request adds 1; its max_queued is 2", mixed.body().get("error").asText());
        assertEquals(429, app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}, \"job_key\": \"c\"}").status());
        assertEquals(before, app.snapshot());
    }

    /** A refusal says how many jobs the request adds: a batch larger than max_queued is refused with no job queued. */
    @Test
    void aBatchBeyondMaxQueuedIsRefusedWithItsSize() {
        String tenant = TestApp.uniqueTenant("fullb");
        String key = app.newTenantKey(tenant);
        assertEquals(200, app.admin("PATCH", "/v1/admin/tenants/" + tenant, "{\"max_queued\": 2}").status());
        String later = "{\"type\": \"record\", \"payload\": {}, \"delay_ms\": 3600000}";
        List<Object> before = app.snapshot();
        TestApp.Res r = app.call("POST", "/v1/jobs/batch", key, "{\"jobs\": [" + later + ", " + later + ", " + later + "]}");
        assertEquals(429, r.status());
        assertEquals("a request of 3 jobs can never fit under max_queued 2 (the tenant has 0 jobs queued): send at most 2 at once",
                r.body().get("error").asText());
        assertEquals(before, app.snapshot());

        assertEquals(201, app.call("POST", "/v1/jobs", key, later).status());
        r = app.call("POST", "/v1/jobs/batch", key, "{\"jobs\": [" + later + ", " + later + "]}");
        assertEquals(429, r.status());
        assertEquals("the tenant has 1 job queued and this request adds 2; its max_queued is 2", r.body().get("error").asText());
        // a limit lowered under a backlog: the count stops at the limit, so the message says it is a lower bound
        assertEquals(201, app.call("POST", "/v1/jobs", key, later).status());
        assertEquals(200, app.admin("PATCH", "/v1/admin/tenants/" + tenant, "{\"max_queued\": 1}").status());
        r = app.call("POST", "/v1/jobs", key, later);
        assertEquals(429, r.status());
        assertEquals("the tenant has at least 1 job queued and this request adds 1; its max_queued is 1", r.body().get("error").asText());
    }

    @Test
    void batchIsAtomicAndNamesTheIndexAndField() {
        String key = app.newTenantKey(TestApp.uniqueTenant("batch"));
        List<Object> before = app.snapshot();
        app.call("POST", "/v1/jobs/batch", key, "{\"jobs\": [{\"type\": \"record\", \"payload\": {}}, "
                + "{\"type\": \"record\", \"payload\": {}}, {\"type\": \"record\", \"payload\": {}, \"max_attempts\": -1}]}").assertRefused(422, "jobs[2].max_attempts");
        assertEquals(before, app.snapshot());
        assertEquals(422, app.call("POST", "/v1/jobs/batch", key, "{\"jobs\": []}").status());
        assertEquals(400, app.call("POST", "/v1/jobs/batch", key, "{\"jobs\": [").status());
        assertEquals(before, app.snapshot());

        TestApp.Res ok = app.call("POST", "/v1/jobs/batch", key, "{\"jobs\": [{\"type\": \"record\", \"payload\": {}, \"ordering_key\": \"k\"}, "
                + "{\"type\": \"record\", \"payload\": {\"n\": 2}, \"ordering_key\": \"k\", \"job_key\": \"b2\"}]}");
        assertEquals(201, ok.status(), ok.toString());
        assertEquals(2, ok.body().get("jobs").size());
        assertFalse(ok.body().get("jobs").get(1).get("idempotent_replay").asBoolean());

        // a job_key reused with a different request rolls the whole batch back
        List<Object> mid = app.snapshot();
        app.call("POST", "/v1/jobs/batch", key, "{\"jobs\": [{\"type\": \"record\", \"payload\": {}}, "
                + "{\"type\": \"record\", \"payload\": {\"n\": 3}, \"ordering_key\": \"k\", \"job_key\": \"b2\"}]}").assertRefused(409, "jobs[1].job_key");
        assertEquals(mid, app.snapshot());
    }

    /**
     * Two items of one batch with the same job_key and different requests: the 409 names the earlier item. It had
     * named that item's job id, which the rollback left naming no job (a GET of it answered 404).
     */
    @Test
    void aBatchReusingItsOwnJobKeyNamesTheItemNotAnIdThatNeverExists() {
        String key = app.newTenantKey(TestApp.uniqueTenant("batchkey"));
        List<Object> before = app.snapshot();
        TestApp.Res r = app.call("POST", "/v1/jobs/batch", key, "{\"jobs\": ["
                + "{\"type\": \"record\", \"payload\": {}, \"job_key\": \"dup\", \"concurrency_key\": \"a\"}, "
                + "{\"type\": \"record\", \"payload\": {}, \"job_key\": \"dup\", \"concurrency_key\": \"b\"}]}")
                .assertRefused(409, "jobs[1].job_key");
        assertEquals("already used by jobs[0] of this batch with a different request",
                r.body().get("errors").get(0).get("message").asText(), r.toString());
        assertTrue(r.body().get("error").asText().contains("jobs[0] of this batch"), r.toString());
        assertEquals(before, app.snapshot(), "nothing written");
    }

    /**
     * A retry of a cancelled job of an ordering key decides whether the job takes the key's turn, and that decision
     * raced the key's other head changes. An enqueue that made a new head and committed after the retry's head check
     * failed the retry on jobs_ordering_head_uidx: a 500. A head being finished meanwhile was taken for a head, so
     * its hand-on (which cannot see the retried job) and the retry left the key with a waiting job and no head: the
     * job never ran. Now the head is read FOR SHARE (a head being finished is waited for and seen gone) and a head
     * taken meanwhile makes the retry decide again: 200, and the job waits its turn or takes it.
     */
    /**
     * Batches naming the same job_keys in different orders, at once: each inserted its keys in its own order, so two
     * could each wait for a key the other had inserted, and PostgreSQL's deadlock detection answered one a 500.
     * Every batch is answered, all with the same job per key.
     */
    @Test
    void concurrentBatchesOfTheSameJobKeysInAnyOrderAreAllAnswered() throws Exception {
        String tenant = TestApp.uniqueTenant("batchrace");
        String key = app.newTenantKey(tenant);
        assertEquals(200, app.admin("PATCH", "/v1/admin/tenants/" + tenant,
                "{\"rate_per_second\": 1000, \"burst\": 1000, \"max_running\": 50}").status());
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(12);
        try {
            for (int round = 0; round < 25; round++) {
                List<String> keys = new ArrayList<>();
                for (int i = 0; i < 40; i++) keys.add("race-" + round + "-" + i);
                // a tenant that submits quickly holds admission grants: the batches race as a busy tenant's do
                for (int i = 0; i < 3; i++) app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}}");
                java.util.concurrent.CountDownLatch start = new java.util.concurrent.CountDownLatch(1);
                List<java.util.concurrent.Future<TestApp.Res>> calls = new ArrayList<>();
                for (int b = 0; b < 12; b++) {
                    List<String> order = new ArrayList<>(keys);
                    java.util.Collections.shuffle(order, new java.util.Random(round * 100 + b));
                    StringBuilder body = new StringBuilder("{\"jobs\": [");
                    for (int i = 0; i < order.size(); i++) {
                        body.append(i == 0 ? "" : ", ").append("{\"type\": \"record\", \"payload\": {}, \"job_key\": \"")
                                .append(order.get(i)).append("\"}");
                    }
                    String json = body.append("]}").toString();
                    calls.add(pool.submit(() -> {
                        start.await();
                        return app.call("POST", "/v1/jobs/batch", key, json);
                    }));
                }
                start.countDown();
                Map<String, Long> idByKey = new java.util.HashMap<>();
                for (java.util.concurrent.Future<TestApp.Res> f : calls) {
                    TestApp.Res r = f.get();
                    assertTrue(r.status() == 200 || r.status() == 201, r.toString());
                    for (com.fasterxml.jackson.databind.JsonNode item : r.body().get("jobs")) {
                        Long earlier = idByKey.putIfAbsent(item.get("job").get("job_key").asText(), item.get("job").get("id").asLong());
                        if (earlier != null) assertEquals(earlier, item.get("job").get("id").asLong(), r.toString());
                    }
                }
                assertEquals(40, idByKey.size());
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aRetryRacingAnotherHeadChangeOfItsOrderingKeyNeitherFailsNorStrandsTheJob() throws Exception {
        String tenant = TestApp.uniqueTenant("rhead");
        String key = app.newTenantKey(tenant);
        String later = "{\"type\": \"record\", \"payload\": {}, \"delay_ms\": 3600000, \"ordering_key\": \"k\"}";
        long x = app.call("POST", "/v1/jobs", key, later).body().get("id").asLong();
        assertEquals(200, app.call("POST", "/v1/jobs/" + x + "/cancel", key, null).status());
        try (java.sql.Connection c = java.sql.DriverManager.getConnection(app.db.jdbcUrl, app.db.user, app.db.password)) {
            c.setAutoCommit(false);
            long head; // an enqueue of the key's next head, committed after the retry's head check
            try (java.sql.PreparedStatement ps = c.prepareStatement("INSERT INTO jobs (tenant_id, type, payload, ordering_key, "
                    + "key_head, run_at) VALUES (?, 'record', '{}', 'k', true, now() + interval '1 hour') RETURNING id")) {
                ps.setString(1, tenant);
                java.sql.ResultSet rs = ps.executeQuery();
                rs.next();
                head = rs.getLong(1);
            }
            java.util.concurrent.CompletableFuture<TestApp.Res> retry = java.util.concurrent.CompletableFuture.supplyAsync(
                    () -> app.call("POST", "/v1/jobs/" + x + "/retry", key, null));
            awaitBlockedOrDone("WITH replayed AS", retry);
            c.commit();
            TestApp.Res r = retry.get(20, java.util.concurrent.TimeUnit.SECONDS);
            assertEquals(200, r.status(), r.toString());
            assertEquals("pending", r.body().get("status").asText());
            TestApp.Res explain = app.call("GET", "/v1/jobs/" + x + "/explain", key, null);
            assertEquals("ordering_blocked", explain.body().get("reason").asText(), explain.toString());
            assertEquals(head, explain.body().get("data").get("behind_job").asLong());

            // the head is being finished (cancelled here, its hand-on finding no waiting job) while x is retried again
            assertEquals(200, app.call("POST", "/v1/jobs/" + x + "/cancel", key, null).status());
            try (java.sql.PreparedStatement ps = c.prepareStatement(
                    "UPDATE jobs SET status = 'cancelled', key_head = false, finished_at = now() WHERE id = ?")) {
                ps.setLong(1, head);
                assertEquals(1, ps.executeUpdate());
            }
            java.util.concurrent.CompletableFuture<TestApp.Res> again = java.util.concurrent.CompletableFuture.supplyAsync(
                    () -> app.call("POST", "/v1/jobs/" + x + "/retry", key, null));
            awaitBlockedOrDone("FOR SHARE", again);
            c.commit();
            assertEquals(200, again.get(20, java.util.concurrent.TimeUnit.SECONDS).status());
        }
        // x took the key's turn and ran
        await().atMost(Duration.ofSeconds(20)).until(() ->
                app.call("GET", "/v1/jobs/" + x, key, null).body().get("status").asText().equals("succeeded"));
    }

    /** Until a backend running a statement with {@code fragment} waits for a lock, or {@code call} is done. */
    private void awaitBlockedOrDone(String fragment, java.util.concurrent.Future<?> call) {
        await().atMost(Duration.ofSeconds(20)).until(() -> call.isDone() || app.db.count(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE ?", "%" + fragment + "%") > 0);
    }

    @Test
    void getListCancelRetryAndTheirConflicts() {
        String tenant = TestApp.uniqueTenant("ops");
        String key = app.newTenantKey(tenant);
        assertEquals(404, app.call("GET", "/v1/jobs/999999999", key, null).status());
        assertEquals(404, app.call("GET", "/v1/jobs/not-a-number", key, null).status());

        List<Long> ids = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            ids.add(app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}, \"delay_ms\": 3600000, \"queue\": \"q" + (i % 2) + "\"}")
                    .body().get("id").asLong());
        }
        TestApp.Res page1 = app.call("GET", "/v1/jobs?limit=2", key, null);
        assertEquals(200, page1.status());
        assertEquals(2, page1.body().get("jobs").size());
        assertEquals(ids.get(4), page1.body().get("jobs").get(0).get("id").asLong(), "newest first");
        String next = page1.body().get("next").asText();
        TestApp.Res page2 = app.call("GET", "/v1/jobs?limit=2&after=" + next, key, null);
        assertEquals(ids.get(2), page2.body().get("jobs").get(0).get("id").asLong());
        TestApp.Res page3 = app.call("GET", "/v1/jobs?limit=2&after=" + page2.body().get("next").asText(), key, null);
        assertEquals(1, page3.body().get("jobs").size());
        assertTrue(page3.body().get("next").isNull());
        assertEquals(3, app.call("GET", "/v1/jobs?queue=q0&status=pending", key, null).body().get("jobs").size());
        assertEquals(422, app.call("GET", "/v1/jobs?status=sleeping", key, null).status());
        assertEquals(422, app.call("GET", "/v1/jobs?limit=0", key, null).status());
        // an ordering key of spaces is a key like any other: its filter lists its jobs, not every job
        long spaced = app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}, \"delay_ms\": 3600000, \"ordering_key\": \" \"}")
                .body().get("id").asLong();
        com.fasterxml.jackson.databind.JsonNode spacedOnly = app.call("GET", "/v1/jobs?ordering_key=%20", key, null).body().get("jobs");
        assertEquals(1, spacedOnly.size(), spacedOnly.toString());
        assertEquals(spaced, spacedOnly.get(0).get("id").asLong());
        assertEquals(6, app.call("GET", "/v1/jobs?ordering_key=", key, null).body().get("jobs").size(), "empty: no filter");

        TestApp.Res explain = app.call("GET", "/v1/jobs/" + ids.get(0) + "/explain", key, null);
        assertEquals("scheduled", explain.body().get("reason").asText());
        assertNotNull(explain.body().get("data").get("run_at"));

        assertEquals(409, app.call("POST", "/v1/jobs/" + ids.get(0) + "/retry", key, null).status());
        TestApp.Res cancelled = app.call("POST", "/v1/jobs/" + ids.get(0) + "/cancel", key, null);
        assertEquals(200, cancelled.status());
        assertEquals("cancelled", cancelled.body().get("status").asText());
        TestApp.Res again = app.call("POST", "/v1/jobs/" + ids.get(0) + "/cancel", key, null);
        assertEquals(200, again.status(), "a job that already ended answers 200, unchanged");
        assertEquals(cancelled.body().get("finished_at"), again.body().get("finished_at"));
        TestApp.Res retried = app.call("POST", "/v1/jobs/" + ids.get(0) + "/retry", key, null);
        assertEquals(200, retried.status());
        assertEquals("pending", retried.body().get("status").asText());
        assertEquals(404, app.call("POST", "/v1/jobs/999999999/cancel", key, null).status());
        assertEquals(404, app.call("POST", "/v1/jobs/999999999/retry", key, null).status());
    }

    @Test
    void explainNamesOrderingBlockedAndPausedAndStatsCountsTheTenant() {
        String tenant = TestApp.uniqueTenant("expl");
        String key = app.newTenantKey(tenant);
        long dead = app.call("POST", "/v1/jobs", key, "{\"type\": \"fail\", \"payload\": {}, \"ordering_key\": \"acct-1\"}").body().get("id").asLong();
        long behind = app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}, \"ordering_key\": \"acct-1\"}").body().get("id").asLong();
        await().atMost(Duration.ofSeconds(20)).until(() ->
                app.call("GET", "/v1/jobs/" + dead, key, null).body().get("status").asText().equals("dead"));
        TestApp.Res e = app.call("GET", "/v1/jobs/" + behind + "/explain", key, null);
        assertEquals("ordering_blocked", e.body().get("reason").asText());
        assertEquals(dead, e.body().get("data").get("blocked_by_dead_job").asLong());

        TestApp.Res stats = app.call("GET", "/v1/stats", key, null);
        assertEquals(200, stats.status());
        assertEquals(1, stats.body().get("pending").asInt());
        assertEquals(1, stats.body().get("dead_total").asInt());
        assertEquals(1, stats.body().get("dead_last_5m").asInt());
        assertEquals(1, stats.body().get("blocked_ordering_keys").asInt());
        assertNotNull(stats.body().get("limits").get("max_running"));

        TestApp.Res blocked = app.admin("GET", "/v1/admin/ordering-keys/blocked?tenant=" + tenant, null);
        assertEquals(1, blocked.body().get("ordering_keys").size());
        assertEquals(dead, blocked.body().get("ordering_keys").get(0).get("dead_job_id").asLong());

        // the admin discards the dead head: the key moves on and the job behind it runs
        assertEquals(409, app.admin("POST", "/v1/admin/jobs/" + behind + "/discard", null).status());
        assertEquals("cancelled", app.admin("POST", "/v1/admin/jobs/" + dead + "/discard", null).body().get("status").asText());
        await().atMost(Duration.ofSeconds(20)).until(() ->
                app.call("GET", "/v1/jobs/" + behind, key, null).body().get("status").asText().equals("succeeded"));

        // paused: accepted, explained, not started
        app.changeLimits(tenant, "{\"paused\": true}");
        long waiting = app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}}").body().get("id").asLong();
        assertEquals("paused", app.call("GET", "/v1/jobs/" + waiting + "/explain", key, null).body().get("reason").asText());
        assertNull(app.call("GET", "/v1/jobs/" + waiting, key, null).body().get("started_at").textValue());
    }

    /**
     * payload_version over the API: stored and answered, 422 out of range, part of a job_key replay's identity;
     * a version its handler does not read dead-letters at once and explain says why; a type no live worker
     * serves waits (explain: no_worker) with no attempt used.
     */
    @Test
    void payloadVersionIsStoredAndAnUnknownOneIsExplainedAsANoWorkerTypeIs() {
        String key = app.newTenantKey(TestApp.uniqueTenant("ver"));
        TestApp.Res v2 = app.call("POST", "/v1/jobs", key,
                "{\"type\": \"record\", \"payload\": {}, \"payload_version\": 2, \"job_key\": \"v\"}");
        assertEquals(201, v2.status(), v2.toString());
        assertEquals(2, v2.body().get("payload_version").asInt());
        assertEquals(0, v2.body().get("snoozes").asInt());
        assertEquals(409, app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}, \"job_key\": \"v\"}").status(),
                "the same job_key with another payload_version is another request");
        assertEquals(1, app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}}").body()
                .get("payload_version").asInt(), "default 1");
        app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}, \"payload_version\": 0}").assertRefused(422, "payload_version");

        // record reads version 1 only: version 2 is a permanent error naming it
        long id = v2.body().get("id").asLong();
        await().atMost(Duration.ofSeconds(20)).until(() ->
                app.call("GET", "/v1/jobs/" + id, key, null).body().get("status").asText().equals("dead"));
        TestApp.Res job = app.call("GET", "/v1/jobs/" + id, key, null);
        assertEquals(1, job.body().get("attempts").asInt());
        assertTrue(job.body().get("last_error").asText().contains("unknown payload_version 2 for type 'record'"),
                job.body().toString());
        TestApp.Res why = app.call("GET", "/v1/jobs/" + id + "/explain", key, null);
        assertEquals("unknown_payload_version", why.body().get("reason").asText(), why.body().toString());
        assertEquals(2, why.body().get("data").get("payload_version").asInt());

        long orphan = app.call("POST", "/v1/jobs", key, "{\"type\": \"nobody-runs-this\", \"payload\": {}}")
                .body().get("id").asLong();
        await().atMost(Duration.ofSeconds(20)).until(() ->
                app.call("GET", "/v1/jobs/" + orphan + "/explain", key, null).body().get("reason").asText().equals("no_worker"));
        TestApp.Res waiting = app.call("GET", "/v1/jobs/" + orphan, key, null);
        assertEquals("pending", waiting.body().get("status").asText());
        assertEquals(0, waiting.body().get("attempts").asInt());
        assertEquals("nobody-runs-this", app.call("GET", "/v1/jobs/" + orphan + "/explain", key, null).body()
                .get("data").get("type").asText());
        // not yet due, it is not parked: explain says scheduled (api/README had said no_worker came first)
        long later = app.call("POST", "/v1/jobs", key, "{\"type\": \"nobody-runs-this\", \"payload\": {}, \"delay_ms\": 3600000}")
                .body().get("id").asLong();
        assertEquals("scheduled", app.call("GET", "/v1/jobs/" + later + "/explain", key, null).body().get("reason").asText());
    }

    @Test
    void explainSaysRateLimitedWhenTheBucketIsEmpty() {
        String tenant = TestApp.uniqueTenant("rate");
        String key = app.newTenantKey(tenant);
        app.changeLimits(tenant, "{\"rate_per_second\": 0.01, \"burst\": 1}");
        StringBuilder batch = new StringBuilder("{\"jobs\": [");
        for (int i = 0; i < 3; i++) batch.append(i == 0 ? "" : ",").append("{\"type\": \"record\", \"payload\": {}}");
        TestApp.Res r = app.call("POST", "/v1/jobs/batch", key, batch.append("]}").toString());
        long last = r.body().get("jobs").get(2).get("job").get("id").asLong();
        await().atMost(Duration.ofSeconds(10)).until(() ->
                app.call("GET", "/v1/jobs/" + last + "/explain", key, null).body().get("reason").asText().equals("rate_limited"));
        assertNotNull(app.call("GET", "/v1/jobs/" + last + "/explain", key, null).body().get("data").get("next_token_at"));
    }

    @Test
    void metricsAndHealthChecksOnTheAdminPort() {
        String key = app.newTenantKey(TestApp.uniqueTenant("met"));
        app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}, \"delay_ms\": 3600000}");
        long id = app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}}").body().get("id").asLong();
        await().atMost(Duration.ofSeconds(20)).until(() ->
                app.call("GET", "/v1/jobs/" + id, key, null).body().get("status").asText().equals("succeeded"));
        TestApp.Res metrics = app.adminPort("/metrics");
        assertEquals(200, metrics.status());
        String text = metrics.body().asText();
        for (String m : List.of("fairq_jobs{", "fairq_job_starts_total{", "fairq_job_successes_total{",
                "fairq_claim_latency_seconds_bucket{", "fairq_admission_latency_seconds_bucket{")) {
            assertTrue(text.contains(m), m + " in\n" + text);
        }
        // promtool's rule: a quantile label belongs to a summary, an le label to a histogram (the tick's quantiles
        // had been a gauge's label, which `promtool check metrics` refused)
        await().atMost(Duration.ofSeconds(20)).until(() -> app.adminPort("/metrics").body().asText().contains("fairq_scheduler_tick_seconds_count"));
        text = app.adminPort("/metrics").body().asText();
        Map<String, String> types = new java.util.HashMap<>();
        for (String line : text.split("\n")) {
            if (line.startsWith("# TYPE ")) types.put(line.split(" ")[2], line.split(" ")[3]);
        }
        for (String line : text.split("\n")) {
            if (line.startsWith("#") || line.isBlank()) continue;
            String name = line.replaceAll("[{ ].*", "");
            String family = types.containsKey(name) ? name : name.replaceAll("_(count|sum|bucket|total|created)$", "");
            if (line.matches(".*[{,]quantile=\".*")) assertEquals("summary", types.get(family), line);
            if (line.matches(".*[{,]le=\".*")) assertEquals("histogram", types.get(family), line);
        }
        assertEquals("summary", types.get("fairq_scheduler_tick_seconds"));
        assertTrue(text.contains("fairq_scheduler_tick_seconds{quantile=\"0.99\"}"), text);
        TestApp.Res health = app.adminPort("/healthcheck");
        assertEquals(200, health.status(), health.toString());
        assertTrue(health.body().get("database").get("healthy").asBoolean());
        assertTrue(health.body().get("scheduler").get("healthy").asBoolean());
        assertTrue(health.body().get("worker-pool").get("healthy").asBoolean());
    }
    @Test
    void timeoutMsIsAJobFieldFromOneMillisecondToADay() {
        String key = app.newTenantKey(TestApp.uniqueTenant("limit"));
        TestApp.Res r = app.call("POST", "/v1/jobs", key,
                "{\"type\": \"record\", \"payload\": {}, \"timeout_ms\": 1500, \"job_key\": \"t-1\"}");
        assertEquals(201, r.status(), r.toString());
        assertEquals(1500, r.body().get("timeout_ms").asInt());
        assertTrue(r.body().get("cancel_requested_at").isNull());
        long id = r.body().get("id").asLong();
        assertEquals(1500, app.call("GET", "/v1/jobs/" + id, key, null).body().get("timeout_ms").asInt());
        assertTrue(app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}}").body().get("timeout_ms").isNull(),
                "no limit of its own: the type's default applies");
        // a replay must ask for the same limit
        assertEquals(200, app.call("POST", "/v1/jobs", key,
                "{\"type\": \"record\", \"payload\": {}, \"timeout_ms\": 1500, \"job_key\": \"t-1\"}").status());
        assertEquals(409, app.call("POST", "/v1/jobs", key,
                "{\"type\": \"record\", \"payload\": {}, \"timeout_ms\": 1501, \"job_key\": \"t-1\"}").status());

        List<Object> before = app.snapshot();
        for (String bad : List.of("0", "86400001", "-5", "1.5", "\"100\"", "true")) {
            app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}, \"timeout_ms\": " + bad + "}").assertRefused(422, "timeout_ms", bad + ": ");
        }
        app.call("POST", "/v1/jobs/batch", key,
                "{\"jobs\": [{\"type\": \"record\", \"payload\": {}}, {\"type\": \"record\", \"payload\": {}, \"timeout_ms\": 0}]}").assertRefused(422, "jobs[1].timeout_ms");
        assertEquals(before, app.snapshot(), "bad input changes nothing");
        assertEquals(201, app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}, \"timeout_ms\": 86400000}").status());
    }

    @Test
    void cancellingARunningJobAnswers202WhileItStopsThen200() {
        String tenant = TestApp.uniqueTenant("stop");
        String key = app.newTenantKey(tenant);
        long id = app.call("POST", "/v1/jobs", key, "{\"type\": \"sleep\", \"payload\": {\"ms\": 120000}}").body().get("id").asLong();
        long viaAdmin = app.call("POST", "/v1/jobs", key, "{\"type\": \"sleep\", \"payload\": {\"ms\": 120000}}").body().get("id").asLong();
        await().atMost(Duration.ofSeconds(30)).until(() -> "running".equals(status(key, id)) && "running".equals(status(key, viaAdmin)));

        TestApp.Res stopping = app.call("POST", "/v1/jobs/" + id + "/cancel", key, null);
        assertEquals(202, stopping.status(), stopping.toString());
        assertEquals("running", stopping.body().get("status").asText());
        assertTrue(stopping.body().get("cancel_requested_at").asText().endsWith("Z"));
        await().atMost(Duration.ofSeconds(30)).until(() -> "cancelled".equals(status(key, id)));
        TestApp.Res ended = app.call("POST", "/v1/jobs/" + id + "/cancel", key, null);
        assertEquals(200, ended.status());
        assertEquals("cancelled", ended.body().get("status").asText());
        assertTrue(ended.body().get("last_error").asText().startsWith("cancelled while running"), ended.toString());

        TestApp.Res admin = app.admin("POST", "/v1/admin/jobs/" + viaAdmin + "/cancel", null);
        assertEquals(202, admin.status(), admin.toString());
        await().atMost(Duration.ofSeconds(30)).until(() -> "cancelled".equals(status(key, viaAdmin)));
        assertEquals(404, app.admin("POST", "/v1/admin/jobs/999999999/cancel", null).status());
    }

    /**
     * A payload's numbers are stored as sent, on each way in: read as doubles, 0.12345678901234567890123 had lost
     * its last digits, 9007199254740993.5 had become ...994, and 1e400 the string "Infinity".
     */
    @Test
    void payloadNumbersAreStoredExactly() throws Exception {
        String tenant = TestApp.uniqueTenant("numbers");
        String key = app.newTenantKey(tenant);
        String numbers = "{\"x\": 0.12345678901234567890123, \"y\": 9007199254740993.5, \"z\": 1e400, \"n\": -1e400, "
                + "\"i\": 123456789012345678901234567890, \"s\": 19.990000000000000001}";
        var exact = new com.fasterxml.jackson.databind.ObjectMapper()
                .enable(com.fasterxml.jackson.databind.DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS);
        java.util.Map<?, ?> sent = exact.readValue(numbers, java.util.Map.class);
        TestApp.Res one = app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"delay_ms\": 3600000, \"payload\": " + numbers + "}");
        assertEquals(201, one.status(), one.toString());
        long single = one.body().get("id").asLong();
        long batched = app.call("POST", "/v1/jobs/batch", key, "{\"jobs\": [{\"type\": \"record\", \"delay_ms\": 3600000, \"payload\": "
                + numbers + "}]}").body().get("jobs").get(0).get("job").get("id").asLong();
        for (long id : List.of(single, batched)) {
            String stored = app.db.dsl().fetchValue("SELECT payload::text FROM jobs WHERE id = ?", id).toString();
            java.util.Map<?, ?> got = exact.readValue(stored, java.util.Map.class);
            for (Object k : sent.keySet()) {
                assertEquals(0, new java.math.BigDecimal(sent.get(k).toString()).compareTo(new java.math.BigDecimal(got.get(k).toString())),
                        k + ": sent " + sent.get(k) + ", stored " + got.get(k));
            }
        }
        // as written, scale included: a template's 1.50 and 100.0 stay so (jsonb keeps the scale), as a job's do
        for (String as : List.of("{\"p\": 1.50, \"q\": 100.0}")) {
            long j = app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"delay_ms\": 3600000, \"payload\": " + as + "}")
                    .body().get("id").asLong();
            assertEquals(as, app.db.dsl().fetchValue("SELECT payload::text FROM jobs WHERE id = ?", j).toString());
            assertEquals(201, app.call("PUT", "/v1/schedules/scaled", key, "{\"cron\": \"@yearly\", \"time_zone\": \"UTC\", "
                    + "\"paused\": true, \"job\": {\"type\": \"record\", \"payload\": " + as + "}}").status());
            assertEquals(as, app.db.dsl().fetchValue("SELECT job_payload::text FROM schedules WHERE name = 'scaled' AND tenant_id = ?",
                    tenant).toString());
            assertEquals(200, app.call("PATCH", "/v1/schedules/scaled", key, "{\"paused\": true}").status());
            assertEquals(as, app.db.dsl().fetchValue("SELECT job_payload::text FROM schedules WHERE name = 'scaled' AND tenant_id = ?",
                    tenant).toString(), "a PATCH rewrites no number");
        }
        assertEquals(201, app.call("PUT", "/v1/schedules/exact", key, "{\"cron\": \"@yearly\", \"time_zone\": \"UTC\", \"paused\": true, "
                + "\"job\": {\"type\": \"record\", \"payload\": " + numbers + "}}").status());
        String template = app.db.dsl().fetchValue("SELECT job_payload::text FROM schedules WHERE name = 'exact' AND tenant_id = ?",
                tenant).toString();
        java.util.Map<?, ?> stored = exact.readValue(template, java.util.Map.class);
        for (Object k : sent.keySet()) {
            assertEquals(0, new java.math.BigDecimal(sent.get(k).toString()).compareTo(new java.math.BigDecimal(stored.get(k).toString())),
                    "schedule template " + k + ": sent " + sent.get(k) + ", stored " + stored.get(k));
        }
        assertEquals(201, app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"job_key\": \"n1\", \"payload\": {\"a\": 0.1, \"b\": 1.50}}").status());
        // a replay of an identical request stays a replay; the same job_key with a payload that differs only beyond
        // a double's digits is a different request
        assertEquals(200, app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"job_key\": \"n1\", \"payload\": {\"b\": 1.5, \"a\": 0.1}}").status());
        app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"job_key\": \"n2\", \"payload\": {\"a\": 0.12345678901234567890123}}");
        app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"job_key\": \"n2\", \"payload\": {\"a\": 0.12345678901234567890124}}")
                .assertRefused(409, "job_key");
        assertEquals(201, app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"job_key\": \"n3\", \"payload\": {\"a\": 1E+400}}").status());
        assertEquals(200, app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"job_key\": \"n3\", \"payload\": {\"a\": 10e399}}").status(),
                "the same number written another way is the same request");
    }

    private static String status(String key, long id) {
        return app.call("GET", "/v1/jobs/" + id, key, null).body().get("status").asText();
    }
}

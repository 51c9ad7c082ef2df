package dev.fairq.api;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.schema.TenantLimit;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Admin auth, tenants and their audited limits, keys and revocation, admin job actions. */
class AdminApiTest extends AppTest {
    @Test
    void wrongOrMissingTokenIs401AndTheWrongKindIs403() {
        String key = app.newTenantKey(TestApp.uniqueTenant("auth"));
        TestApp.Res missing = app.call("GET", "/v1/admin/tenants", null, null);
        assertEquals(401, missing.status());
        assertTrue(missing.header("WWW-Authenticate").startsWith("Bearer"));
        assertEquals(401, app.call("GET", "/v1/admin/tenants", "wrong", null).status());
        assertEquals(403, app.call("GET", "/v1/admin/tenants", key, null).status());
        assertEquals(403, app.call("PUT", "/v1/admin/tenants/x", key, "{}").status());
        assertEquals(401, app.call("GET", "/v1/jobs", null, null).status());
        assertEquals(401, app.call("GET", "/v1/jobs", "fqk_unknown", null).status());
        assertEquals(403, app.call("GET", "/v1/jobs", TestApp.ADMIN_TOKEN, null).status());
        assertEquals(200, app.admin("GET", "/v1/admin/tenants", null).status());
    }

    /** The tenant list is paged by id: every tenant exactly once, in order, never all of them in one answer. */
    @Test
    void theTenantListIsPagedByIdEveryTenantOnce() {
        String prefix = TestApp.uniqueTenant("page");
        List<String> mine = new java.util.ArrayList<>();
        for (int i = 0; i < 5; i++) {
            mine.add(prefix + "-" + i);
            assertEquals(201, app.admin("PUT", "/v1/admin/tenants/" + prefix + "-" + i, "{}").status());
        }
        List<String> seen = new java.util.ArrayList<>();
        String after = null;
        int pages = 0;
        do {
            TestApp.Res r = app.admin("GET", "/v1/admin/tenants?limit=2" + (after == null ? "" : "&after=" + after), null);
            assertEquals(200, r.status(), r.toString());
            JsonNode tenants = r.body().get("tenants");
            assertTrue(tenants.size() <= 2, r.toString());
            for (JsonNode t : tenants) seen.add(t.get("id").asText());
            after = r.body().get("next").isNull() ? null : r.body().get("next").asText();
            if (after != null) assertEquals(tenants.get(tenants.size() - 1).get("id").asText(), after);
        } while (after != null && ++pages < 10_000);
        assertEquals(seen.stream().sorted().distinct().toList(), seen, "by id, each once");
        assertTrue(seen.containsAll(mine), seen.toString());
        assertEquals(seen, app.client(TestApp.ADMIN_TOKEN).tenants().stream().map(dev.fairq.client.Model.Tenant::id).toList(),
                "the Java client follows the pages");
        assertTrue(app.admin("GET", "/v1/admin/tenants", null).body().get("tenants").size() <= AdminTenantsResource.DEFAULT_TENANTS_PAGE);
        for (String bad : List.of("0", "1001", "abc", "-1")) {
            app.admin("GET", "/v1/admin/tenants?limit=" + bad, null).assertRefused(422, "limit", bad);
        }
    }

    @Test
    void putCreatesOrReplacesPatchChangesPartiallyAndEveryChangeIsAudited() {
        String t = TestApp.uniqueTenant("lim");
        TestApp.Res created = app.admin("PUT", "/v1/admin/tenants/" + t, "{\"weight\": 3, \"max_running\": 5}");
        assertEquals(201, created.status());
        assertEquals(3, created.body().get("weight").asInt());
        assertEquals(200, created.body().get("burst").asInt(), "defaults for the rest");
        TestApp.Res replaced = app.admin("PUT", "/v1/admin/tenants/" + t, "{\"weight\": 2}");
        assertEquals(200, replaced.status());
        assertEquals(20, replaced.body().get("max_running").asInt(), "replace: left-out fields back to defaults");

        List<Object> before = app.snapshot();
        TestApp.Res bad = app.admin("PATCH", "/v1/admin/tenants/" + t, "{\"weight\": 0, \"rate_per_second\": -1, \"colour\": \"red\"}");
        assertEquals(422, bad.status());
        assertEquals(3, bad.body().get("errors").size());
        assertEquals(422, app.admin("PUT", "/v1/admin/tenants/Not_Valid!", "{}").status());
        assertEquals(400, app.admin("PATCH", "/v1/admin/tenants/" + t, "{not json").status());
        assertEquals(404, app.admin("PATCH", "/v1/admin/tenants/" + TestApp.uniqueTenant("nobody"), "{\"weight\": 2}").status());
        assertEquals(before, app.snapshot());

        TestApp.Res patched = app.call(app.support.getLocalPort(), "PATCH", "/v1/admin/tenants/" + t, TestApp.ADMIN_TOKEN,
                "{\"max_running\": 7, \"webhook_allow\": [\"Hooks.Example.com\"]}");
        assertEquals(200, patched.status());
        assertEquals(7, patched.body().get("max_running").asInt());
        assertEquals(2, patched.body().get("weight").asInt(), "patch keeps the others");
        assertEquals("hooks.example.com", patched.body().get("webhook_allow").get(0).asText());

        JsonNode audit = app.admin("GET", "/v1/admin/audit?tenant=" + t, null).body().get("entries");
        assertEquals(3, audit.size());
        JsonNode last = audit.get(0);
        assertEquals("patch", last.get("action").asText());
        assertEquals("bootstrap", last.get("actor").asText(), "FAIRQ_ADMIN_TOKEN is the token named bootstrap");
        assertEquals(20, last.get("old_values").get("max_running").asInt());
        assertEquals(7, last.get("new_values").get("max_running").asInt());
        assertTrue(audit.get(2).get("old_values").isNull());
        assertEquals("create", audit.get(2).get("action").asText());
        assertTrue(last.get("changed_at").asText().endsWith("Z"));
    }

    /**
     * Two PUTs creating one tenant at once: one creates it (201, audited "create"), the other replaces it (200,
     * audited "replace" with the first one's limits as old values). Both had been 201 "create" with old values
     * null, so the first one's limits were overwritten without a trace. The other PUT is played by a
     * transaction that inserts the row and commits once the API's PUT waits on it.
     */
    @Test
    void twoPutsCreatingOneTenantAtOnceAreOneCreateAndOneReplace() throws Exception {
        String t = TestApp.uniqueTenant("race");
        try (java.sql.Connection c = java.sql.DriverManager.getConnection(app.db.jdbcUrl, app.db.user, app.db.password)) {
            c.setAutoCommit(false);
            try (var ps = c.prepareStatement("INSERT INTO tenants (id, weight) VALUES (?, 6)")) {
                ps.setString(1, t);
                ps.executeUpdate();
            }
            var put = java.util.concurrent.CompletableFuture.supplyAsync(
                    () -> app.admin("PUT", "/v1/admin/tenants/" + t, "{\"weight\": 7}"));
            await().atMost(Duration.ofSeconds(10)).until(() -> app.db.dsl().resultQuery(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO tenants%'")
                    .fetchOne(0, Long.class) > 0);
            c.commit();
            TestApp.Res r = put.get(10, java.util.concurrent.TimeUnit.SECONDS);
            assertEquals(200, r.status(), "the tenant existed by the time the PUT wrote it: " + r);
            assertEquals(7, r.body().get("weight").asInt());
        }
        JsonNode audit = app.admin("GET", "/v1/admin/audit?tenant=" + t, null).body().get("entries");
        assertEquals(1, audit.size(), audit.toString());
        assertEquals("replace", audit.get(0).get("action").asText(), audit.toString());
        assertEquals(6, audit.get(0).get("old_values").get("weight").asInt(), audit.toString());
        assertEquals(7, audit.get(0).get("new_values").get("weight").asInt(), audit.toString());
    }

    /**
     * PUT with If-None-Match: * creates only: a new tenant is 201 (audited "create"); an existing one is a 412 with the
     * error body, its limits and the audit untouched. Without it the PUT had replaced the tenant (200, "replace"):
     * the command line's "tenants set" overwrote a tenant another admin had just created. An etag is a 400.
     */
    @Test
    void aCreateOnlyPutOfAnExistingTenantIs412AndChangesNothing() {
        String t = TestApp.uniqueTenant("ifnone");
        java.util.Map<String, String> createOnly = java.util.Map.of("If-None-Match", "*");
        TestApp.Res created = app.call("PUT", "/v1/admin/tenants/" + t, TestApp.ADMIN_TOKEN, "{\"weight\": 6}", createOnly);
        assertEquals(201, created.status(), created.toString());
        assertEquals(6, created.body().get("weight").asInt());
        assertTrue(created.header("Location").endsWith("/v1/admin/tenants/" + t), created.toString());

        List<Object> before = app.snapshot();
        TestApp.Res again = app.call("PUT", "/v1/admin/tenants/" + t, TestApp.ADMIN_TOKEN, "{\"max_running\": 7}", createOnly);
        assertEquals(412, again.status(), again.toString());
        assertTrue(again.body().get("error").asText().contains("exists"), again.toString());
        TestApp.Res etag = app.call("PUT", "/v1/admin/tenants/" + t, TestApp.ADMIN_TOKEN, "{\"max_running\": 7}",
                java.util.Map.of("If-None-Match", "\"abc\""));
        assertEquals(400, etag.status(), etag.toString());
        assertTrue(etag.body().get("error").asText().contains("If-None-Match"), etag.toString());
        assertEquals(before, app.snapshot(), "the tenant row and the audit log unchanged");
        TestApp.Res stored = app.admin("GET", "/v1/admin/tenants/" + t, null);
        assertEquals(6, stored.body().get("weight").asInt(), stored.toString());
        assertEquals(TenantLimit.defaults().get("max_running"), stored.body().get("max_running").asInt(), stored.toString());
        JsonNode audit = app.admin("GET", "/v1/admin/audit?tenant=" + t, null).body().get("entries");
        assertEquals(1, audit.size(), audit.toString());
        assertEquals("create", audit.get(0).get("action").asText(), audit.toString());
    }

    /**
     * A create-only PUT racing another create is decided in its own transaction, not by a read before it: the PUT
     * waits on the other insert and, once that commits, answers 412 and leaves its limits (weight 6) as they are.
     */
    @Test
    void aCreateOnlyPutThatLosesARaceToAnotherCreateIs412() throws Exception {
        String t = TestApp.uniqueTenant("ifrace");
        try (java.sql.Connection c = java.sql.DriverManager.getConnection(app.db.jdbcUrl, app.db.user, app.db.password)) {
            c.setAutoCommit(false);
            try (var ps = c.prepareStatement("INSERT INTO tenants (id, weight) VALUES (?, 6)")) {
                ps.setString(1, t);
                ps.executeUpdate();
            }
            var put = java.util.concurrent.CompletableFuture.supplyAsync(() -> app.call("PUT", "/v1/admin/tenants/" + t,
                    TestApp.ADMIN_TOKEN, "{\"weight\": 7}", java.util.Map.of("If-None-Match", "*")));
            await().atMost(Duration.ofSeconds(10)).until(() -> app.db.dsl().resultQuery(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO tenants%'")
                    .fetchOne(0, Long.class) > 0);
            c.commit();
            TestApp.Res r = put.get(10, java.util.concurrent.TimeUnit.SECONDS);
            assertEquals(412, r.status(), "the tenant existed by the time the PUT wrote it: " + r);
        }
        assertEquals(6, app.admin("GET", "/v1/admin/tenants/" + t, null).body().get("weight").asInt());
        assertEquals(0, app.admin("GET", "/v1/admin/audit?tenant=" + t, null).body().get("entries").size());
    }

    /**
     * A reader of the newest entries (a SIEM polling the audit log, remembering the newest id it saw) misses none: an
     * entry's id is taken in commit order, so once an id is visible every smaller one is too. Ids had come from the
     * sequence at the insert, before the commit: a write that took id n and committed after one that took n + 1 was
     * never in the newest page that showed n + 1, nor in any page "newer than n + 1". The window between the insert and
     * the commit (a round trip, or the tenants file's whole seed) is widened here by a trigger that holds one tenant's
     * audit insert until the test lets go.
     */
    @Test
    void auditIdsFollowCommitOrderSoAReaderOfTheNewestMissesNone() throws Exception {
        String slow = TestApp.uniqueTenant("auslow"), fast = TestApp.uniqueTenant("aufast");
        assertEquals(201, app.admin("PUT", "/v1/admin/tenants/" + slow, "{}").status());
        assertEquals(201, app.admin("PUT", "/v1/admin/tenants/" + fast, "{}").status());
        long hold = 0x6661697271L; // the test's own advisory lock: no fairq lock has classid 0
        String fn = "hold_audit_" + slow.replace('-', '_');
        var sql = app.db.dsl();
        sql.execute("CREATE FUNCTION " + fn + "() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_advisory_xact_lock("
                + hold + "); RETURN NULL; END $$");
        sql.execute("CREATE TRIGGER " + fn + " AFTER INSERT ON tenant_audit FOR EACH ROW WHEN (NEW.tenant_id = '" + slow
                + "') EXECUTE FUNCTION " + fn + "()");
        String waiting = "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database "
                + "WHERE d.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted";
        try (java.sql.Connection holder = java.sql.DriverManager.getConnection(app.db.jdbcUrl, app.db.user, app.db.password);
             var st = holder.createStatement()) {
            st.execute("SELECT pg_advisory_lock(" + hold + ")");
            var slowPatch = java.util.concurrent.CompletableFuture.supplyAsync(
                    () -> app.admin("PATCH", "/v1/admin/tenants/" + slow, "{\"weight\": 2}"));
            await().atMost(Duration.ofSeconds(30)).until(() -> sql.resultQuery(waiting).fetchOne(0, Long.class) >= 1);
            var fastPatch = java.util.concurrent.CompletableFuture.supplyAsync(
                    () -> app.admin("PATCH", "/v1/admin/tenants/" + fast, "{\"weight\": 3}"));
            // the fast write either commits or waits for the slow one's commit
            await().atMost(Duration.ofSeconds(30)).until(() -> fastPatch.isDone() || sql.resultQuery(waiting).fetchOne(0, Long.class) >= 2);
            JsonNode seen = app.admin("GET", "/v1/admin/audit?limit=1000", null).body().get("entries");
            st.execute("SELECT pg_advisory_unlock(" + hold + ")");
            assertEquals(200, slowPatch.get(30, java.util.concurrent.TimeUnit.SECONDS).status());
            assertEquals(200, fastPatch.get(30, java.util.concurrent.TimeUnit.SECONDS).status());

            long newestSeen = seen.get(0).get("id").asLong();
            java.util.Set<Long> seenIds = new java.util.HashSet<>();
            for (JsonNode e : seen) seenIds.add(e.get("id").asLong());
            for (String t : List.of(slow, fast)) {
                JsonNode patch = app.admin("GET", "/v1/admin/audit?tenant=" + t, null).body().get("entries").get(0);
                assertEquals("patch", patch.get("action").asText(), patch.toString());
                long id = patch.get("id").asLong();
                assertTrue(id > newestSeen || seenIds.contains(id), t + "'s patch " + patch + " is older than the newest entry "
                        + newestSeen + " a reader saw before it, yet was not among what that reader saw: " + seen);
            }
        } finally {
            sql.execute("DROP TRIGGER IF EXISTS " + fn + " ON tenant_audit");
            sql.execute("DROP FUNCTION IF EXISTS " + fn + "()");
        }
    }

    /** A write that changes nothing is not a change: no audit row, and updated_at stays (it had moved). */
    @Test
    void aWriteThatChangesNothingLeavesUpdatedAtAndTheAuditAlone() {
        String t = TestApp.uniqueTenant("same");
        assertEquals(201, app.admin("PUT", "/v1/admin/tenants/" + t, "{\"max_running\": 5, \"concurrency_limits\": {\"b\": 1, \"a\": 2}}").status());
        String updated = app.admin("GET", "/v1/admin/tenants/" + t, null).body().get("updated_at").asText();
        List<Object> before = app.snapshot(t);
        for (String[] same : List.of(new String[]{"PATCH", "{}"}, new String[]{"PATCH", "{\"max_running\": 5}"},
                new String[]{"PATCH", "{\"concurrency_limits\": {\"a\": 2, \"b\": 1}, \"rate_per_second\": 100}"},
                new String[]{"PUT", "{\"max_running\": 5, \"concurrency_limits\": {\"a\": 2, \"b\": 1}}"})) {
            TestApp.Res r = app.admin(same[0], "/v1/admin/tenants/" + t, same[1]);
            assertEquals(200, r.status(), r.toString());
            assertEquals(updated, r.body().get("updated_at").asText(), same[0] + " " + same[1]);
        }
        assertEquals(before, app.snapshot(t), "nothing written");
        assertEquals(1, app.admin("GET", "/v1/admin/audit?tenant=" + t, null).body().get("entries").size());
        TestApp.Res changed = app.admin("PATCH", "/v1/admin/tenants/" + t, "{\"max_running\": 6}");
        assertTrue(changed.body().get("updated_at").asText().compareTo(updated) > 0, changed.toString());
        assertEquals(2, app.admin("GET", "/v1/admin/audit?tenant=" + t, null).body().get("entries").size());
    }

    /** api/README: "a GET's answer can be sent back": it carries created_at and updated_at, which had been 422s. */
    @Test
    void aGetsAnswerCanBeSentBackWithPutOrPatch() {
        String t = TestApp.uniqueTenant("back");
        assertEquals(201, app.admin("PUT", "/v1/admin/tenants/" + t, "{\"max_running\": 5}").status());
        com.fasterxml.jackson.databind.node.ObjectNode got = (com.fasterxml.jackson.databind.node.ObjectNode)
                app.admin("GET", "/v1/admin/tenants/" + t, null).body();
        assertTrue(got.has("created_at") && got.has("updated_at"), got.toString());
        TestApp.Res patched = app.admin("PATCH", "/v1/admin/tenants/" + t, got.put("weight", 4).toString());
        assertEquals(200, patched.status(), patched.toString());
        assertEquals(4, patched.body().get("weight").asInt());
        TestApp.Res put = app.admin("PUT", "/v1/admin/tenants/" + t, got.put("weight", 5).toString());
        assertEquals(200, put.status(), put.toString());
        assertEquals(5, put.body().get("weight").asInt());
        assertEquals(5, put.body().get("max_running").asInt(), "the answer's limits, sent back, are the limits");
        // still typed: not a time is a 422 naming it, and changes nothing
        List<Object> before = app.snapshot(t);
        app.admin("PATCH", "/v1/admin/tenants/" + t, "{\"weight\": 6, \"created_at\": 5}").assertRefused(422, "created_at", "");
        app.admin("PATCH", "/v1/admin/tenants/" + t, "{\"weight\": 6, \"updated_at\": \"yesterday\"}").assertRefused(422, "updated_at", "");
        assertEquals(before, app.snapshot(t));
    }

    @Test
    void webhookAllowEntriesAreValidatedAndABadOneIs422NamingIt() {
        String t = TestApp.uniqueTenant("hooks");
        app.admin("PUT", "/v1/admin/tenants/" + t, "{}");
        List<Object> before = app.snapshot();
        TestApp.Res bad = app.admin("PATCH", "/v1/admin/tenants/" + t,
                "{\"webhook_allow\": [\"hooks.acme.example\", \"127.0.0.1:99999\", \"localhost\", 5]}");
        assertEquals(422, bad.status());
        JsonNode errors = bad.body().get("errors");
        assertEquals(3, errors.size());
        assertEquals("webhook_allow[1]", errors.get(0).get("field").asText());
        assertTrue(errors.get(0).get("message").asText().startsWith("'127.0.0.1:99999': the port must be"), errors.toString());
        assertEquals("webhook_allow[2]", errors.get(1).get("field").asText());
        assertTrue(errors.get(1).get("message").asText().startsWith("'localhost' names loopback"), errors.toString());
        assertEquals("webhook_allow[3]", errors.get(2).get("field").asText());
        assertEquals(before, app.snapshot(), "nothing changed");

        TestApp.Res ok = app.admin("PATCH", "/v1/admin/tenants/" + t,
                "{\"webhook_allow\": [\"*.Acme.example:8443\", \"127.0.0.1:8080\", \"[::1]:8080\", \"10.0.0.0/8\"]}");
        assertEquals(200, ok.status());
        assertEquals("[\"*.acme.example:8443\",\"127.0.0.1:8080\",\"[::1]:8080\",\"10.0.0.0/8\"]",
                ok.body().get("webhook_allow").toString());

        // bounded like the key maps: a million entries had been taken, parsed at every http attempt
        java.util.function.IntFunction<String> allow = n -> java.util.stream.IntStream.range(0, n)
                .mapToObj(i -> "\"h" + i + ".acme.example\"").collect(java.util.stream.Collectors.joining(",", "{\"webhook_allow\": [", "]}"));
        List<Object> kept = app.snapshot();
        app.admin("PATCH", "/v1/admin/tenants/" + t, allow.apply(TenantLimit.MAX_ALLOW_LIST_ENTRIES + 1))
                .assertRefused(422, "webhook_allow");
        app.admin("PUT", "/v1/admin/tenants/" + TestApp.uniqueTenant("hooks"), allow.apply(TenantLimit.MAX_ALLOW_LIST_ENTRIES + 1))
                .assertRefused(422, "webhook_allow");
        assertEquals(kept, app.snapshot(), "nothing changed");
        TestApp.Res most = app.admin("PATCH", "/v1/admin/tenants/" + t, allow.apply(TenantLimit.MAX_ALLOW_LIST_ENTRIES));
        assertEquals(200, most.status(), most.toString());
        assertEquals(TenantLimit.MAX_ALLOW_LIST_ENTRIES, most.body().get("webhook_allow").size());
    }

    @Test
    void keysAreShownOnceAndRevocationTakesEffectAtOnce() {
        String t = TestApp.uniqueTenant("keys");
        app.admin("PUT", "/v1/admin/tenants/" + t, "{}");
        TestApp.Res k = app.admin("POST", "/v1/admin/tenants/" + t + "/keys", null);
        assertEquals(201, k.status());
        String key = k.body().get("key").asText();
        String keyId = k.body().get("key_id").asText();
        assertEquals(0, app.db.dsl().fetchCount(app.db.dsl().selectOne().from("api_keys").where("key_hash = ?", key)),
                "only the hash is stored");
        assertEquals(200, app.call("GET", "/v1/stats", key, null).status());
        TestApp.Res list = app.admin("GET", "/v1/admin/tenants/" + t + "/keys", null);
        assertTrue(!list.body().toString().contains(key), "a listing never shows the key");

        assertEquals(204, app.admin("DELETE", "/v1/admin/tenants/" + t + "/keys/" + keyId, null).status());
        assertEquals(401, app.call("GET", "/v1/stats", key, null).status());
        assertEquals(401, app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}}").status());
        assertEquals(404, app.admin("DELETE", "/v1/admin/tenants/" + t + "/keys/key_nope", null).status());
        assertEquals(404, app.admin("POST", "/v1/admin/tenants/" + TestApp.uniqueTenant("none") + "/keys", null).status());
    }

    @Test
    void adminListsRetriesAndDiscardsAnyTenantsJobs() {
        String t = TestApp.uniqueTenant("adm");
        String key = app.newTenantKey(t);
        long dead = app.call("POST", "/v1/jobs", key, "{\"type\": \"fail\", \"payload\": {}, \"max_attempts\": 1}").body().get("id").asLong();
        await().atMost(Duration.ofSeconds(20)).until(() ->
                app.call("GET", "/v1/jobs/" + dead, key, null).body().get("status").asText().equals("dead"));
        TestApp.Res list = app.admin("GET", "/v1/admin/jobs?tenant=" + t + "&status=dead", null);
        assertEquals(200, list.status());
        assertEquals(dead, list.body().get("jobs").get(0).get("id").asLong());
        assertEquals(422, app.admin("GET", "/v1/admin/jobs?status=nope", null).status());

        TestApp.Res retried = app.admin("POST", "/v1/admin/jobs/" + dead + "/retry", null);
        assertEquals(200, retried.status());
        assertEquals(0, retried.body().get("attempts").asInt());
        await().atMost(Duration.ofSeconds(20)).until(() ->
                app.call("GET", "/v1/jobs/" + dead, key, null).body().get("status").asText().equals("dead"));
        assertEquals(200, app.admin("POST", "/v1/admin/jobs/" + dead + "/discard", null).status());
        assertEquals(409, app.admin("POST", "/v1/admin/jobs/" + dead + "/discard", null).status());
        assertEquals(404, app.admin("POST", "/v1/admin/jobs/999999999/retry", null).status());
    }

    @Test
    void aLimitChangeTakesEffectWithoutARestart() {
        String t = TestApp.uniqueTenant("live");
        String key = app.newTenantKey(t);
        app.changeLimits(t, "{\"paused\": true}");
        long id = app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}}").body().get("id").asLong();
        assertEquals("paused", app.call("GET", "/v1/jobs/" + id + "/explain", key, null).body().get("reason").asText());
        // about a second here (re-read every 500 ms); the bound is loose so that a loaded machine cannot fail it
        assertEquals(200, app.admin("PATCH", "/v1/admin/tenants/" + t, "{\"paused\": false}").status());
        await().atMost(Duration.ofSeconds(20)).until(() ->
                app.call("GET", "/v1/jobs/" + id, key, null).body().get("status").asText().equals("succeeded"));
    }

    /** The worker registry: the server's own worker, live, with the types it has handlers for; admins only. */
    @Test
    void theWorkerRegistryListsWhatEachWorkerServes() {
        TestApp.Res r = app.admin("GET", "/v1/admin/workers", null);
        assertEquals(200, r.status(), r.toString());
        com.fasterxml.jackson.databind.JsonNode live = null;
        for (com.fasterxml.jackson.databind.JsonNode w : r.body().get("workers")) if (w.get("live").asBoolean()) live = w;
        assertTrue(live != null, r.body().toString());
        assertTrue(live.get("types").toString().contains("\"record\""), live.toString());
        assertTrue(live.get("queues").isNull(), "serves every queue: " + live);
        assertTrue(live.get("threads").asInt() >= 1);
        assertTrue(live.get("last_seen").asText().endsWith("Z"));
        String key = app.newTenantKey(TestApp.uniqueTenant("wrk"));
        assertEquals(403, app.call("GET", "/v1/admin/workers", key, null).status());
    }

    @Test
    void keyMapsAreValidatedAuditedAndAJobWaitingOnAFullKeyIsExplained() {
        String t = TestApp.uniqueTenant("keys");
        String key = app.newTenantKey(t);
        List<Object> before = app.snapshot();
        TestApp.Res bad = app.admin("PATCH", "/v1/admin/tenants/" + t,
                "{\"concurrency_limits\": {\"stripe-api\": 100001, \"ok\": 3}, \"key_weights\": [1]}");
        assertEquals(422, bad.status());
        JsonNode errors = bad.body().get("errors");
        java.util.Set<String> fields = new java.util.HashSet<>();
        errors.forEach(e -> fields.add(e.get("field").asText()));
        assertEquals(java.util.Set.of("concurrency_limits.stripe-api", "key_weights"), fields, errors.toString());
        assertEquals(422, app.admin("PATCH", "/v1/admin/tenants/" + t, "{\"key_weights\": {\"vip\": 0}}").status());
        assertEquals(422, app.admin("PATCH", "/v1/admin/tenants/" + t, "{\"concurrency_limits\": {\"a\": \"2\"}}").status());
        assertEquals(before, app.snapshot(), "nothing changed");

        TestApp.Res ok = app.admin("PATCH", "/v1/admin/tenants/" + t,
                "{\"concurrency_limits\": {\"stripe-api\": 0}, \"key_weights\": {\"vip\": 5}}");
        assertEquals(200, ok.status());
        assertEquals("{\"stripe-api\":0}", ok.body().get("concurrency_limits").toString());
        assertEquals("{\"vip\":5}", ok.body().get("key_weights").toString());
        JsonNode audit = app.admin("GET", "/v1/admin/audit?tenant=" + t, null).body().get("entries").get(0);
        assertEquals(0, audit.get("new_values").get("concurrency_limits").get("stripe-api").asInt());
        assertEquals(5, audit.get("new_values").get("key_weights").get("vip").asInt());

        assertEquals(422, app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}, \"concurrency_key\": \"\"}").status());
        assertEquals(422, app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}, \"fairness_key\": \""
                + "k".repeat(256) + "\"}").status());
        // a key with limit 0 holds its jobs: explain says so, and a job of another key of the tenant runs
        app.awaitSchedulerSaw(t);
        TestApp.Res held = app.call("POST", "/v1/jobs", key,
                "{\"type\": \"record\", \"payload\": {}, \"concurrency_key\": \"stripe-api\", \"fairness_key\": \"vip\"}");
        assertEquals(201, held.status());
        assertEquals("stripe-api", held.body().get("concurrency_key").asText());
        assertEquals("vip", held.body().get("fairness_key").asText());
        long heldId = held.body().get("id").asLong();
        long other = app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}, \"concurrency_key\": \"other\"}")
                .body().get("id").asLong();
        await().atMost(Duration.ofSeconds(20)).until(() ->
                app.call("GET", "/v1/jobs/" + other, key, null).body().get("status").asText().equals("succeeded"));
        JsonNode explained = app.call("GET", "/v1/jobs/" + heldId + "/explain", key, null).body();
        assertEquals("concurrency_key_full", explained.get("reason").asText(), explained.toString());
        assertEquals(0, explained.get("data").get("key_limit").asInt());
        assertEquals("pending", app.call("GET", "/v1/jobs/" + heldId, key, null).body().get("status").asText());
        assertTrue(app.call("GET", "/v1/dashboard", key, null).body().get("top_keys").isArray(), "the dashboard lists its keys");
        assertEquals(200, app.call("POST", "/v1/jobs/" + heldId + "/cancel", key, null).status()); // leave nothing waiting
    }
    /**
     * Every bad entry of a key map is named, also when several have the same message: Bean Validation folded
     * violations with the same message and path into one, so {"x": -1, "y": 1.5} named only x.
     */
    @Test
    void everyBadEntryOfAKeyMapIsNamed() {
        String t = TestApp.uniqueTenant("keymap");
        assertEquals(201, app.admin("PUT", "/v1/admin/tenants/" + t, "{}").status());
        List<Object> before = app.snapshot();
        TestApp.Res bad = app.admin("PATCH", "/v1/admin/tenants/" + t,
                "{\"concurrency_limits\": {\"x\": -1, \"ok\": 2, \"y\": 1.5, \"z\": \"3\"}, \"key_weights\": {\"a\": 0, \"b\": 1001}}");
        assertEquals(422, bad.status(), bad.toString());
        java.util.Set<String> fields = new java.util.HashSet<>();
        bad.body().get("errors").forEach(e -> fields.add(e.get("field").asText()));
        assertEquals(java.util.Set.of("concurrency_limits.x", "concurrency_limits.y", "concurrency_limits.z",
                "key_weights.a", "key_weights.b"), fields, bad.body().toString());
        assertEquals(before, app.snapshot(), "nothing changed");
    }

    /**
     * A job of the tenant served next (here the only one with work) waits for the workers, not for "other tenants'
     * turn", which explain had said whatever its position: the workers are busy with its own jobs.
     */
    @Test
    void theTenantServedNextIsToldItWaitsForWorkersNotOtherTenants() {
        String t = TestApp.uniqueTenant("next");
        String key = app.newTenantKey(t);
        app.awaitSchedulerSaw(t);
        // more than a worker that measured quick jobs elsewhere in the suite claims (its threads plus 128) and the
        // ready buffer holds: the last ones stay pending
        try {
            List<Long> ids = new java.util.ArrayList<>();
            String sleeper = "{\"type\": \"sleep\", \"payload\": {\"ms\": 60000}}";
            for (int b = 0; b < 3; b++) {
                TestApp.Res batch = app.call("POST", "/v1/jobs/batch", key,
                        "{\"jobs\": [" + String.join(", ", java.util.Collections.nCopies(100, sleeper)) + "]}");
                assertEquals(201, batch.status(), batch.toString());
                batch.body().get("jobs").forEach(j -> ids.add(j.get("job").get("id").asLong()));
            }
            long last = ids.get(ids.size() - 1);
            JsonNode why = await().atMost(Duration.ofSeconds(30)).until(
                    () -> app.call("GET", "/v1/jobs/" + last + "/explain", key, null).body(),
                    b -> b.get("reason").asText().equals("fair_share") && b.get("data").path("position").isInt());
            String message = why.get("message").asText();
            int position = why.get("data").get("position").asInt();
            long ahead = why.get("data").get("jobs_ahead_in_tenant").asLong();
            // alone in this class; in the whole suite another test's tenant may still have work and come first
            if (position == 1) {
                assertTrue(message.startsWith("the tenant is next in the fair order (position 1 of "), why.toString());
                assertTrue(ahead > 0 && message.endsWith(ahead + " jobs of its own ahead of this one"), why.toString());
                assertFalse(message.contains("other tenants"), why.toString());
            } else {
                assertTrue(message.startsWith("other tenants' turn") && message.endsWith("position " + position + " of "
                        + why.get("data").get("competing_tenants").asInt()), why.toString());
            }
        } finally { // every job of the tenant, whatever went wrong: sleeping ones hold the shared app's threads
            for (Long id : app.db.dsl().resultQuery("SELECT id FROM jobs WHERE tenant_id = ? AND status IN "
                    + "('pending', 'ready', 'running')", t).fetch(0, Long.class)) {
                app.call("POST", "/v1/jobs/" + id + "/cancel", key, null);
            }
        }
    }

    /** A closed key (limit 0) is what explain names even while the tenant is full: it still holds when the tenant frees up. */
    @Test
    void aClosedKeyIsNamedBeforeAFullTenant() {
        String t = TestApp.uniqueTenant("closed");
        String key = app.newTenantKey(t);
        assertEquals(200, app.admin("PATCH", "/v1/admin/tenants/" + t, "{\"max_running\": 1, \"concurrency_limits\": {\"closed\": 0}}").status());
        app.awaitSchedulerSaw(t);
        long sleeping = app.call("POST", "/v1/jobs", key, "{\"type\": \"sleep\", \"payload\": {\"ms\": 60000}}").body().get("id").asLong();
        await().atMost(Duration.ofSeconds(20)).until(() ->
                app.call("GET", "/v1/jobs/" + sleeping, key, null).body().get("status").asText().equals("running"));
        long held = app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}, \"concurrency_key\": \"closed\"}")
                .body().get("id").asLong();
        long other = app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}}").body().get("id").asLong();
        assertEquals("concurrency_key_full", app.call("GET", "/v1/jobs/" + held + "/explain", key, null).body().get("reason").asText());
        JsonNode full = app.call("GET", "/v1/jobs/" + other + "/explain", key, null).body();
        assertEquals("concurrency_full", full.get("reason").asText(), "a job without the key waits for the tenant");
        assertEquals("the tenant has 1 job running (and 0 admitted) of max_running 1", full.get("message").asText());
        for (long id : List.of(sleeping, held, other)) app.call("POST", "/v1/jobs/" + id + "/cancel", key, null);
    }
}

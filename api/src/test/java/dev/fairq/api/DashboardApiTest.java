package dev.fairq.api;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.schema.DashboardStore;
import org.jooq.DSLContext;
import org.jooq.Record;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The dashboard JSON over real HTTP: who may read it, isolation, the rollup against the jobs table. */
class DashboardApiTest extends AppTest {
    private String status(String key, long id) {
        return app.call("GET", "/v1/jobs/" + id, key, null).body().get("status").asText();
    }

    @Test
    void theRightCredentialOrNothing() {
        String key = app.newTenantKey(TestApp.uniqueTenant("dash-auth"));
        assertEquals(401, app.call("GET", "/v1/dashboard", null, null).status());
        assertEquals(401, app.call("GET", "/v1/dashboard", "fqk_not-a-key", null).status());
        assertEquals(403, app.call("GET", "/v1/dashboard", TestApp.ADMIN_TOKEN, null).status());
        assertEquals(401, app.call("GET", "/v1/admin/overview", null, null).status());
        assertEquals(403, app.call("GET", "/v1/admin/overview", key, null).status());
        assertEquals(200, app.call("GET", "/v1/admin/overview", TestApp.ADMIN_TOKEN, null).status());
        assertEquals(200, app.call("GET", "/v1/dashboard", key, null).status());
        // the pages themselves carry no data and need no credential; they load nothing from elsewhere
        TestApp.Res page = app.call("GET", "/dashboard", null, null);
        assertEquals(200, page.status());
        assertTrue(page.header("Content-Security-Policy").contains("default-src 'none'"));
        assertFalse(page.body().asText().contains("http://") || page.body().asText().contains("https://"));
        assertEquals(200, app.call("GET", "/dashboard/admin", null, null).status());
        assertEquals(200, app.call("GET", "/dashboard/static/dashboard.js", null, null).status());
        assertEquals(404, app.call("GET", "/dashboard/static/config.yml", null, null).status());
        assertTrue(app.call("GET", "/dashboard/static/..%2Fconfig.yml", null, null).status() >= 400);
    }

    @Test
    void aTenantsDashboardShowsOnlyItsOwnJobs() {
        String aId = TestApp.uniqueTenant("dash-a"), bId = TestApp.uniqueTenant("dash-b");
        String a = app.newTenantKey(aId), b = app.newTenantKey(bId);
        long pending = app.submit(b, "{\"type\": \"record\", \"payload\": {}, \"delay_ms\": 3600000}");
        long dead = app.submit(b, "{\"type\": \"fail\", \"payload\": {}, \"ordering_key\": \"acct-b-secret\"}");
        long ok = app.submit(b, "{\"type\": \"record\", \"payload\": {}}");
        await().atMost(Duration.ofSeconds(20)).until(() -> status(b, dead).equals("dead") && status(b, ok).equals("succeeded"));
        // the scheduler rolls up every 10 s; the test does not wait for it
        new DashboardStore().rollupMinutes(app.db.dsl(), 3);

        TestApp.Res resA = app.call("GET", "/v1/dashboard", a, null);
        assertEquals(200, resA.status());
        JsonNode da = resA.body();
        assertEquals(aId, da.get("tenant").asText());
        String textA = da.toString();
        assertFalse(textA.contains(bId), "A's dashboard names B: " + textA);
        assertFalse(textA.contains("acct-b-secret"));
        assertFalse(textA.contains("failing on purpose"));
        assertEquals(0, da.get("counts").get("pending").asLong());
        assertEquals(0, da.get("counts").get("dead").asLong());
        assertEquals(0, da.get("counts").get("succeeded_last_hour").asLong());
        assertEquals(0, da.get("dead_letters").size());
        assertEquals(0, da.get("blocked_keys").size());
        assertEquals(60, da.get("series").size());
        for (JsonNode p : da.get("series")) assertEquals(0, p.get("succeeded").asInt());

        // the server's own rollup may run beside the test's and write its older snapshot of the minute last: the next
        // run (10 s at most) counts it again, so roll up until the hour's counts are in (seen once under load)
        JsonNode db = await().atMost(Duration.ofSeconds(30)).until(() -> {
            new DashboardStore().rollupMinutes(app.db.dsl(), 3);
            return app.call("GET", "/v1/dashboard", b, null).body();
        }, d -> d.get("counts").get("succeeded_last_hour").asLong() == 1 && d.get("counts").get("dead_last_hour").asLong() == 1);
        assertEquals(bId, db.get("tenant").asText());
        assertEquals(1, db.get("counts").get("pending").asLong());
        assertEquals(1, db.get("counts").get("dead").asLong());
        assertEquals(1, db.get("counts").get("succeeded_last_hour").asLong());
        assertEquals(1, db.get("counts").get("dead_last_hour").asLong());
        assertEquals(dead, db.get("dead_letters").get(0).get("id").asLong());
        assertTrue(db.get("dead_letters").get(0).get("last_error").asText().endsWith("failing on purpose"));
        assertEquals("acct-b-secret", db.get("blocked_keys").get(0).get("ordering_key").asText());
        assertEquals(0.5, db.get("success_rate").asDouble(), 1e-9);
        assertTrue(db.get("oldest_pending_age_ms").asLong() >= 0);
        assertEquals(1, db.get("usage").get("queued").asLong());
        assertEquals(1000, db.get("limits").get("max_running").asInt());
        // a tenant cannot ask for another's dashboard: there is no parameter to ask with
        JsonNode viaParam = app.call("GET", "/v1/dashboard?tenant=" + bId, a, null).body();
        assertEquals(aId, viaParam.get("tenant").asText());
        assertEquals(pending, app.call("GET", "/v1/jobs?status=pending", b, null).body().get("jobs").get(0).get("id").asLong());

        // the admin sees both, in one table
        JsonNode overview = app.admin("GET", "/v1/admin/overview?search=" + bId, null).body();
        JsonNode rowB = null;
        for (JsonNode t : overview.get("tenants")) if (t.get("tenant").asText().equals(bId)) rowB = t;
        assertTrue(rowB != null);
        assertEquals(1, rowB.get("counts").get("pending").asLong());
        assertEquals(1, rowB.get("counts").get("dead").asLong());
        assertEquals(1, rowB.get("blocked_ordering_keys").asLong());
    }

    /** Running the rollup again (or twice at once) writes the same rows; the rows agree with the jobs table. */
    @Test
    void theRollupIsIdempotentAndMatchesTheJobsTable() {
        String id = TestApp.uniqueTenant("dash-roll");
        String key = app.newTenantKey(id);
        long[] ids = new long[9];
        for (int i = 0; i < 5; i++) ids[i] = app.submit(key, "{\"type\": \"record\", \"payload\": {}}");
        for (int i = 5; i < 7; i++) ids[i] = app.submit(key, "{\"type\": \"flaky\", \"payload\": {}}");
        for (int i = 7; i < 9; i++) ids[i] = app.submit(key, "{\"type\": \"fail\", \"payload\": {}}");
        app.submit(key, "{\"type\": \"record\", \"payload\": {}, \"delay_ms\": 3600000}");
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            for (long j : ids) if (!List.of("succeeded", "dead").contains(status(key, j))) return false;
            return true;
        });

        DashboardStore store = new DashboardStore();
        DSLContext dsl = app.db.dsl();
        // idempotent: running it again changes nothing (repeated if the minute turned meanwhile, since a new
        // minute legitimately adds a row)
        // The server's own rollup runs every 10 s beside these, counting only completions 2 s old (their commits may
        // lag): one that ran just after the jobs ended writes the minute without them, and the next one corrects it.
        // So the checks are retried until such a run is not in between; a rollup that is not idempotent or not exact
        // fails them every time.
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
            List<List<Object>> first, again;
            OffsetDateTime minute;
            do {
                minute = currentMinute(dsl);
                store.rollupMinutes(dsl, 5);
                first = rows(dsl, id);
                store.rollupMinutes(dsl, 5);
                store.rollupMinutes(dsl, 5);
                again = rows(dsl, id);
            } while (!minute.equals(currentMinute(dsl)));
            assertEquals(first, again, "a second run changed the rollup");

            Record sums = dsl.resultQuery("""
                    SELECT sum(started), sum(succeeded), sum(failed), sum(dead) FROM tenant_minute_stats WHERE tenant_id = ?""", id).fetchOne();
            Record truth = dsl.resultQuery("""
                    SELECT count(*) FILTER (WHERE started_at IS NOT NULL), count(*) FILTER (WHERE status = 'succeeded'),
                           count(*) FILTER (WHERE failed_at IS NOT NULL), count(*) FILTER (WHERE status = 'dead')
                    FROM jobs WHERE tenant_id = ?""", id).fetchOne();
            assertEquals(List.of(9L, 7L, 2L, 2L), List.of(truth.get(0, Long.class), truth.get(1, Long.class),
                    truth.get(2, Long.class), truth.get(3, Long.class)));
            for (int i = 0; i < 4; i++) assertEquals(truth.get(i, Long.class), sums.get(i, Long.class), "column " + i);
        });
        // the current minute's depth snapshot: the one delayed job, nothing ready or running
        Record depth = dsl.resultQuery("""
                SELECT pending, ready, running, oldest_pending_age_ms IS NOT NULL FROM tenant_minute_stats
                WHERE tenant_id = ? AND minute = date_trunc('minute', now())""", id).fetchOne();
        if (depth != null) { // null only if the minute turned between the rollup and this read
            assertEquals(1, depth.get(0, Integer.class));
            assertEquals(0, depth.get(1, Integer.class));
            assertEquals(0, depth.get(2, Integer.class));
            assertTrue(depth.get(3, Boolean.class));
        }

        // the endpoint reads the same numbers (rolled up again should the server's rollup have come in between)
        JsonNode d = await().atMost(Duration.ofSeconds(30)).until(() -> {
            store.rollupMinutes(dsl, 5);
            return app.call("GET", "/v1/dashboard", key, null).body();
        }, x -> x.get("counts").get("succeeded_last_hour").asLong() == 7);
        assertEquals(7, d.get("counts").get("succeeded_last_hour").asLong());
        assertEquals(2, d.get("counts").get("failed_last_hour").asLong());
        assertEquals(2, d.get("counts").get("dead_last_hour").asLong());
        long seriesSucceeded = 0;
        for (JsonNode p : d.get("series")) seriesSucceeded += p.get("succeeded").asLong();
        assertEquals(7, seriesSucceeded);
        assertEquals(7.0 / 11, d.get("success_rate").asDouble(), 1e-9);
        assertNull(d.get("running_jobs").get(0));
    }

    /**
     * The dashboard reads a list only when its head counted something for it: a running keyed job is in
     * running_jobs and top_keys with the counts that say so, and once it has ended both lists are empty again.
     */
    @Test
    void theListsFollowTheHeadsCounts() {
        String id = TestApp.uniqueTenant("dash-lists");
        String key = app.newTenantKey(id);
        long job = app.submit(key, "{\"type\": \"sleep\", \"payload\": {\"ms\": 600000}, \"concurrency_key\": \"stripe-api\"}");
        await().atMost(Duration.ofSeconds(20)).until(() -> status(key, job).equals("running"));

        JsonNode d = app.call("GET", "/v1/dashboard", key, null).body();
        assertEquals(1, d.get("counts").get("running").asLong());
        assertEquals(1, d.get("running_jobs").size());
        assertEquals(job, d.get("running_jobs").get(0).get("id").asLong());
        assertEquals(1, d.get("top_keys").size(), d.toString());
        assertEquals("stripe-api", d.get("top_keys").get(0).get("key").asText());
        assertEquals(1, d.get("top_keys").get(0).get("running").asLong());
        assertEquals(1, d.get("usage").get("running").asLong());

        assertEquals(202, app.call("POST", "/v1/jobs/" + job + "/cancel", key, null).status());
        await().atMost(Duration.ofSeconds(20)).until(() -> status(key, job).equals("cancelled"));
        JsonNode after = app.call("GET", "/v1/dashboard", key, null).body();
        assertEquals(0, after.get("counts").get("running").asLong());
        assertEquals(0, after.get("running_jobs").size());
        assertEquals(0, after.get("top_keys").size());
        assertEquals(0, after.get("schedules").size());
    }

    /**
     * GET /v1/stats reads its counts and the tenant's row in one statement: the same figures as the jobs table,
     * after completions both before and after the rollup ran, and the limits as stored.
     */
    @Test
    void statsStayExactAfterCompletions() {
        String id = TestApp.uniqueTenant("stats-exact");
        String key = app.newTenantKey(id);
        DSLContext dsl = app.db.dsl();
        long[] done = new long[6];
        for (int i = 0; i < 5; i++) done[i] = app.submit(key, "{\"type\": \"record\", \"payload\": {}}");
        done[5] = app.submit(key, "{\"type\": \"fail\", \"payload\": {}}");
        app.submit(key, "{\"type\": \"record\", \"payload\": {}, \"delay_ms\": 3600000}");
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            for (long j : done) if (!List.of("succeeded", "dead").contains(status(key, j))) return false;
            return true;
        });
        new DashboardStore().rollupMinutes(dsl, 6); // the completions are in the rollup now
        assertStatsMatchTheJobsTable(key, id, dsl, 5, 1);

        // more completions after the rollup: counted from the jobs table until the next one
        long[] more = new long[3];
        for (int i = 0; i < 3; i++) more[i] = app.submit(key, "{\"type\": \"record\", \"payload\": {}}");
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            for (long j : more) if (!status(key, j).equals("succeeded")) return false;
            return true;
        });
        assertStatsMatchTheJobsTable(key, id, dsl, 8, 1);
        new DashboardStore().rollupMinutes(dsl, 6);
        assertStatsMatchTheJobsTable(key, id, dsl, 8, 1);
    }

    private static void assertStatsMatchTheJobsTable(String key, String tenant, DSLContext dsl, long succeeded, long dead) {
        JsonNode s = app.call("GET", "/v1/stats", key, null).body();
        Record truth = dsl.resultQuery("""
                SELECT count(*) FILTER (WHERE status = 'pending'), count(*) FILTER (WHERE status = 'succeeded'),
                       count(*) FILTER (WHERE status = 'dead') FROM jobs WHERE tenant_id = ?""", tenant).fetchOne();
        assertEquals(succeeded, truth.get(1, Long.class));
        assertEquals(dead, truth.get(2, Long.class));
        assertEquals(tenant, s.get("tenant").asText());
        assertEquals(truth.get(0, Long.class), s.get("pending").asLong(), s.toString());
        assertEquals(succeeded, s.get("succeeded_last_5m").asLong(), s.toString());
        assertEquals(dead, s.get("dead_last_5m").asLong(), s.toString());
        assertEquals(dead, s.get("dead_total").asLong(), s.toString());
        assertEquals(0, s.get("running").asLong());
        assertTrue(s.get("oldest_pending_age_ms").asLong() >= 0);
        assertEquals(100000, s.get("limits").get("api_burst").asInt(), s.toString());
    }

    private static OffsetDateTime currentMinute(DSLContext dsl) {
        return dsl.resultQuery("SELECT date_trunc('minute', clock_timestamp())").fetchOne(0, OffsetDateTime.class);
    }

    private static List<List<Object>> rows(DSLContext dsl, String tenant) {
        return dsl.resultQuery("""
                SELECT minute, started, succeeded, failed, dead, pending, ready, running FROM tenant_minute_stats
                WHERE tenant_id = ? ORDER BY minute""", tenant).fetch().map(r -> java.util.Arrays.asList(r.intoArray()));
    }
}

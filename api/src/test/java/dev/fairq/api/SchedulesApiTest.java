package dev.fairq.api;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * /v1/schedules over real HTTP against the whole application (its scheduler fires on the real clock): the
 * walk of api/README.md from creating a schedule to seeing its job, the field errors, limits, isolation.
 */
class SchedulesApiTest extends AppTest {
    static final String NIGHTLY = """
            {"cron": "30 2 * * *", "time_zone": "Europe/Berlin",
             "job": {"type": "record", "payload": {"report": "nightly"}, "priority": 5}}""";

    @Test
    void createReadReplacePatchListAndDelete() {
        String key = app.newTenantKey(TestApp.uniqueTenant("sched"));
        TestApp.Res created = app.call("PUT", "/v1/schedules/nightly-report", key, NIGHTLY);
        assertEquals(201, created.status(), created.toString());
        assertTrue(created.header("Location").endsWith("/v1/schedules/nightly-report"));
        JsonNode s = created.body();
        assertEquals("nightly-report", s.get("name").asText());
        assertEquals("Europe/Berlin", s.get("time_zone").asText());
        assertEquals("skip", s.get("missed_runs").asText(), "defaults filled in");
        assertEquals("allow", s.get("overlap").asText());
        assertEquals(10, s.get("backfill_limit").asInt());
        assertEquals(5, s.get("job").get("priority").asInt());
        assertEquals("nightly", s.get("job").get("payload").get("report").asText());
        JsonNode next = s.get("next_fires");
        assertEquals(5, next.size());
        for (JsonNode n : next) {
            assertTrue(n.asText().endsWith("Z"), "UTC: " + n);
            int hour = Instant.parse(n.asText()).atZone(java.time.ZoneId.of("Europe/Berlin")).getHour();
            assertTrue(hour == 2 || hour == 3, "02:30 Berlin (03:30 on a spring-forward day): " + n);
        }
        assertTrue(s.get("last_fire").isNull());

        assertEquals(200, app.call("GET", "/v1/schedules/nightly-report", key, null).status());
        TestApp.Res replaced = app.call("PUT", "/v1/schedules/nightly-report", key,
                "{\"cron\": \"@daily\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\"}}");
        assertEquals(200, replaced.status());
        assertEquals("@daily", replaced.body().get("cron").asText());
        assertEquals(0, replaced.body().get("job").get("priority").asInt(), "replace: left-out fields back to defaults");

        TestApp.Res paused = app.call("PATCH", "/v1/schedules/nightly-report", key, "{\"paused\": true}");
        assertEquals(200, paused.status());
        assertTrue(paused.body().get("paused").asBoolean());
        assertEquals(0, paused.body().get("next_fires").size(), "paused: no next fires");
        assertEquals("@daily", paused.body().get("cron").asText(), "patch keeps the rest");

        app.call("PUT", "/v1/schedules/hourly", key, "{\"cron\": \"@hourly\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\"}}");
        TestApp.Res page1 = app.call("GET", "/v1/schedules?limit=1", key, null);
        assertEquals(List.of("hourly"), names(page1.body()));
        TestApp.Res page2 = app.call("GET", "/v1/schedules?limit=1&after=" + page1.body().get("next").asText(), key, null);
        assertEquals(List.of("nightly-report"), names(page2.body()));

        assertEquals(204, app.call("DELETE", "/v1/schedules/hourly", key, null).status());
        assertEquals(404, app.call("DELETE", "/v1/schedules/hourly", key, null).status());
        assertEquals(404, app.call("GET", "/v1/schedules/hourly", key, null).status());
    }

    private static List<String> names(JsonNode page) {
        List<String> out = new ArrayList<>();
        page.get("schedules").forEach(s -> out.add(s.get("name").asText()));
        return out;
    }

    /**
     * PUT with If-None-Match: * creates only: 201 for a new schedule, 412 for one that exists, with its row and its
     * jobs untouched (without the header the PUT had replaced it, as the command line's "schedules set" did to a
     * schedule created meanwhile). An etag is a 400.
     */
    @Test
    void aCreateOnlyPutOfAnExistingScheduleIs412AndChangesNothing() {
        String tenant = TestApp.uniqueTenant("schedifnone");
        String key = app.newTenantKey(tenant);
        java.util.Map<String, String> createOnly = java.util.Map.of("If-None-Match", "*");
        // no fire while the test runs (one could change the row between the two reads below)
        String later = "{\"cron\": \"30 2 * * *\", \"time_zone\": \"UTC\", \"start_at\": \"8000-01-01T00:00:00Z\", \"job\": {\"type\": \"record\"}}";
        TestApp.Res created = app.call("PUT", "/v1/schedules/nightly", key, later, createOnly);
        assertEquals(201, created.status(), created.toString());
        assertTrue(created.header("Location").endsWith("/v1/schedules/nightly"), created.toString());
        assertEquals("30 2 * * *", created.body().get("cron").asText());

        java.util.function.Supplier<List<Object>> state = () -> List.of(app.db.dsl().resultQuery(
                "SELECT (SELECT s::text FROM schedules s WHERE tenant_id = ? AND name = 'nightly'), (SELECT count(*) FROM jobs WHERE tenant_id = ?)",
                tenant, tenant).fetchOne().intoArray());
        List<Object> before = state.get();
        String other = "{\"cron\": \"@hourly\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\"}}";
        TestApp.Res again = app.call("PUT", "/v1/schedules/nightly", key, other, createOnly);
        assertEquals(412, again.status(), again.toString());
        assertTrue(again.body().get("error").asText().contains("exists"), again.toString());
        TestApp.Res etag = app.call("PUT", "/v1/schedules/nightly", key, other, java.util.Map.of("If-None-Match", "W/\"1\""));
        assertEquals(400, etag.status(), etag.toString());
        assertEquals(before, state.get(), "the schedule and its jobs unchanged");
        assertEquals("30 2 * * *", app.call("GET", "/v1/schedules/nightly", key, null).body().get("cron").asText());
    }

    /**
     * A create-only PUT racing another create is decided in its own transaction: it finds no schedule, waits on the
     * tenant row the other create holds, and once that commits its upsert would replace it: a 412 instead, and the
     * other create's schedule (@weekly, paused) stays as it was.
     */
    @Test
    void aCreateOnlyPutThatLosesARaceToAnotherCreateIs412() throws Exception {
        String tenant = TestApp.uniqueTenant("schedifrace");
        String key = app.newTenantKey(tenant);
        try (java.sql.Connection c = java.sql.DriverManager.getConnection(app.db.jdbcUrl, app.db.user, app.db.password)) {
            c.setAutoCommit(false);
            try (var lock = c.prepareStatement("SELECT 1 FROM tenants WHERE id = ? FOR NO KEY UPDATE");
                 var insert = c.prepareStatement("INSERT INTO schedules (tenant_id, name, cron, time_zone, job_type, paused) "
                         + "VALUES (?, 'raced', '@weekly', 'UTC', 'record', true)")) {
                lock.setString(1, tenant);
                lock.executeQuery().close();
                insert.setString(1, tenant);
                insert.executeUpdate();
            }
            var put = java.util.concurrent.CompletableFuture.supplyAsync(() -> app.call("PUT", "/v1/schedules/raced", key,
                    "{\"cron\": \"@daily\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\"}}",
                    java.util.Map.of("If-None-Match", "*")));
            await().atMost(Duration.ofSeconds(10)).until(() -> app.db.dsl().resultQuery(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FROM tenants%FOR NO KEY UPDATE%'")
                    .fetchOne(0, Long.class) > 0);
            c.commit();
            TestApp.Res r = put.get(10, java.util.concurrent.TimeUnit.SECONDS);
            assertEquals(412, r.status(), "the schedule existed by the time the PUT wrote it: " + r);
        }
        JsonNode stored = app.call("GET", "/v1/schedules/raced", key, null).body();
        assertEquals("@weekly", stored.get("cron").asText(), stored.toString());
        assertTrue(stored.get("paused").asBoolean(), stored.toString());
        assertEquals(204, app.call("DELETE", "/v1/schedules/raced", key, null).status());
    }

    @Test
    void anInvalidCronOrTimeZoneIsA422NamingTheFieldAndChangesNothing() {
        String tenant = TestApp.uniqueTenant("badsched");
        String key = app.newTenantKey(tenant);
        List<Object> before = app.snapshot(tenant); // its own jobs: another test's schedule may fire meanwhile
        long schedules = app.db.count("SELECT count(*) FROM schedules");
        TestApp.Res bad = app.call("PUT", "/v1/schedules/x", key,
                "{\"cron\": \"61 * * * *\", \"time_zone\": \"Europe/Berln\", \"job\": {\"type\": \"record\"}, \"overlap\": \"never\"}");
        assertEquals(422, bad.status());
        List<String> fields = new ArrayList<>();
        bad.body().get("errors").forEach(e -> fields.add(e.get("field").asText()));
        assertEquals(List.of("cron", "time_zone", "overlap"), fields);
        assertTrue(bad.body().get("errors").get(0).get("message").asText().contains("61"));
        assertTrue(bad.body().get("errors").get(1).get("message").asText().contains("IANA"));

        app.call("PUT", "/v1/schedules/x", key, "{\"cron\": \"@daily\", \"job\": {\"type\": \"record\"}}").assertRefused(422, "time_zone"); // no server default
        app.call("PUT", "/v1/schedules/x", key,
                "{\"cron\": \"@daily\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\", \"priorty\": 3}}").assertRefused(422, "job.priorty");
        assertEquals(422, app.call("PUT", "/v1/schedules/bad%20name", key, NIGHTLY).status());
        assertEquals(400, app.call("PUT", "/v1/schedules/x", key, "{nope").status());
        assertEquals(404, app.call("PATCH", "/v1/schedules/x", key, "{\"paused\": true}").status(),
                "PATCH of a schedule that does not exist");
        assertEquals(before, app.snapshot(tenant));
        assertEquals(schedules, app.db.count("SELECT count(*) FROM schedules"));

        // a tenant cannot make jobs that would pass for a schedule's
        app.call("POST", "/v1/jobs", key,
                "{\"type\": \"record\", \"payload\": {}, \"job_key\": \"schedule:x:2026-01-01T00:00:00Z\"}").assertRefused(422, "job_key");
    }

    /** A schedule's http template is checked as an http job's payload is: its jobs would all die at their first attempt. */
    @Test
    void anHttpTemplateWhosePayloadItsJobsWouldRefuseIsA422NamingTheField() {
        String key = app.newTenantKey(TestApp.uniqueTenant("hooksched"));
        long schedules = app.db.count("SELECT count(*) FROM schedules");
        app.call("PUT", "/v1/schedules/ping", key, "{\"cron\": \"@daily\", \"time_zone\": \"UTC\", \"job\": {\"type\": "
                + "\"http\", \"payload\": {\"url\": \"file:///etc/passwd\"}}}").assertRefused(422, "job.payload.url");
        app.call("PUT", "/v1/schedules/ping", key, "{\"cron\": \"@daily\", \"time_zone\": \"UTC\", \"job\": {\"type\": "
                + "\"http\"}}").assertRefused(422, "job.payload.url");
        assertEquals(schedules, app.db.count("SELECT count(*) FROM schedules"));

        assertEquals(201, app.call("PUT", "/v1/schedules/ping", key, "{\"cron\": \"@daily\", \"time_zone\": \"UTC\", "
                + "\"job\": {\"type\": \"http\", \"payload\": {\"url\": \"https://h.example/ping\"}}}").status());
        app.call("PATCH", "/v1/schedules/ping", key, "{\"job\": {\"payload\": {\"url\": \"gopher://h.example/\"}}}")
                .assertRefused(422, "job.payload.url");
    }

    /** Times PostgreSQL cannot store (years past 9999 or before 1) had answered 500 after the cron walk. */
    @Test
    void aStartOrEndOutsideTheStorableYearsIsA422NamingItAndChangesNothing() {
        String tenant = TestApp.uniqueTenant("farsched");
        String key = app.newTenantKey(tenant);
        List<Object> before = app.snapshot(tenant);
        long schedules = app.db.count("SELECT count(*) FROM schedules");
        for (String field : List.of("start_at", "end_at")) {
            for (String at : List.of("+300000-01-01T00:00:00Z", "+10000-01-01T00:00:00Z", "9999-12-31T23:59:00Z",
                    "+999999999-12-31T23:59:59Z", "0000-01-01T00:00:00Z", "-5000-01-01T00:00:00Z", "1969-12-31T23:59:59Z")) {
                app.call("PUT", "/v1/schedules/far", key, "{\"cron\": \"0 3 * * *\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\"}, \""
                        + field + "\": \"" + at + "\"}").assertRefused(422, field, at + " ");
            }
        }
        assertEquals(before, app.snapshot(tenant));
        assertEquals(schedules, app.db.count("SELECT count(*) FROM schedules"));
        // the bounds themselves are fine, and a PATCH is checked the same way
        assertEquals(201, app.call("PUT", "/v1/schedules/far", key, "{\"cron\": \"0 3 * * *\", \"time_zone\": \"UTC\", "
                + "\"job\": {\"type\": \"record\"}, \"start_at\": \"8999-12-31T00:00:00Z\", \"end_at\": \"9000-01-01T00:00:00Z\"}").status());
        app.call("PATCH", "/v1/schedules/far", key, "{\"start_at\": \"9999-12-31T23:59:00Z\"}").assertRefused(422, "start_at");
        assertEquals(200, app.call("PUT", "/v1/schedules/far", key, "{\"cron\": \"0 3 * * *\", \"time_zone\": \"UTC\", "
                + "\"job\": {\"type\": \"record\"}, \"start_at\": \"1970-01-01T00:00:00Z\"}").status());
    }
    /** A cron the schedules table cannot store (over 200 characters, a NUL) had passed cron-utils and answered 500. */
    @Test
    void aCronTheTableCannotStoreIsA422NamingIt() {
        String key = app.newTenantKey(TestApp.uniqueTenant("longcron"));
        long schedules = app.db.count("SELECT count(*) FROM schedules");
        StringBuilder minutes = new StringBuilder("0");
        for (int m = 1; m < 60; m++) minutes.append(',').append(m);
        StringBuilder hours = new StringBuilder("0");
        for (int h = 1; h < 24; h++) hours.append(',').append(h);
        StringBuilder days = new StringBuilder("1");
        for (int d = 2; d <= 31; d++) days.append(',').append(d);
        String tooLong = minutes + " " + hours + " " + days + " * *"; // a valid expression of 319 characters
        for (String cron : List.of(tooLong, "0 0 * * *\\u0000", "\\u00000 0 * * *", "0 0 * * *\\u0001")) {
            app.call("PUT", "/v1/schedules/c", key, "{\"cron\": \"" + cron + "\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\"}}")
                    .assertRefused(422, "cron", cron + " ");
        }
        assertEquals(schedules, app.db.count("SELECT count(*) FROM schedules"));
        assertEquals(201, app.call("PUT", "/v1/schedules/c", key,
                "{\"cron\": \"0\\t0\\t*\\t*\\t*\\n\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\"}}").status(),
                "tabs separate fields, a trailing newline is left out");
    }

    /** Vixie cron's names: a range from SUN is Sunday on (SUN-THU, a Sunday-to-Thursday week, had been a 422). */
    @Test
    void aDayOfWeekRangeFromSundayIsVixieCrons() {
        String key = app.newTenantKey(TestApp.uniqueTenant("sunsched"));
        for (String cron : List.of("0 9 * * SUN-THU", "0 9 * * sun-wed,THU")) {
            TestApp.Res put = app.call("PUT", "/v1/schedules/week", key,
                    "{\"cron\": \"" + cron + "\", \"time_zone\": \"Asia/Jerusalem\", \"job\": {\"type\": \"record\"}}");
            assertTrue(put.status() == 201 || put.status() == 200, cron + ": " + put);
            assertEquals(cron, put.body().get("cron").asText(), "stored as written");
            java.util.Set<java.time.DayOfWeek> days = java.util.EnumSet.noneOf(java.time.DayOfWeek.class);
            for (JsonNode n : put.body().get("next_fires")) {
                days.add(Instant.parse(n.asText()).atZone(java.time.ZoneId.of("Asia/Jerusalem")).getDayOfWeek());
            }
            java.util.Set<java.time.DayOfWeek> sunToThu = java.util.EnumSet.range(java.time.DayOfWeek.MONDAY, java.time.DayOfWeek.THURSDAY);
            sunToThu.add(java.time.DayOfWeek.SUNDAY);
            assertEquals(sunToThu, days, cron + ": five fires, one on each day Sunday to Thursday: " + put.body().get("next_fires"));
        }
        app.call("PUT", "/v1/schedules/week", key, "{\"cron\": \"0 9 * * SUN-FUN\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\"}}")
                .assertRefused(422, "cron");
    }

    /** timestamptz keeps microseconds: a start_at and end_at a nanosecond apart are one instant there (had been a 500). */
    @Test
    void aStartAndEndWithinOneMicrosecondAreA422() {
        String key = app.newTenantKey(TestApp.uniqueTenant("nanosched"));
        long schedules = app.db.count("SELECT count(*) FROM schedules");
        app.call("PUT", "/v1/schedules/nano", key, "{\"cron\": \"0 0 * * *\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\"}, "
                + "\"start_at\": \"2030-01-01T00:00:00.000000001Z\", \"end_at\": \"2030-01-01T00:00:00.000000002Z\"}").assertRefused(422, "end_at");
        assertEquals(schedules, app.db.count("SELECT count(*) FROM schedules"));
        TestApp.Res ok = app.call("PUT", "/v1/schedules/nano", key, "{\"cron\": \"0 0 * * *\", \"time_zone\": \"UTC\", "
                + "\"job\": {\"type\": \"record\"}, \"start_at\": \"2030-01-01T00:00:00.0000019Z\", \"end_at\": \"2030-01-01T00:00:00.000002Z\"}");
        assertEquals(201, ok.status(), ok.toString());
        assertEquals("2030-01-01T00:00:00.000001Z", ok.body().get("start_at").asText(), "stored as timestamptz keeps it");
    }

    @Test
    void limitsAreLiveAuditedAndEnforcedAndAdminsSeeEveryTenantsSchedules() {
        String tenant = TestApp.uniqueTenant("schedlim");
        String key = app.newTenantKey(tenant);
        String other = app.newTenantKey(TestApp.uniqueTenant("schedother"));
        TestApp.Res patched = app.admin("PATCH", "/v1/admin/tenants/" + tenant, "{\"max_schedules\": 1, \"min_schedule_interval_s\": 3600}");
        assertEquals(200, patched.status(), patched.toString());
        assertEquals(1, patched.body().get("max_schedules").asInt());
        JsonNode audit = app.admin("GET", "/v1/admin/audit?tenant=" + tenant, null).body().get("entries").get(0);
        assertEquals(3600, audit.get("new_values").get("min_schedule_interval_s").asInt());
        assertEquals(422, app.admin("PATCH", "/v1/admin/tenants/" + tenant, "{\"min_schedule_interval_s\": 59}").status());

        app.call("PUT", "/v1/schedules/often", key,
                "{\"cron\": \"*/5 * * * *\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\"}}").assertRefused(422, "cron");
        assertEquals(201, app.call("PUT", "/v1/schedules/one", key, NIGHTLY).status());
        TestApp.Res two = app.call("PUT", "/v1/schedules/two", key, NIGHTLY);
        assertEquals(409, two.status(), "max_schedules");
        assertTrue(two.body().get("error").asText().contains("max_schedules"));
        assertEquals(200, app.call("PUT", "/v1/schedules/one", key, NIGHTLY).status(), "replacing is not creating");
        // below what the tenant has, the refusal gives the count and the limit (it had given the limit as the count)
        assertEquals(200, app.admin("PATCH", "/v1/admin/tenants/" + tenant, "{\"max_schedules\": 0}").status());
        TestApp.Res three = app.call("PUT", "/v1/schedules/three", key, NIGHTLY);
        assertEquals(409, three.status());
        assertTrue(three.body().get("error").asText().contains("has 1 schedules and its max_schedules is 0"), three.toString());
        assertEquals("the tenant has 1 schedules, its max_schedules is 0", three.body().get("errors").get(0).get("message").asText());
        assertEquals(200, app.admin("PATCH", "/v1/admin/tenants/" + tenant, "{\"max_schedules\": 1}").status());

        // isolation: another tenant neither sees nor touches it
        assertEquals(404, app.call("GET", "/v1/schedules/one", other, null).status());
        assertEquals(404, app.call("POST", "/v1/schedules/one/trigger", other, null).status());
        assertEquals(0, app.call("GET", "/v1/schedules", other, null).body().get("schedules").size());
        // admins list any tenant's
        JsonNode listed = app.admin("GET", "/v1/admin/schedules?tenant=" + tenant, null).body().get("schedules");
        assertEquals(1, listed.size());
        assertEquals(tenant, listed.get(0).get("tenant").asText());
        assertEquals(200, app.admin("GET", "/v1/admin/schedules/" + tenant + "/one", null).status());
        assertEquals(403, app.call("GET", "/v1/admin/schedules", key, null).status());
        assertEquals(403, app.admin("GET", "/v1/schedules", null).status());
    }

    /** Creations at once are counted one after another: max_schedules 3 and 20 at once made 14 schedules. */
    @Test
    void concurrentCreationsStopAtMaxSchedules() throws Exception {
        String tenant = TestApp.uniqueTenant("schedrace");
        String key = app.newTenantKey(tenant);
        assertEquals(200, app.admin("PATCH", "/v1/admin/tenants/" + tenant, "{\"max_schedules\": 3}").status());
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(20);
        try {
            java.util.concurrent.CountDownLatch start = new java.util.concurrent.CountDownLatch(1);
            List<java.util.concurrent.Future<Integer>> puts = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                String name = "race-" + i;
                puts.add(pool.submit(() -> {
                    start.await();
                    return app.call("PUT", "/v1/schedules/" + name, key, NIGHTLY).status();
                }));
            }
            start.countDown();
            List<Integer> statuses = new ArrayList<>();
            for (java.util.concurrent.Future<Integer> f : puts) statuses.add(f.get());
            assertEquals(3, statuses.stream().filter(st -> st == 201).count(), statuses.toString());
            assertEquals(17, statuses.stream().filter(st -> st == 409).count(), statuses.toString());
        } finally {
            pool.shutdownNow();
        }
        assertEquals(3, app.call("GET", "/v1/schedules", key, null).body().get("schedules").size());
    }

    /**
     * A schedule that existed before an admin raised min_schedule_interval_s stays as it is, and its tenant can
     * still pause it or change its job: only a new cron or time zone is held to the limit (the PATCH had been a 422
     * on a cron it did not touch).
     */
    @Test
    void aScheduleBelowARaisedIntervalCanStillBePausedAndChanged() {
        String tenant = TestApp.uniqueTenant("schedraise");
        String key = app.newTenantKey(tenant);
        assertEquals(201, app.call("PUT", "/v1/schedules/often", key,
                "{\"cron\": \"*/5 * * * *\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\"}}").status());
        assertEquals(200, app.admin("PATCH", "/v1/admin/tenants/" + tenant, "{\"min_schedule_interval_s\": 3600}").status());

        TestApp.Res paused = app.call("PATCH", "/v1/schedules/often", key, "{\"paused\": true}");
        assertEquals(200, paused.status(), paused.toString());
        assertTrue(paused.body().get("paused").asBoolean());
        TestApp.Res changed = app.call("PATCH", "/v1/schedules/often", key, "{\"job\": {\"priority\": 3}, \"paused\": false}");
        assertEquals(200, changed.status(), changed.toString());
        assertEquals(3, changed.body().get("job").get("priority").asInt());
        assertEquals(200, app.call("PUT", "/v1/schedules/often", key,
                "{\"cron\": \"*/5 * * * *\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\"}}").status(),
                "the same cron and zone, replaced");
        // a new cron or zone is checked
        app.call("PATCH", "/v1/schedules/often", key, "{\"cron\": \"*/10 * * * *\"}").assertRefused(422, "cron");
        app.call("PATCH", "/v1/schedules/often", key, "{\"time_zone\": \"Europe/Berlin\"}").assertRefused(422, "cron");
        assertEquals("*/5 * * * *", app.call("GET", "/v1/schedules/often", key, null).body().get("cron").asText());
    }

    @Test
    void aTriggeredJobRunsNowAndExplainNamesItsSchedule() {
        String key = app.newTenantKey(TestApp.uniqueTenant("trig"));
        app.call("PUT", "/v1/schedules/report", key, NIGHTLY);
        TestApp.Res t = app.call("POST", "/v1/schedules/report/trigger", key, null);
        assertEquals(201, t.status(), t.toString());
        String jobKey = t.body().get("job_key").asText();
        assertTrue(jobKey.startsWith("schedule:report:trigger-"), jobKey);
        long id = t.body().get("id").asLong();
        JsonNode explain = app.call("GET", "/v1/jobs/" + id + "/explain", key, null).body();
        assertEquals("report", explain.get("data").get("schedule").asText());
        assertTrue(explain.get("message").asText().contains("schedule 'report'"), explain.toString());
        await().atMost(Duration.ofSeconds(30)).until(() ->
                "succeeded".equals(app.call("GET", "/v1/jobs/" + id, key, null).body().get("status").asText()));
        assertEquals(404, app.call("POST", "/v1/schedules/nope/trigger", key, null).status());
    }

    /** The PATCHes are JSON merge patches (RFC 7386), and take its media type as well as application/json. */
    @Test
    void patchesTakeTheMergePatchMediaType() throws Exception {
        String tenant = TestApp.uniqueTenant("merge");
        String key = app.newTenantKey(tenant);
        assertEquals(201, app.call("PUT", "/v1/schedules/m", key, NIGHTLY).status());
        java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
        for (String[] call : List.of(new String[] {"/v1/schedules/m", key, "{\"paused\": true}"},
                new String[] {"/v1/admin/tenants/" + tenant, TestApp.ADMIN_TOKEN, "{\"weight\": 3}"})) {
            java.net.http.HttpResponse<String> r = http.send(java.net.http.HttpRequest.newBuilder(
                            java.net.URI.create("http://127.0.0.1:" + app.support.getLocalPort() + call[0]))
                    .method("PATCH", java.net.http.HttpRequest.BodyPublishers.ofString(call[2]))
                    .header("Content-Type", "application/merge-patch+json").header("Authorization", "Bearer " + call[1]).build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r.statusCode(), call[0] + " " + r.body());
        }
        assertTrue(app.call("GET", "/v1/schedules/m", key, null).body().get("paused").asBoolean());
        assertEquals(3, app.admin("GET", "/v1/admin/tenants/" + tenant, null).body().get("weight").asInt());
    }

    /** A template carries timeout_ms and payload_version like a job: checked, shown, and on the jobs it fires. */
    @Test
    void aTemplatesTimeLimitAndPayloadVersionReachItsJobs() {
        String key = app.newTenantKey(TestApp.uniqueTenant("tmpl"));
        String head = "{\"cron\": \"@yearly\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\", ";
        TestApp.Res created = app.call("PUT", "/v1/schedules/limited", key, head + "\"timeout_ms\": 1500, \"payload_version\": 2}}");
        assertEquals(201, created.status(), created.toString());
        assertEquals(1500, created.body().get("job").get("timeout_ms").asInt(), created.toString());
        assertEquals(2, created.body().get("job").get("payload_version").asInt(), created.toString());
        TestApp.Res fired = app.call("POST", "/v1/schedules/limited/trigger", key, null);
        assertEquals(201, fired.status(), fired.toString());
        assertEquals(1500, fired.body().get("timeout_ms").asInt(), fired.toString());
        assertEquals(2, fired.body().get("payload_version").asInt(), fired.toString());

        TestApp.Res reset = app.call("PATCH", "/v1/schedules/limited", key, "{\"job\": {\"timeout_ms\": null}}");
        assertEquals(200, reset.status(), reset.toString());
        assertTrue(reset.body().get("job").get("timeout_ms").isNull(), reset.toString());
        assertEquals(2, reset.body().get("job").get("payload_version").asInt(), "the rest stays");

        app.call("PUT", "/v1/schedules/limited", key, head + "\"timeout_ms\": 0}}").assertRefused(422, "job.timeout_ms");
        app.call("PUT", "/v1/schedules/limited", key, head + "\"timeout_ms\": \"1500\"}}").assertRefused(422, "job.timeout_ms");
        app.call("PUT", "/v1/schedules/limited", key, head + "\"payload_version\": 0}}").assertRefused(422, "job.payload_version");
        assertTrue(app.call("GET", "/v1/schedules/limited", key, null).body().get("job").get("timeout_ms").isNull(),
                "a refused PUT changed nothing");
    }

    /** The README's walk: a schedule every minute, its first fire's job, explain, the dashboard and /metrics. */
    @Test
    void aScheduleFiresItsJobAtTheNextMinuteAndTheTenantSeesIt() {
        String key = app.newTenantKey(TestApp.uniqueTenant("fire"));
        TestApp.Res put = app.call("PUT", "/v1/schedules/every-minute", key,
                "{\"cron\": \"* * * * *\", \"time_zone\": \"America/New_York\", \"job\": {\"type\": \"record\", \"payload\": {\"n\": 1}}}");
        assertEquals(201, put.status());
        try {
            firesAndIsSeen(key, put);
        } finally {
            // it fires every minute for as long as the JVM runs: a job appearing at a minute's turn in another test's
            // global snapshot ("a bad request changed nothing") failed that test at random
            assertEquals(204, app.call("DELETE", "/v1/schedules/every-minute", key, null).status());
        }
    }

    private void firesAndIsSeen(String key, TestApp.Res put) {
        String firstFire = put.body().get("next_fires").get(0).asText();
        String expectedKey = "schedule:every-minute:" + firstFire;
        // the job exists up to 30 s before its instant and runs at it: at most a minute and a bit from now
        JsonNode[] job = new JsonNode[1];
        await().atMost(Duration.ofSeconds(100)).pollInterval(Duration.ofMillis(500)).until(() -> {
            for (JsonNode j : app.call("GET", "/v1/jobs?limit=10", key, null).body().get("jobs")) {
                if (j.get("job_key").asText().equals(expectedKey) && j.get("status").asText().equals("succeeded")) {
                    job[0] = j;
                    return true;
                }
            }
            return false;
        });
        assertTrue(!Instant.parse(job[0].get("started_at").asText()).isBefore(Instant.parse(firstFire)),
                "not started before its instant");
        JsonNode explain = app.call("GET", "/v1/jobs/" + job[0].get("id").asLong() + "/explain", key, null).body();
        assertEquals("every-minute", explain.get("data").get("schedule").asText());
        assertEquals(firstFire, explain.get("data").get("fire_at").asText());

        JsonNode s = app.call("GET", "/v1/schedules/every-minute", key, null).body();
        JsonNode last = s.get("last_fire");
        assertNotNull(last);
        assertTrue(!last.isNull(), s.toString());
        assertEquals(job[0].get("id").asLong(), last.get("job_id").asLong(), s.toString());
        assertEquals("succeeded", last.get("job_status").asText());
        JsonNode dash = app.call("GET", "/v1/dashboard", key, null).body().get("schedules");
        assertEquals("every-minute", dash.get(0).get("name").asText());
        String metrics = app.adminPort("/metrics").body().asText();
        assertTrue(metrics.contains("fairq_schedule_fires_total"), "metrics count fires");
        assertTrue(metrics.contains("fairq_schedule_fire_lag_seconds"), "and their lag");
    }
}

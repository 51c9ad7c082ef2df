package dev.fairq.api;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The eight inputs that answered 500 (issue 13), and their neighbours: each is a 422 naming the field at fault,
 * and nothing is stored. NUL is refused wherever PostgreSQL cannot store it (text, jsonb); control characters
 * in keys and names.
 */
class BadInputTest extends AppTest {
    static String key;
    static String tenant;

    @BeforeAll
    static void start() throws Exception {
        tenant = TestApp.uniqueTenant("bad");
        key = app.newTenantKey(tenant);
    }

    /** One request that must be a 422 naming {@code field}, with nothing changed. */
    private static void refused(String method, String path, String token, String body, String field) {
        List<Object> before = app.snapshot(tenant);
        TestApp.Res r = app.call(method, path, token, body);
        assertEquals(422, r.status(), method + " " + path + " " + body + " -> " + r);
        assertEquals(field, r.body().get("errors").get(0).get("field").asText(), r.toString());
        assertEquals(before, app.snapshot(tenant), "nothing stored");
    }

    /**
     * A control character encoded in the path: Jetty refuses the suspicious ones itself (400, before fairq sees the
     * request: %00 among them); ParameterGuard answers 422 naming the parameter for the rest. Either way nothing is stored.
     */
    private static void refusedInPath(String method, String path, String token, String body, String field) {
        List<Object> before = app.snapshot(tenant);
        TestApp.Res r = app.call(method, path, token, body);
        assertTrue(r.status() == 400 || r.status() == 422, method + " " + path + " -> " + r);
        if (r.status() == 422) assertEquals(field, r.body().get("errors").get(0).get("field").asText(), r.toString());
        assertEquals(before, app.snapshot(tenant), "nothing stored");
    }

    private static String job(String fields) {
        return "{\"type\": \"record\", \"payload\": {}" + (fields.isEmpty() ? "" : ", " + fields) + "}";
    }

    @Test
    void theEightFormer500sAre422sNamingTheField() {
        refused("POST", "/v1/jobs", key, job("\"run_at\": \"0000-01-01T00:00:00Z\""), "run_at");
        refused("POST", "/v1/jobs", key, job("\"run_at\": \"+275760-09-13T00:00:00Z\""), "run_at");
        refused("POST", "/v1/jobs", key, job("\"job_key\": \"a\\u0000b\""), "job_key");
        refused("POST", "/v1/jobs", key, job("\"ordering_key\": \"k\\u0000\""), "ordering_key");
        refused("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {\"a\": [1, {\"s\": \"x\\u0000y\"}]}}", "payload.a[1].s");
        refused("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {\"k\\u0000\": 1}}", "payload");
        refused("POST", "/v1/jobs/batch", key, "{\"jobs\": [" + job("") + ", " + job("\"ordering_key\": \"\\u0000\"") + "]}",
                "jobs[1].ordering_key");
        refused("GET", "/v1/jobs?queue=%00", key, null, "queue");
    }

    @Test
    void controlCharactersInKeysNamesAndParametersAreRefused() {
        refused("POST", "/v1/jobs", key, job("\"job_key\": \"line\\nbreak\""), "job_key");
        refused("POST", "/v1/jobs", key, job("\"ordering_key\": \"bell\\u0007\""), "ordering_key");
        refused("POST", "/v1/jobs", key, job("\"queue\": \"q\\u0001\""), "queue");
        refused("POST", "/v1/jobs", key, "{\"type\": \"t\\u0000\", \"payload\": {}}", "type");
        refused("GET", "/v1/jobs?ordering_key=a%01b", key, null, "ordering_key");
        refused("GET", "/v1/jobs?type=%00&status=pending", key, null, "type");
        String schedule = "{\"cron\": \"* * * * *\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\", \"payload\": {}}}";
        refusedInPath("PUT", "/v1/schedules/n%00", key, schedule, "name");
        refusedInPath("PUT", "/v1/schedules/n%01", key, schedule, "name");
        refusedInPath("GET", "/v1/jobs/1%0a", key, null, "id");
        refused("PUT", "/v1/schedules/nightly", key, "{\"cron\": \"* * * * *\", \"time_zone\": \"UTC\", "
                + "\"job\": {\"type\": \"record\", \"payload\": {\"s\": \"\\u0000\"}}}", "job.payload.s");
        refusedInPath("GET", "/v1/admin/tenants/a%00", TestApp.ADMIN_TOKEN, null, "id");
        refusedInPath("PATCH", "/v1/admin/tenants/a%07", TestApp.ADMIN_TOKEN, "{\"weight\": 2}", "id");
        refused("GET", "/v1/admin/audit?tenant=%00", TestApp.ADMIN_TOKEN, null, "tenant");
        refused("GET", "/v1/admin/overview?search=%00", TestApp.ADMIN_TOKEN, null, "search");
    }

    @Test
    void runAtIsBoundedLikeDelayMsAYearEitherWay() {
        OffsetDateTime now = OffsetDateTime.now(ZoneOffset.UTC);
        refused("POST", "/v1/jobs", key, job("\"run_at\": \"" + now.plusDays(367) + "\""), "run_at");
        refused("POST", "/v1/jobs", key, job("\"run_at\": \"" + now.minusDays(367) + "\""), "run_at");
        assertEquals(201, app.call("POST", "/v1/jobs", key, job("\"run_at\": \"" + now.plusDays(360) + "\"")).status());
        assertEquals(201, app.call("POST", "/v1/jobs", key, job("\"run_at\": \"" + now.minusDays(360) + "\"")).status());
        // a backslash followed by u0000 is an ordinary string: stored as sent
        TestApp.Res ok = app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {\"s\": \"\\\\u0000\"}}");
        assertEquals(201, ok.status(), ok.toString());
        assertEquals("\\u0000", ok.body().get("payload").get("s").asText());
    }
    /**
     * A lone surrogate (the JSON escape \\ud800 without its pair) is no character: it had been stored as '?', so
     * distinct keys merged, and a repeat of the same job_key answered 500. Now a 422 naming the field, anywhere in
     * a body, every time; a pair (an emoji) is one character and is stored as sent.
     */
    @Test
    void unpairedSurrogatesAreA422NamingTheFieldEveryTime() {
        for (int i = 0; i < 2; i++) refused("POST", "/v1/jobs", key, job("\"job_key\": \"repro\\ud800\""), "job_key");
        refused("POST", "/v1/jobs", key, job("\"fairness_key\": \"\\udc00\""), "fairness_key");
        refused("POST", "/v1/jobs", key, job("\"concurrency_key\": \"x\\ud800y\""), "concurrency_key");
        refused("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {\"a\": [1, {\"s\": \"x\\ud800\"}]}}", "payload.a[1].s");
        refused("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {\"k\\udfff\": 1}}", "payload");
        refused("POST", "/v1/jobs/batch", key, "{\"jobs\": [" + job("") + ", " + job("\"job_key\": \"b\\ud800\"") + "]}",
                "jobs[1].job_key");
        refused("PATCH", "/v1/admin/tenants/" + tenant, TestApp.ADMIN_TOKEN, "{\"key_weights\": {\"a\\ud800\": 2}}", "key_weights");
        refused("PUT", "/v1/schedules/s", key, "{\"cron\": \"@daily\", \"time_zone\": \"UTC\", "
                + "\"job\": {\"type\": \"record\", \"payload\": {\"s\": \"\\ud800\"}}}", "job.payload.s");

        TestApp.Res emoji = app.call("POST", "/v1/jobs", key, job("\"job_key\": \"e\\ud83d\\ude00\""));
        assertEquals(201, emoji.status(), emoji.toString());
        assertEquals("e\ud83d\ude00", emoji.body().get("job_key").asText());
        TestApp.Res again = app.call("POST", "/v1/jobs", key, job("\"job_key\": \"e\ud83d\ude00\"")); // raw UTF-8 this time
        assertEquals(200, again.status(), again.toString());
        assertEquals(emoji.body().get("id").asLong(), again.body().get("id").asLong());

        // a key's 255 characters are characters, as PostgreSQL counts them: 255 emoji fit, 256 do not
        String e255 = "\ud83d\ude00".repeat(255);
        TestApp.Res long255 = app.call("POST", "/v1/jobs", key, job("\"ordering_key\": \"" + e255 + "\""));
        assertEquals(201, long255.status(), long255.toString());
        assertEquals(e255, long255.body().get("ordering_key").asText());
        refused("POST", "/v1/jobs", key, job("\"ordering_key\": \"" + e255 + "\ud83d\ude00\""), "ordering_key");
    }

    /** One JSON object per body: content after it, or a field given twice (which would silently win), is a 400. */
    @Test
    void trailingContentAndDuplicateFieldsAreRefused() {
        List<Object> before = app.snapshot(tenant);
        TestApp.Res trailing = app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}} {\"x\": 1}");
        assertEquals(400, trailing.status(), trailing.toString());
        assertTrue(trailing.body().get("error").asText().contains("after the JSON object"), trailing.toString());
        assertEquals(400, app.call("PUT", "/v1/schedules/s", key, "{\"cron\": \"@daily\", \"time_zone\": \"UTC\", "
                + "\"job\": {\"type\": \"record\"}}]").status());
        TestApp.Res twice = app.call("POST", "/v1/jobs/batch", key, "{\"jobs\": [" + job("") + ", "
                + "{\"type\": \"record\", \"payload\": {}, \"priority\": 1, \"priority\": 100}]}");
        assertEquals(400, twice.status(), twice.toString());
        assertEquals("jobs[1].priority", twice.body().get("errors").get(0).get("field").asText(), twice.toString());
        TestApp.Res limit = app.admin("PATCH", "/v1/admin/tenants/" + tenant, "{\"weight\": 2, \"weight\": 3}");
        assertEquals(400, limit.status(), limit.toString());
        assertEquals("weight", limit.body().get("errors").get(0).get("field").asText(), limit.toString());
        assertEquals(before, app.snapshot(tenant), "nothing stored");
    }

    /**
     * A body that is not UTF-8 is a 400 (it had been stored with U+FFFD for the bytes at fault); one far past any
     * limit is a 413 before it is parsed, and so is a string past Jackson's own bound (20,000,000 characters).
     */
    @Test
    void bodiesThatAreNotUtf8OrAreTooLargeAreRefused() {
        List<Object> before = app.snapshot(tenant);
        byte[] latin1 = job("\"job_key\": \"caf\u00e9\"").getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
        for (String path : List.of("/v1/jobs", "/v1/schedules/s")) {
            TestApp.Res r = app.callBytes(path.equals("/v1/jobs") ? "POST" : "PUT", path, key, latin1);
            assertEquals(400, r.status(), path + " " + r);
            assertTrue(r.body().get("error").asText().contains("not UTF-8"), r.toString());
        }
        // 30 MB in one string: over the body cap of the test's configuration? Then 413 either way, never a 400 or 500
        TestApp.Res big = app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": \"" + "x".repeat(30_000_000) + "\"}");
        assertEquals(413, big.status(), big.toString().substring(0, Math.min(300, big.toString().length())));
        // a schedule's body is held to the same cap (it had been read whole and parsed: a 400)
        String over = "{\"cron\": \"@daily\", \"job\": {\"type\": \"record\", \"payload\": \"" + "x".repeat(10_000_000) + "\"}}";
        for (String method : List.of("PUT", "PATCH")) {
            TestApp.Res r = app.call(method, "/v1/schedules/s", key, over);
            assertEquals(413, r.status(), method + " " + r.toString().substring(0, Math.min(300, r.toString().length())));
            assertTrue(r.body().get("error").asText().contains("the request body is over"), r.toString());
        }
        assertEquals(404, app.call("GET", "/v1/schedules/s", key, null).status(), "no schedule written");
        assertEquals(before, app.snapshot(tenant), "nothing stored");
    }

    /**
     * A body sent with Content-Encoding: gzip is inflated by Jetty as it is read; bytes that are not gzip had answered
     * 500 (a job, a schedule, a tenant's limits). Now a 400 saying so, nothing stored; a real gzip body still works.
     */
    @Test
    void aBodyThatIsNotTheGzipItClaimsIsA400() throws Exception {
        List<Object> before = app.snapshot(tenant);
        byte[] plain = job("\"job_key\": \"gz\"").getBytes(java.nio.charset.StandardCharsets.UTF_8);
        String schedule = "{\"cron\": \"@daily\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\"}}";
        for (String[] call : List.of(new String[]{"POST", "/v1/jobs", key}, new String[]{"PUT", "/v1/schedules/gz", key},
                new String[]{"PATCH", "/v1/admin/tenants/" + tenant, TestApp.ADMIN_TOKEN})) {
            byte[] body = call[1].startsWith("/v1/schedules") ? schedule.getBytes(java.nio.charset.StandardCharsets.UTF_8) : plain;
            java.net.http.HttpResponse<String> r = gzipped(call[0], call[1], call[2], body);
            assertEquals(400, r.statusCode(), call[0] + " " + call[1] + " -> " + r.body());
            assertTrue(r.body().contains("not valid gzip"), r.body());
        }
        assertEquals(before, app.snapshot(tenant), "nothing stored");
        java.io.ByteArrayOutputStream zipped = new java.io.ByteArrayOutputStream();
        try (java.util.zip.GZIPOutputStream gz = new java.util.zip.GZIPOutputStream(zipped)) {
            gz.write(plain);
        }
        java.net.http.HttpResponse<String> ok = gzipped("POST", "/v1/jobs", key, zipped.toByteArray());
        assertEquals(201, ok.statusCode(), ok.body());
    }

    private static java.net.http.HttpResponse<String> gzipped(String method, String path, String token, byte[] body) throws Exception {
        return java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest.newBuilder(
                        java.net.URI.create("http://127.0.0.1:" + app.support.getLocalPort() + path))
                .method(method, java.net.http.HttpRequest.BodyPublishers.ofByteArray(body))
                .header("Content-Type", "application/json").header("Content-Encoding", "gzip")
                .header("Authorization", "Bearer " + token).build(), java.net.http.HttpResponse.BodyHandlers.ofString());
    }

    /** A schedule's body is read as strictly as a job's: no coercion, the same words for a wrong type. */
    @Test
    void scheduleBodiesAreNotCoerced() {
        String head = "{\"cron\": \"@daily\", \"time_zone\": \"UTC\", ";
        refused("PUT", "/v1/schedules/s", key, head + "\"job\": {\"type\": \"record\", \"priority\": \"5\"}}", "job.priority");
        refused("PUT", "/v1/schedules/s", key, head + "\"job\": {\"type\": \"record\", \"priority\": 1.5}}", "job.priority");
        refused("PUT", "/v1/schedules/s", key, head + "\"job\": {\"type\": \"record\", \"max_attempts\": \"7\"}}", "job.max_attempts");
        refused("PUT", "/v1/schedules/s", key, head + "\"job\": {\"type\": \"record\", \"queue\": 5}}", "job.queue");
        refused("PUT", "/v1/schedules/s", key, head + "\"job\": {\"type\": \"record\"}, \"backfill_limit\": \"5\"}", "backfill_limit");
        refused("PUT", "/v1/schedules/s", key, head + "\"job\": {\"type\": \"record\"}, \"paused\": \"true\"}", "paused");
        refused("PUT", "/v1/schedules/s", key, head + "\"job\": \"record\"}", "job");
        TestApp.Res range = app.call("PUT", "/v1/schedules/s", key, head + "\"job\": {\"type\": \"record\", \"priority\": 3000000000}}");
        range.assertRefused(422, "job.priority");
        // a whole number too large for the field's type is told the field's range, as a job body's field is
        assertEquals("must be between -100 and 100", range.body().get("errors").get(0).get("message").asText(), range.toString());
        Map<String, String> ranges = Map.of(
                "\"job\": {\"type\": \"record\", \"priority\": -3000000000}}", "must be between -100 and 100",
                "\"job\": {\"type\": \"record\", \"max_attempts\": 99999999999999999999}}", "must be between 1 and 1000",
                "\"job\": {\"type\": \"record\", \"timeout_ms\": 99999999999999999999}}", "must be a whole number of milliseconds between 1 and 86400000 (24 h)",
                "\"job\": {\"type\": \"record\", \"payload_version\": 3000000000}}", "must be between 1 and 1000000",
                "\"job\": {\"type\": \"record\"}, \"backfill_limit\": 3000000000}", "must be between 1 and 1000");
        for (Map.Entry<String, String> c : ranges.entrySet()) {
            TestApp.Res res = app.call("PUT", "/v1/schedules/s", key, head + c.getKey());
            assertEquals(422, res.status(), res.toString());
            assertEquals(c.getValue(), res.body().get("errors").get(0).get("message").asText(), res.toString());
        }
        TestApp.Res r = app.call("PUT", "/v1/schedules/s", key, head + "\"job\": {\"type\": \"record\", \"priority\": \"5\"}}");
        assertEquals("must be a whole number", r.body().get("errors").get(0).get("message").asText(), r.toString());
        assertEquals(201, app.call("PUT", "/v1/schedules/s", key, head + "\"job\": {\"type\": \"record\", \"priority\": 5}, "
                + "\"backfill_limit\": 5, \"paused\": true}").status());
        refused("PATCH", "/v1/schedules/s", key, "{\"paused\": \"false\"}", "paused");
        refused("PATCH", "/v1/schedules/s", key, "{\"job\": {\"priority\": 2.0}}", "job.priority");
        assertTrue(app.call("GET", "/v1/schedules/s", key, null).body().get("paused").asBoolean(), "the refused PATCH changed nothing");
        assertEquals(204, app.call("DELETE", "/v1/schedules/s", key, null).status());
    }

    /**
     * Numbers PostgreSQL cannot store (1e200000 overflows numeric: it had answered 500) or would give back longer
     * than a JSON reader takes (1e1000 comes back as 1,001 digits) are a 422 naming the field; 1e400 is stored.
     * Nesting past Jackson's depth, or a 1,200-digit literal, is a 400 (malformed), not a 413.
     */
    @Test
    void numbersPostgresqlCannotGiveBackReadablyAreRefused() {
        for (String n : List.of("1e200000", "-1e200000", "1e-20000", "1e1000", "1e-999")) {
            refused("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {\"a\": [" + n + "]}}", "payload.a[0]");
        }
        refused("POST", "/v1/jobs/batch", key, "{\"jobs\": [" + job("") + ", {\"type\": \"record\", \"payload\": 1e1000}]}",
                "jobs[1].payload");
        refused("PUT", "/v1/schedules/s", key, "{\"cron\": \"@daily\", \"time_zone\": \"UTC\", "
                + "\"job\": {\"type\": \"record\", \"payload\": {\"a\": 1e200000}}}", "job.payload.a");
        List<Object> before = app.snapshot(tenant);
        assertEquals(400, app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": " + "[".repeat(1100)
                + "]".repeat(1100) + "}").status());
        assertEquals(400, app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": " + "9".repeat(1200) + "}").status());
        assertEquals(before, app.snapshot(tenant), "nothing stored");
        TestApp.Res ok = app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {\"a\": 1e400}, \"delay_ms\": 3600000}");
        assertEquals(201, ok.status(), ok.toString());
    }

    /** A filter no queue, type or tenant can match, or a parameter given twice, is a 422 naming it, not an empty page. */
    @Test
    void filtersKeepTheirPatternsAndParametersComeOnce() {
        refused("GET", "/v1/jobs?queue=bad%20queue", key, null, "queue");
        refused("GET", "/v1/jobs?type=BAD!", key, null, "type");
        refused("GET", "/v1/jobs?limit=1&limit=2", key, null, "limit");
        refused("GET", "/v1/admin/jobs?tenant=BAD!", TestApp.ADMIN_TOKEN, null, "tenant");
        refused("GET", "/v1/admin/audit?tenant=Nope", TestApp.ADMIN_TOKEN, null, "tenant");
        refused("GET", "/v1/admin/schedules?tenant=..", TestApp.ADMIN_TOKEN, null, "tenant");
        // an ordering key longer than any job can have (255 characters; an emoji counts one)
        refused("GET", "/v1/jobs?ordering_key=" + "k".repeat(256), key, null, "ordering_key");
        refused("GET", "/v1/admin/jobs?ordering_key=" + "k".repeat(256), TestApp.ADMIN_TOKEN, null, "ordering_key");
        assertEquals(200, app.call("GET", "/v1/jobs?ordering_key=" + "%F0%9F%98%80".repeat(255), key, null).status(), "255 emoji fit");
        TestApp.Res r = app.call("GET", "/v1/jobs?queue=bad%20queue", key, null);
        assertEquals(dev.fairq.schema.JobRequest.NAME_RULE, r.body().get("errors").get(0).get("message").asText(), r.toString());
        for (String ok : List.of("/v1/jobs?queue=default&type=record", "/v1/jobs?queue=&status=", "/v1/jobs?limit=5")) {
            assertEquals(200, app.call("GET", ok, key, null).status(), ok);
        }
        assertEquals(200, app.admin("GET", "/v1/admin/jobs?tenant=" + tenant, null).status());
        assertEquals(200, app.call("GET", "/v1/jobs?queue=%20", key, null).status(), "a blank filter is no filter");
        assertEquals(200, app.call("GET", "/v1/jobs?_=1&_=2", key, null).status(), "a parameter fairq does not read is ignored");
    }

    /** Every paged list reads limit and after one way: out of range or not a whole number is a 422 naming it. */
    @Test
    void pagingParametersAreCheckedAlike() {
        for (String path : List.of("/v1/jobs", "/v1/admin/jobs", "/v1/admin/audit")) {
            String token = path.startsWith("/v1/admin") ? TestApp.ADMIN_TOKEN : key;
            for (String bad : List.of("0", "-1", "x", "1.5", "100000")) refused("GET", path + "?limit=" + bad, token, null, "limit");
            for (String bad : List.of("-1", "x", "1.5", "99999999999999999999")) refused("GET", path + "?after=" + bad, token, null, "after");
            assertEquals(200, app.call("GET", path + "?limit=1&after=0", token, null).status(), path);
            assertEquals(200, app.call("GET", path + "?limit=&after=", token, null).status(), path + ": blank is left out");
        }
        TestApp.Res both = app.call("GET", "/v1/jobs?limit=0&after=-1&status=nope", key, null);
        assertEquals(3, both.body().get("errors").size(), "all three named at once: " + both);
        for (String bad : List.of("0", "501", "x")) refused("GET", "/v1/admin/overview?limit=" + bad, TestApp.ADMIN_TOKEN, null, "limit");
    }

    /**
     * The lists paged by name take as after only what their next can be: a tenant id, a schedule name, or
     * tenant:name. after=BAD had answered the admin's first page of tenants (it sorts before 'a') and
     * after=bad%20x a tenant's empty schedule list, as if either were a place in the list.
     */
    @Test
    void listsPagedByNameRefuseAnAfterTheirNextCannotBe() {
        for (String bad : List.of("BAD", "a%20b", "-x", "x".repeat(64))) {
            refused("GET", "/v1/admin/tenants?after=" + bad, TestApp.ADMIN_TOKEN, null, "after");
        }
        for (String bad : List.of("bad%20x", "%21%21", "_x")) refused("GET", "/v1/schedules?after=" + bad, key, null, "after");
        for (String bad : List.of("nocolon", ":name", "BAD:name", tenant + ":bad%20x", tenant + ":")) {
            refused("GET", "/v1/admin/schedules?after=" + bad, TestApp.ADMIN_TOKEN, null, "after");
        }
        TestApp.Res both = app.admin("GET", "/v1/admin/tenants?limit=0&after=BAD", null);
        assertEquals(2, both.body().get("errors").size(), "both named at once: " + both);
        // what a next can be still pages, past the end too
        assertEquals(200, app.admin("GET", "/v1/admin/tenants?limit=1&after=" + tenant, null).status());
        assertEquals(200, app.admin("GET", "/v1/admin/tenants?after=zzz", null).status());
        assertEquals(200, app.call("GET", "/v1/schedules?after=zz.z-9", key, null).status());
        assertEquals(200, app.admin("GET", "/v1/admin/schedules?after=" + tenant + ":nightly", null).status());
    }

    /** A tenant body may repeat the path's id (a GET's answer sent back), never name another tenant. */
    /**
     * Jersey's own refusals (no such route, a method the route lacks, a media type it does not take or give) answer
     * in the documented error shape too: they had answered Dropwizard's {"code", "message"}, which has no "error".
     */
    @Test
    void jerseysOwnRefusalsAnswerInTheErrorShape() throws Exception {
        jerseyRefusal("GET", "/v1/no-such-route", null, null, 404);
        jerseyRefusal("GET", "/v1/jobs/1/no-such-route", null, null, 404);
        TestApp.Res notAllowed = jerseyRefusal("DELETE", "/v1/jobs", null, null, 405);
        assertTrue(notAllowed.header("Allow") != null && notAllowed.header("Allow").contains("POST"), notAllowed.toString());
        jerseyRefusal("POST", "/v1/jobs", "text/plain", null, 415);
        jerseyRefusal("GET", "/v1/jobs", null, "text/html", 406);
    }

    /**
     * What Jetty refuses itself, before Jersey sees the request, came back as an HTML page: a malformed or ambiguous
     * URI, headers over the limit, a path the admin port does not have. Sent over a raw socket, since Java's HTTP
     * client will not send such a URI.
     */
    @Test
    void jettysOwnRefusalsAnswerInTheErrorShape() throws Exception {
        int api = app.support.getLocalPort(), admin = app.support.getAdminPort();
        List<Object> before = app.snapshot(tenant);
        jettyRefusal(api, "GET /v1/jobs/%zz HTTP/1.1", "", 400, "HTTP 400 Bad Request: " + JsonErrorHandlers.UNREADABLE);
        jettyRefusal(api, "GET /v1/jobs/..%2f..%2fadmin HTTP/1.1", "", 400, "HTTP 400 Bad Request: Ambiguous URI path separator");
        jettyRefusal(api, "POST /v1/%2e%2e/jobs HTTP/1.1", "Content-Type: application/json\r\nContent-Length: 2\r\n", 400,
                "HTTP 400 Bad Request: Ambiguous URI path segment");
        // whatever the client accepts: the HTML it asks for would not be what the API's contract describes
        jettyRefusal(api, "GET /v1/jobs/%zz HTTP/1.1", "Accept: text/html\r\n", 400, "HTTP 400 Bad Request: " + JsonErrorHandlers.UNREADABLE);
        jettyRefusal(api, "GET /v1/jobs HTTP/1.1", "X-Big: " + "a".repeat(20_000) + "\r\n", 431, "HTTP 431 Request Header Fields Too Large");
        jettyRefusal(admin, "GET /no-such-path HTTP/1.1", "", 404, "HTTP 404 Not Found");
        assertEquals(before, app.snapshot(tenant), "nothing stored");
    }

    private static void jettyRefusal(int port, String requestLine, String headers, int status, String error) throws Exception {
        String response;
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", port)) {
            socket.setSoTimeout(10_000);
            socket.getOutputStream().write((requestLine + "\r\nHost: 127.0.0.1\r\n" + headers + "Connection: close\r\n\r\n"
                    + (requestLine.startsWith("POST") ? "{}" : "")).getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
            response = new String(socket.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        }
        int split = response.indexOf("\r\n\r\n");
        assertTrue(split > 0, requestLine + " -> " + response);
        String head = response.substring(0, split), body = response.substring(split + 4);
        assertTrue(head.startsWith("HTTP/1.1 " + status + " "), requestLine + " -> " + head);
        assertTrue(head.toLowerCase(java.util.Locale.ROOT).contains("\r\ncontent-type: application/json"), requestLine + " -> " + head);
        assertEquals(error, TestApp.JSON.readTree(body).path("error").asText(), requestLine + " -> " + body);
    }

    private TestApp.Res jerseyRefusal(String method, String path, String contentType, String accept, int status) throws Exception {
        java.net.http.HttpRequest.Builder b = java.net.http.HttpRequest.newBuilder(
                        java.net.URI.create("http://127.0.0.1:" + app.support.getLocalPort() + path))
                .method(method, contentType == null ? java.net.http.HttpRequest.BodyPublishers.noBody()
                        : java.net.http.HttpRequest.BodyPublishers.ofString("{\"type\": \"record\"}"))
                .header("Authorization", "Bearer " + key);
        if (contentType != null) b.header("Content-Type", contentType);
        if (accept != null) b.header("Accept", accept);
        java.net.http.HttpResponse<String> r = app.http.send(b.build(), java.net.http.HttpResponse.BodyHandlers.ofString());
        TestApp.Res res = new TestApp.Res(r.statusCode(), r.headers(), TestApp.JSON.readTree(r.body()));
        assertEquals(status, res.status(), method + " " + path + ": " + res);
        assertTrue(res.header("Content-Type").startsWith("application/json"), res.toString());
        assertTrue(res.body().path("error").isTextual() && !res.body().has("code"), method + " " + path + ": " + res);
        return res;
    }

    @Test
    void aTenantBodyNamingAnotherTenantIsRefused() {
        refused("PATCH", "/v1/admin/tenants/" + tenant, TestApp.ADMIN_TOKEN, "{\"id\": \"other\", \"weight\": 2}", "id");
        refused("PUT", "/v1/admin/tenants/" + tenant, TestApp.ADMIN_TOKEN, "{\"id\": \"other\"}", "id");
        refused("PATCH", "/v1/admin/tenants/" + tenant, TestApp.ADMIN_TOKEN, "{\"id\": 5}", "id");
        TestApp.Res same = app.admin("PATCH", "/v1/admin/tenants/" + tenant, "{\"id\": \"" + tenant + "\", \"weight\": 1}");
        assertEquals(200, same.status(), same.toString());
    }
}

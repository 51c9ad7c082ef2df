package dev.fairq.api;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;

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
}

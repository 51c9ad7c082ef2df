package dev.fairq.api;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** Tenant A cannot read, list, cancel, retry, explain or count tenant B's jobs. */
class TenantIsolationTest extends AppTest {
    @Test
    void aTenantSeesOnlyItsOwnJobs() {
        String a = app.newTenantKey(TestApp.uniqueTenant("iso-a"));
        String b = app.newTenantKey(TestApp.uniqueTenant("iso-b"));
        long pending = app.call("POST", "/v1/jobs", b, "{\"type\": \"record\", \"payload\": {}, \"delay_ms\": 3600000}").body().get("id").asLong();
        long dead = app.call("POST", "/v1/jobs", b, "{\"type\": \"fail\", \"payload\": {}}").body().get("id").asLong();
        await().atMost(Duration.ofSeconds(20)).until(() ->
                app.call("GET", "/v1/jobs/" + dead, b, null).body().get("status").asText().equals("dead"));

        List<Object> before = app.snapshot();
        for (long id : new long[]{pending, dead}) {
            assertEquals(404, app.call("GET", "/v1/jobs/" + id, a, null).status());
            assertEquals(404, app.call("GET", "/v1/jobs/" + id + "/explain", a, null).status());
        }
        assertEquals(404, app.call("POST", "/v1/jobs/" + pending + "/cancel", a, null).status());
        assertEquals(404, app.call("POST", "/v1/jobs/" + dead + "/retry", a, null).status());
        assertEquals(0, app.call("GET", "/v1/jobs", a, null).body().get("jobs").size());
        assertEquals(0, app.call("GET", "/v1/jobs?status=dead", a, null).body().get("jobs").size());
        TestApp.Res statsA = app.call("GET", "/v1/stats", a, null);
        assertEquals(0, statsA.body().get("pending").asInt());
        assertEquals(0, statsA.body().get("dead_total").asInt());
        assertEquals(before, app.snapshot());

        // B still has both, unchanged
        assertEquals("pending", app.call("GET", "/v1/jobs/" + pending, b, null).body().get("status").asText());
        assertEquals(2, app.call("GET", "/v1/jobs", b, null).body().get("jobs").size());
        assertEquals(1, app.call("GET", "/v1/stats", b, null).body().get("pending").asInt());
        // the same job_key in two tenants is two jobs
        assertEquals(201, app.call("POST", "/v1/jobs", a, "{\"type\": \"record\", \"payload\": {}, \"job_key\": \"same\"}").status());
        assertEquals(201, app.call("POST", "/v1/jobs", b, "{\"type\": \"record\", \"payload\": {}, \"job_key\": \"same\"}").status());
    }
}

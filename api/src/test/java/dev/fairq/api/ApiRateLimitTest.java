package dev.fairq.api;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The per-tenant API request limit (api_rate_per_second, api_burst): a 429 with Retry-After past it, per tenant. */
class ApiRateLimitTest extends AppTest {
    /** A tenant whose bucket holds {@code burst} requests and refills one every 1000 s: nothing refills during the test. */
    private static String tenantWithBurst(String tenant, int burst) {
        String key = app.newTenantKey(tenant);
        assertEquals(200, app.admin("PATCH", "/v1/admin/tenants/" + tenant,
                "{\"api_rate_per_second\": 0.001, \"api_burst\": " + burst + "}").status());
        return key;
    }

    @Test
    void overTheBurstIsA429WithRetryAfterAndNothingIsStored() {
        String tenant = TestApp.uniqueTenant("apirate");
        String key = tenantWithBurst(tenant, 3);
        String other = app.newTenantKey(TestApp.uniqueTenant("apirate-other"));
        for (int i = 0; i < 3; i++) assertEquals(200, app.call("GET", "/v1/stats", key, null).status(), "request " + i);

        List<Object> before = app.snapshot(tenant);
        TestApp.Res refused = app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}}");
        assertEquals(429, refused.status(), refused.toString());
        long retryAfter = Long.parseLong(refused.header("Retry-After"));
        assertTrue(retryAfter > 900 && retryAfter <= 1000, "one token every 1000 s: " + retryAfter);
        assertTrue(refused.body().get("error").asText().contains("api_rate_per_second"), refused.toString());
        assertEquals(before, app.snapshot(tenant), "a refused request stores nothing");
        assertEquals(429, app.call("GET", "/v1/jobs", key, null).status(), "reads count too");

        // another tenant has a bucket of its own; the admin API is not limited
        assertEquals(200, app.call("GET", "/v1/stats", other, null).status());
        assertEquals(200, app.admin("GET", "/v1/admin/tenants/" + tenant, null).status());
    }

    /**
     * Any rate above 0 is allowed; at 1e-12 a second the next token is about 30,000 years away, past a long's
     * nanoseconds (292 years), and rounding the wait up to seconds overflowed: "Retry-After: 1", so a client that
     * honours it called again every second.
     */
    @Test
    void aTokenCenturiesAwayIsNotRetryAfterOneSecond() {
        String tenant = TestApp.uniqueTenant("apislow");
        String key = app.newTenantKey(tenant);
        assertEquals(200, app.admin("PATCH", "/v1/admin/tenants/" + tenant,
                "{\"api_rate_per_second\": 1e-12, \"api_burst\": 1}").status());
        assertEquals(200, app.call("GET", "/v1/stats", key, null).status());
        TestApp.Res refused = app.call("GET", "/v1/stats", key, null);
        assertEquals(429, refused.status(), refused.toString());
        long retryAfter = Long.parseLong(refused.header("Retry-After"));
        assertTrue(retryAfter >= 200L * 365 * 24 * 3600, "centuries, not " + retryAfter + " s");
    }

    @Test
    void aLiveChangeAppliesAtTheNextRequestAndIsAudited() {
        String tenant = TestApp.uniqueTenant("apilive");
        String key = tenantWithBurst(tenant, 1);
        assertEquals(200, app.call("GET", "/v1/stats", key, null).status());
        assertEquals(429, app.call("GET", "/v1/stats", key, null).status());

        TestApp.Res patched = app.admin("PATCH", "/v1/admin/tenants/" + tenant, "{\"api_rate_per_second\": 1000, \"api_burst\": 50}");
        assertEquals(200, patched.status());
        assertEquals(1000.0, patched.body().get("api_rate_per_second").asDouble());
        assertEquals(50, patched.body().get("api_burst").asInt());
        // the tokens earned so far are kept (none); at 1000/s the next one comes within a millisecond
        await().atMost(Duration.ofSeconds(10)).until(() -> app.call("GET", "/v1/stats", key, null).status() == 200);

        TestApp.Res audit = app.admin("GET", "/v1/admin/audit?tenant=" + tenant, null);
        var latest = audit.body().get("entries").get(0);
        assertEquals(1, latest.get("old_values").get("api_burst").asInt());
        assertEquals(50, latest.get("new_values").get("api_burst").asInt());
        assertEquals(1000.0, latest.get("new_values").get("api_rate_per_second").asDouble());
    }

    @Test
    void badLimitsAreRefusedNamingTheField() {
        String tenant = TestApp.uniqueTenant("apibad");
        app.newTenantKey(tenant);
        TestApp.Res r = app.admin("PATCH", "/v1/admin/tenants/" + tenant, "{\"api_rate_per_second\": 0, \"api_burst\": 0}");
        assertEquals(422, r.status());
        assertEquals("api_rate_per_second", r.body().get("errors").get(0).get("field").asText());
        assertEquals("api_burst", r.body().get("errors").get(1).get("field").asText());
        TestApp.Res created = app.admin("PUT", "/v1/admin/tenants/" + TestApp.uniqueTenant("apidef"), "{}");
        assertEquals(100.0, created.body().get("api_rate_per_second").asDouble(), "the default for new tenants");
        assertEquals(200, created.body().get("api_burst").asInt());
    }

    // ------------------------------------------------------------------------------------------ the limiter itself

    @Test
    void theBucketAdmitsTheBurstThenTheRateAndForgetsIdleTenants() {
        AtomicLong now = new AtomicLong();
        ApiRateLimiter limiter = new ApiRateLimiter(now::get);
        for (int i = 0; i < 5; i++) assertEquals(0, limiter.acquire("a", 2.0, 5), "burst " + i);
        assertEquals(500_000_000L, limiter.acquire("a", 2.0, 5), "2 per second: the next token in 0.5 s");
        now.addAndGet(500_000_000L);
        assertEquals(0, limiter.acquire("a", 2.0, 5));
        assertTrue(limiter.acquire("a", 2.0, 5) > 0);
        assertEquals(0, limiter.acquire("b", 2.0, 5), "another tenant's bucket");
        assertEquals(2, limiter.size());

        now.addAndGet(ApiRateLimiter.SWEEP_NANOS); // both refilled: forgotten at the next sweep, nothing lost
        assertEquals(0, limiter.acquire("c", 2.0, 5));
        assertEquals(1, limiter.size(), "only the bucket just used is held");
    }

    @Test
    void concurrentRequestsNeverTakeMoreThanTheBurst() throws Exception {
        ApiRateLimiter limiter = new ApiRateLimiter(System::nanoTime);
        AtomicInteger admitted = new AtomicInteger();
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 16; t++) {
            Thread th = new Thread(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int i = 0; i < 50; i++) if (limiter.acquire("flood", 0.001, 100) == 0) admitted.incrementAndGet();
            });
            th.start();
            threads.add(th);
        }
        go.countDown();
        for (Thread th : threads) th.join();
        assertEquals(100, admitted.get(), "800 requests, a burst of 100, no refill to speak of");
    }
}

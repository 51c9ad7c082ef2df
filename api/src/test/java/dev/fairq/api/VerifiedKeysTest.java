package dev.fairq.api;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Verified tenant keys are remembered for a second (ApiKeyStore.VERIFIED_TTL) so that a request needs no key
 * lookup; a revocation still applies: at once through the API of the process, within the second when made
 * elsewhere (another API process, SQL).
 */
class VerifiedKeysTest {
    static TestApp app;

    @BeforeAll
    static void start() throws Exception {
        app = TestApp.get();
    }

    @Test
    void aRevocationThroughTheApiRefusesTheNextRequest() {
        String tenant = TestApp.uniqueTenant("vk-api");
        String key = app.newTenantKey(tenant);
        for (int i = 0; i < 3; i++) assertEquals(200, app.call("GET", "/v1/stats", key, null).status()); // remembered now
        String keyId = app.admin("GET", "/v1/admin/tenants/" + tenant + "/keys", null).body().get("keys").get(0)
                .get("key_id").asText();
        assertEquals(204, app.admin("DELETE", "/v1/admin/tenants/" + tenant + "/keys/" + keyId, null).status());
        assertEquals(401, app.call("GET", "/v1/stats", key, null).status(), "the next request after the revocation");
    }

    @Test
    void aRevocationMadeElsewhereAppliesWithinTheSecond() {
        String tenant = TestApp.uniqueTenant("vk-sql");
        String key = app.newTenantKey(tenant);
        assertEquals(200, app.call("GET", "/v1/stats", key, null).status());
        // another process revokes it: this one learns nothing but the clock
        app.db.dsl().execute("UPDATE api_keys SET revoked_at = now() WHERE tenant_id = ?", tenant);
        long revokedAt = System.nanoTime();
        await().atMost(Duration.ofSeconds(10)).until(() -> app.call("GET", "/v1/stats", key, null).status() == 401);
        // refused within the TTL plus a request's time on a loaded machine, never later
        assertTrue(System.nanoTime() - revokedAt < ApiKeyStore.VERIFIED_TTL_NANOS + 4_000_000_000L);
        assertEquals(401, app.call("GET", "/v1/stats", key, null).status(), "and from then on");
    }

    /** The store itself on a settable clock: trusted while fresh, asked again once the TTL has passed. */
    @Test
    void aVerifiedKeyIsTrustedForTheTtlThenAskedAgain() {
        String tenant = TestApp.uniqueTenant("vk-clock");
        String key = app.newTenantKey(tenant);
        AtomicLong now = new AtomicLong(0);
        ApiKeyStore keys = new ApiKeyStore(app.db.dsl(), now::get);
        assertEquals(tenant, keys.ownerOf(key).orElseThrow().tenant());
        assertEquals(1, keys.verifiedCount());
        app.db.dsl().execute("UPDATE api_keys SET revoked_at = now() WHERE tenant_id = ?", tenant);

        now.set(ApiKeyStore.VERIFIED_TTL_NANOS - 1);
        assertTrue(keys.ownerOf(key).isPresent(), "within the TTL the database is not asked");
        now.set(ApiKeyStore.VERIFIED_TTL_NANOS);
        assertTrue(keys.ownerOf(key).isEmpty(), "once the TTL has passed the revocation is seen");
        assertEquals(0, keys.verifiedCount(), "a refused key is not remembered");
        assertTrue(keys.ownerOf("fqk_never-issued").isEmpty());
        assertEquals(0, keys.verifiedCount());
    }

    /** A limit change through the API forgets the tenant's verified keys: the next request has the new limits. */
    @Test
    void aLimitChangeThroughTheApiAppliesAtTheNextRequest() {
        String tenant = TestApp.uniqueTenant("vk-limit");
        String key = app.newTenantKey(tenant);
        assertEquals(200, app.call("GET", "/v1/stats", key, null).status()); // remembered with a burst of 100,000
        assertEquals(200, app.admin("PATCH", "/v1/admin/tenants/" + tenant,
                "{\"api_rate_per_second\": 0.001, \"api_burst\": 1}").status());
        assertEquals(200, app.call("GET", "/v1/stats", key, null).status(), "the one token of the new burst");
        assertEquals(429, app.call("GET", "/v1/stats", key, null).status(), "the new limit, not the remembered one");
    }
}

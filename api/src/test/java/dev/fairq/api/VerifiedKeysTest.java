package dev.fairq.api;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.fairq.schema.Database;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Verified tenant keys are remembered so that a request needs no key lookup: for a minute while the process hears
 * of key changes (KeyChangeListener, V14's notifications), for a second otherwise (ApiKeyStore.VERIFIED_TTL). A
 * revocation or limit change still applies: at once through the API of the process, as its notification arrives
 * when made elsewhere (another API process, SQL), within the second while nothing is heard.
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

    private static Connection listenerConnection(String name) throws SQLException {
        return Database.dedicated(app.db.jdbcUrl, app.db.user, app.db.password, name);
    }

    private static final long SECOND = 1_000_000_000L;

    /**
     * While the listener hears of changes a verified key is trusted past the second (no lookup 30 s later), and a
     * limit change or a revocation made elsewhere (plain SQL here) is applied as its notification arrives, not when
     * a TTL runs out: the store's clock stands still throughout.
     */
    @Test
    void whileListeningAKeyIsTrustedPastTheSecondAndAChangeElsewhereAppliesAsItIsHeard() throws Exception {
        String tenant = TestApp.uniqueTenant("vk-heard");
        String key = app.newTenantKey(tenant);
        AtomicLong now = new AtomicLong(0);
        ApiKeyStore keys = new ApiKeyStore(app.db.dsl(), now::get);
        try (KeyChangeListener listener = new KeyChangeListener(keys, () -> listenerConnection("vk-heard")).start()) {
            await().atMost(Duration.ofSeconds(30)).until(listener::listening);
            assertEquals(tenant, keys.ownerOf(key).orElseThrow().tenant());
            assertEquals(1, keys.lookups());
            now.set(30 * SECOND);
            assertTrue(keys.ownerOf(key).isPresent());
            assertEquals(1, keys.lookups(), "trusted 30 s later without asking the database");

            app.db.dsl().execute("UPDATE tenants SET api_burst = 7 WHERE id = ?", tenant);
            await().atMost(Duration.ofSeconds(30)).until(() -> keys.verifiedCount() == 0);
            assertEquals(7, keys.ownerOf(key).orElseThrow().apiBurst(), "the new limit, read again");
            assertEquals(2, keys.lookups());

            app.db.dsl().execute("UPDATE tenants SET weight = weight + 1 WHERE id = ?", tenant); // not an API limit
            assertTrue(keys.ownerOf(key).isPresent());
            app.db.dsl().execute("UPDATE api_keys SET revoked_at = now() WHERE tenant_id = ?", tenant);
            await().atMost(Duration.ofSeconds(30)).until(() -> keys.verifiedCount() == 0);
            assertTrue(keys.ownerOf(key).isEmpty(), "revoked elsewhere: refused with the clock standing still");
            assertEquals(3, keys.lookups(), "a change of another limit forgot nothing");
        }
        assertFalse(keys.listening(), "a closed listener hears nothing");
    }

    /** LISTENED_TTL bounds the trust even while listening; without listening it is the second again. */
    @Test
    void theTrustEndsAfterTheListenedTtlAndWithoutListeningAfterTheSecond() {
        String tenant = TestApp.uniqueTenant("vk-ttl");
        String key = app.newTenantKey(tenant);
        AtomicLong now = new AtomicLong(0);
        ApiKeyStore keys = new ApiKeyStore(app.db.dsl(), now::get);
        keys.listening(true);
        keys.ownerOf(key);
        now.set(ApiKeyStore.LISTENED_TTL_NANOS - 1);
        keys.ownerOf(key);
        assertEquals(1, keys.lookups());
        now.set(ApiKeyStore.LISTENED_TTL_NANOS);
        keys.ownerOf(key);
        assertEquals(2, keys.lookups(), "asked again once the listened TTL has passed");

        keys.listening(false); // the listener lost its connection: it may have missed a change
        assertEquals(0, keys.verifiedCount(), "everything remembered is forgotten");
        keys.ownerOf(key);
        assertEquals(3, keys.lookups());
        now.addAndGet(ApiKeyStore.VERIFIED_TTL_NANOS);
        keys.ownerOf(key);
        assertEquals(4, keys.lookups(), "verified while nothing is heard: trusted for the second only");
    }

    /**
     * A change heard while a lookup reads the database may have come after what the lookup read: that answer is
     * not remembered (here the change arrives in the middle of the lookup), so the next request reads again.
     */
    @Test
    void aChangeHeardDuringALookupIsNotCoveredByWhatItRead() {
        String tenant = TestApp.uniqueTenant("vk-race");
        String key = app.newTenantKey(tenant);
        AtomicReference<ApiKeyStore> store = new AtomicReference<>();
        ApiKeyStore real = new ApiKeyStore(app.db.dsl(), () -> 0L);
        ApiKeyStore keys = new ApiKeyStore(app.db.dsl(), () -> 0L, hash -> {
            Optional<ApiKeyStore.Owner> read = real.ownerOfHash(hash);
            store.get().keyChanged(tenant); // the revocation's notification, heard before the read returns
            return read;
        });
        store.set(keys);
        keys.listening(true);
        assertTrue(keys.ownerOf(key).isPresent(), "this request was in flight with the change");
        assertEquals(0, keys.verifiedCount(), "but what it read is not trusted after it");
        keys.ownerOf(key);
        assertEquals(2, keys.lookups());
    }

    /**
     * The listener's connection is cut (its backend terminated): the store forgets what it trusted, and the
     * listener comes back on a new connection and listens again.
     */
    @Test
    void aLostListeningConnectionIsReplacedAndWhatWasTrustedIsForgotten() throws Exception {
        String tenant = TestApp.uniqueTenant("vk-lost");
        String key = app.newTenantKey(tenant);
        ApiKeyStore keys = new ApiKeyStore(app.db.dsl());
        String name = "vk-lost-" + System.nanoTime();
        try (KeyChangeListener listener = new KeyChangeListener(keys, () -> listenerConnection(name)).start()) {
            await().atMost(Duration.ofSeconds(30)).until(listener::listening);
            keys.ownerOf(key);
            assertEquals(1, keys.verifiedCount());
            Integer first = app.db.dsl().fetchValue("SELECT pid FROM pg_stat_activity WHERE application_name = ?", name)
                    instanceof Integer p ? p : null;
            assertTrue(first != null, "the listener's backend");
            app.db.dsl().execute("SELECT pg_terminate_backend(?)", first);
            await().atMost(Duration.ofSeconds(30)).until(() -> {
                Object pid = app.db.dsl().fetchValue("SELECT pid FROM pg_stat_activity WHERE application_name = ?", name);
                return pid != null && !first.equals(pid) && listener.listening();
            });
            assertEquals(0, keys.verifiedCount(), "forgotten when the connection was lost");
            keys.ownerOf(key);
            assertEquals(1, keys.verifiedCount());
            // heard on the new connection: forgotten long before the listened TTL (a minute) could end it
            app.db.dsl().execute("UPDATE api_keys SET revoked_at = now() WHERE tenant_id = ?", tenant);
            await().atMost(Duration.ofSeconds(30)).until(() -> keys.verifiedCount() == 0);
            assertTrue(keys.ownerOf(key).isEmpty());
        }
    }
}

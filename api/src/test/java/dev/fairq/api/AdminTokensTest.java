package dev.fairq.api;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.client.FairqClient;
import dev.fairq.client.FairqException;
import dev.fairq.client.Model;
import jakarta.annotation.security.PermitAll;
import jakarta.annotation.security.RolesAllowed;
import jakarta.ws.rs.DELETE;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.PATCH;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.PUT;
import jakarta.ws.rs.Path;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Named admin tokens: created, listed and revoked over the admin API, stored hashed, the audit actor is the token's
 * name (never a header the caller chooses); roles are checked on the resources themselves.
 */
class AdminTokensTest extends AppTest {
    private static String unique(String prefix) {
        return TestApp.uniqueTenant(prefix) + "@example.com";
    }

    @Test
    void aNamedTokenIsTheAuditActorAndARevokedOneStopsAtOnce() {
        String alice = unique("alice");
        TestApp.Res created = app.admin("POST", "/v1/admin/tokens", "{\"name\": \"" + alice + "\"}");
        assertEquals(201, created.status(), created.toString());
        String token = created.body().get("token").asText();
        String id = created.body().get("id").asText();
        assertTrue(token.startsWith("fqa_") && token.length() >= 40, token);
        assertEquals("bootstrap", created.body().get("created_by").asText());
        String stored = app.db.dsl().resultQuery("SELECT token_hash FROM admin_tokens WHERE id = ?", id).fetchOne(0, String.class);
        assertEquals(Tokens.sha256(token), stored, "stored as its SHA-256 only");
        assertFalse(stored.contains(token));

        // the audit log names the token, whatever header the caller sends
        String tenant = TestApp.uniqueTenant("audited");
        assertEquals(201, app.call("PUT", "/v1/admin/tenants/" + tenant, token, "{}").status());
        java.net.http.HttpRequest patch = java.net.http.HttpRequest.newBuilder(
                        java.net.URI.create("http://127.0.0.1:" + app.support.getLocalPort() + "/v1/admin/tenants/" + tenant))
                .method("PATCH", java.net.http.HttpRequest.BodyPublishers.ofString("{\"weight\": 3}"))
                .header("Authorization", "Bearer " + token).header("Content-Type", "application/json")
                .header("X-Fairq-Actor", "mallory").build();
        try {
            assertEquals(200, app.http.send(patch, java.net.http.HttpResponse.BodyHandlers.ofString()).statusCode());
        } catch (Exception e) {
            throw new AssertionError(e);
        }
        JsonNode audit = app.admin("GET", "/v1/admin/audit?tenant=" + tenant, null).body().get("entries");
        assertEquals(alice, audit.get(0).get("actor").asText(), "the patch, by alice's token (not the header)");
        assertEquals(alice, audit.get(1).get("actor").asText(), "the create");

        JsonNode listed = find(app.admin("GET", "/v1/admin/tokens", null).body(), id);
        assertEquals(alice, listed.get("name").asText());
        assertFalse(listed.has("token"), "never the token itself");
        assertTrue(listed.get("revoked_at").isNull());

        assertEquals(204, app.call("DELETE", "/v1/admin/tokens/" + id, token, null).status(), "a token may revoke itself");
        assertEquals(401, app.call("GET", "/v1/admin/tenants", token, null).status(), "revoked: refused at once");
        assertFalse(find(app.admin("GET", "/v1/admin/tokens", null).body(), id).get("revoked_at").isNull());
        assertEquals(204, app.admin("DELETE", "/v1/admin/tokens/" + id, null).status(), "revoking twice is fine");
        assertEquals(alice, find(app.admin("GET", "/v1/admin/tokens", null).body(), id).get("revoked_by").asText(),
                "who revoked it: the first revoke, not the second");
        assertTrue(listed.get("revoked_by").isNull(), "none while it could be used");
        assertEquals(404, app.admin("DELETE", "/v1/admin/tokens/adm_nosuch", null).status());
    }

    /**
     * Who issued or revoked a tenant's key is in the audit log (it had only limit changes): key_create and key_revoke
     * name the key's id and the admin token's name, never the key; a second revoke changes nothing and writes nothing.
     */
    @Test
    void issuingAndRevokingATenantsKeyIsAuditedWithItsIdNeverTheKey() {
        String bob = unique("bob");
        String token = app.admin("POST", "/v1/admin/tokens", "{\"name\": \"" + bob + "\"}").body().get("token").asText();
        String tenant = TestApp.uniqueTenant("keyaudit");
        assertEquals(201, app.admin("PUT", "/v1/admin/tenants/" + tenant, "{}").status());
        TestApp.Res issued = app.call("POST", "/v1/admin/tenants/" + tenant + "/keys", token, null);
        assertEquals(201, issued.status(), issued.toString());
        String keyId = issued.body().get("key_id").asText();
        String key = issued.body().get("key").asText();
        assertEquals(204, app.admin("DELETE", "/v1/admin/tenants/" + tenant + "/keys/" + keyId, null).status());
        assertEquals(204, app.call("DELETE", "/v1/admin/tenants/" + tenant + "/keys/" + keyId, token, null).status(),
                "revoking twice is fine");
        assertEquals(404, app.admin("DELETE", "/v1/admin/tenants/" + tenant + "/keys/key_nosuch", null).status());

        TestApp.Res page = app.admin("GET", "/v1/admin/audit?tenant=" + tenant, null);
        JsonNode audit = page.body().get("entries");
        assertEquals(3, audit.size(), "create, key_create, one key_revoke: " + audit);
        assertEquals("key_revoke", audit.get(0).get("action").asText());
        assertEquals("bootstrap", audit.get(0).get("actor").asText(), "the first revoke's token, not the second's");
        assertEquals(keyId, audit.get(0).get("old_values").get("key_id").asText());
        assertEquals(keyId, audit.get(0).get("new_values").get("key_id").asText());
        assertTrue(audit.get(0).get("new_values").get("revoked").asBoolean(), audit.toString());
        assertEquals("key_create", audit.get(1).get("action").asText());
        assertEquals(bob, audit.get(1).get("actor").asText());
        assertTrue(audit.get(1).get("old_values").isNull(), audit.toString());
        assertEquals(keyId, audit.get(1).get("new_values").get("key_id").asText());
        assertEquals("create", audit.get(2).get("action").asText());
        assertFalse(page.toString().contains(key), "never the key itself");
        assertFalse(page.toString().contains(Tokens.sha256(key)), "nor its hash");
    }

    private static JsonNode find(JsonNode list, String id) {
        for (JsonNode t : list.get("tokens")) if (t.get("id").asText().equals(id)) return t;
        throw new AssertionError("no token " + id + " in " + list);
    }

    @Test
    void namesAreCheckedAndNeverReused() {
        String name = unique("bob");
        assertEquals(201, app.admin("POST", "/v1/admin/tokens", "{\"name\": \"" + name + "\"}").status());
        List<Object> before = app.snapshot("no-jobs-here"); // keys, audit, admin tokens, tenants
        TestApp.Res again = app.admin("POST", "/v1/admin/tokens", "{\"name\": \"" + name + "\"}");
        assertEquals(409, again.status());
        for (String bad : List.of("\"bootstrap\"", "\"tenants.yml\"", "\"fairq\"", "\"Bob\"", "\"\"", "\"a b\"", "\"x\\u0000\"", "5", "null")) {
            app.admin("POST", "/v1/admin/tokens", "{\"name\": " + bad + "}").assertRefused(422, "name", bad + ": ");
        }
        assertEquals(422, app.admin("POST", "/v1/admin/tokens", "{\"name\": \"carol\", \"role\": \"root\"}").status());
        assertEquals(before, app.snapshot("no-jobs-here"));
        assertEquals(1, app.db.dsl().resultQuery("SELECT count(*) FROM admin_tokens WHERE name = ?", name).fetchOne(0, Integer.class));
    }

    @Test
    void rolesDecideOnTheResourcesThemselves() {
        String key = app.newTenantKey(TestApp.uniqueTenant("roles"));
        String admin = app.admin("POST", "/v1/admin/tokens", "{\"name\": \"" + unique("ops") + "\"}").body().get("token").asText();
        // a tenant key on every admin resource, a named admin token on every tenant resource: 403, nothing done
        for (String path : List.of("/v1/admin/tokens", "/v1/admin/tenants", "/v1/admin/jobs", "/v1/admin/overview",
                "/v1/admin/audit", "/v1/admin/schedules")) {
            TestApp.Res r = app.call("GET", path, key, null);
            assertEquals(403, r.status(), path);
            assertTrue(r.body().get("error").asText().contains("tenant key cannot use the admin API"), r.toString());
        }
        for (String path : List.of("/v1/jobs", "/v1/stats", "/v1/dashboard", "/v1/schedules")) {
            TestApp.Res r = app.call("GET", path, admin, null);
            assertEquals(403, r.status(), path);
            assertTrue(r.body().get("error").asText().contains("admin token does not belong to a tenant"), r.toString());
        }
        assertEquals(403, app.call("POST", "/v1/admin/tokens", key, "{\"name\": \"sneaky\"}").status());
        // OPTIONS (Jersey's own answer: the route's methods) is no one's resource: any credential gets its Allow, none a 401;
        // it had answered 403 "no credential may call this endpoint" to the admin token itself
        for (String[] call : List.of(new String[]{"/v1/admin/tenants", admin, "GET"}, new String[]{"/v1/jobs", key, "POST"},
                new String[]{"/v1/jobs", admin, "GET"}, new String[]{"/v1/admin/tokens", key, "POST"})) {
            TestApp.Res r = app.call("OPTIONS", call[0], call[1], null);
            assertEquals(200, r.status(), call[0] + ": " + r);
            assertTrue(r.header("Allow") != null && r.header("Allow").contains(call[2]) && r.header("Allow").contains("OPTIONS"), r.toString());
        }
        assertEquals(401, app.call("OPTIONS", "/v1/jobs", null, null).status());
        assertEquals(401, app.call("GET", "/v1/admin/tokens", "fqa_not-a-token", null).status());
        assertEquals(401, app.call("GET", "/v1/jobs", "fqk_not-a-key", null).status());
    }

    /** Every endpoint under /v1 declares who may call it: admin under /v1/admin, tenant elsewhere; none is open. */
    @Test
    void everyEndpointDeclaresItsRole() {
        List<String> checked = new ArrayList<>();
        for (Class<?> resource : FairqApplication.resourceClasses(app.support.getEnvironment())) {
            String base = resource.getAnnotation(Path.class).value();
            for (Method m : resource.getDeclaredMethods()) {
                if (!(m.isAnnotationPresent(GET.class) || m.isAnnotationPresent(POST.class) || m.isAnnotationPresent(PUT.class)
                        || m.isAnnotationPresent(PATCH.class) || m.isAnnotationPresent(DELETE.class))) continue;
                String path = base + (m.isAnnotationPresent(Path.class) ? m.getAnnotation(Path.class).value() : "");
                String[] roles = RolesFeature.rolesOf(m, resource);
                assertNotNull(roles, path + " declares no role");
                if (path.startsWith("/v1/admin")) {
                    assertEquals(List.of(BearerAuthFilter.Role.ADMIN), List.of(roles), path);
                } else if (path.startsWith("/v1")) {
                    assertEquals(List.of(BearerAuthFilter.Role.TENANT), List.of(roles), path);
                } else {
                    assertEquals(0, roles.length, path + ": outside /v1 only public pages");
                    assertTrue(m.isAnnotationPresent(PermitAll.class) || resource.isAnnotationPresent(PermitAll.class));
                }
                checked.add(path);
            }
        }
        assertTrue(checked.contains("/v1/admin/tokens/{id}") && checked.contains("/v1/jobs/{id}/cancel"), checked.toString());
        assertNull(RolesFeature.rolesOf(Object.class.getDeclaredMethods()[0], Object.class), "nothing declared: refused to all");
        assertTrue(RolesAllowed.class.isAnnotation());
    }

    @Test
    void theClientManagesTokens() {
        FairqClient admin = app.client(TestApp.ADMIN_TOKEN);
        String name = unique("client");
        Model.NewAdminToken t = admin.createAdminToken(name);
        assertEquals(name, t.name());
        assertTrue(admin.adminTokens().stream().anyMatch(x -> x.id().equals(t.id()) && x.revokedAt() == null));
        app.client(t.token()).tenants(); // the new token works
        admin.revokeAdminToken(t.id());
        assertThrows(FairqException.UnauthorizedException.class, () -> app.client(t.token()).tenants());
    }

    @Test
    void fairqAdminTokenMustBeAtLeast32Characters() {
        FairqConfiguration c = new FairqConfiguration();
        c.adminToken = "x".repeat(31);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> AdminCredentials.resolveHash(c, false, null, System.out));
        assertTrue(e.getMessage().startsWith("FAIRQ_ADMIN_TOKEN must be at least 32 characters (it has 31)"), e.getMessage());
        c.adminToken = "x".repeat(32);
        assertEquals(Tokens.sha256(c.adminToken), AdminCredentials.resolveHash(c, false, null, System.out));
        assertTrue(TestApp.ADMIN_TOKEN.length() >= AdminCredentials.MIN_LENGTH, "the tests' own token complies");
    }
}

package dev.fairq.api;

import jakarta.annotation.Priority;
import jakarta.ws.rs.Priorities;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerRequestFilter;
import jakarta.ws.rs.container.ContainerResponseContext;
import jakarta.ws.rs.container.ContainerResponseFilter;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.SecurityContext;
import org.slf4j.MDC;

import java.security.Principal;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * {@code Authorization: Bearer <token>} on everything under /v1. Admin paths (/v1/admin/...) take the admin
 * token; every other path a tenant key, and the tenant is the key's (never the body's). Missing or unknown
 * token: 401. The wrong kind of valid token (a tenant key on an admin path, the admin token on a tenant
 * path): 403. Keys are checked against the database on every request, so a revoked key stops at once.
 */
@Priority(Priorities.AUTHENTICATION)
final class BearerAuthFilter implements ContainerRequestFilter, ContainerResponseFilter {
    static final String ADMIN = "admin";

    private final String adminTokenHash;
    private final ApiKeyStore keys;
    private final ApiRateLimiter limiter;

    BearerAuthFilter(String adminTokenHash, ApiKeyStore keys, ApiRateLimiter limiter) {
        this.adminTokenHash = adminTokenHash;
        this.keys = keys;
        this.limiter = limiter;
    }

    /** The caller: a tenant id, or {@link #ADMIN}. */
    record Caller(String name, boolean admin) implements Principal {
        @Override
        public String getName() {
            return name;
        }
    }

    @Override
    public void filter(ContainerRequestContext req) {
        String path = req.getUriInfo().getPath();
        if (path.startsWith("/")) path = path.substring(1);
        if (!path.startsWith("v1/") && !path.equals("v1")) return;
        boolean adminPath = path.startsWith("v1/admin/") || path.equals("v1/admin");
        String token = bearer(req.getHeaderString(HttpHeaders.AUTHORIZATION));
        if (token == null) throw unauthorized("missing 'Authorization: Bearer <token>'");
        boolean isAdmin = Tokens.sameHash(Tokens.sha256(token), adminTokenHash);
        if (adminPath) {
            if (isAdmin) {
                setCaller(req, new Caller(ADMIN, true));
                return;
            }
            if (keys.ownerOf(token).isPresent()) {
                throw ApiException.of(jakarta.ws.rs.core.Response.Status.FORBIDDEN,
                        "a tenant key cannot use the admin API; use the admin token");
            }
            throw unauthorized("unknown or revoked token");
        }
        if (isAdmin) {
            throw ApiException.of(jakarta.ws.rs.core.Response.Status.FORBIDDEN,
                    "the admin token does not belong to a tenant; use a tenant key here, or /v1/admin/jobs");
        }
        Optional<ApiKeyStore.Owner> owner = keys.ownerOf(token);
        if (owner.isEmpty()) throw unauthorized("unknown or revoked API key");
        limit(owner.get());
        setCaller(req, new Caller(owner.get().tenant(), false));
        MDC.put("tenant", owner.get().tenant());
    }

    /** The tenant's API request limit: over it, a 429 with Retry-After (whole seconds until the next token). */
    private void limit(ApiKeyStore.Owner o) {
        long wait = limiter.acquire(o.tenant(), o.apiRatePerSecond(), o.apiBurst());
        if (wait == 0) return;
        long seconds = Math.max(1, (wait + 999_999_999L) / 1_000_000_000L);
        throw new ApiException(429, "tenant " + o.tenant() + " is over its API request limit (api_rate_per_second "
                + o.apiRatePerSecond() + ", api_burst " + o.apiBurst() + "); retry after " + seconds + " s", List.of(),
                Map.of("Retry-After", Long.toString(seconds)));
    }

    @Override
    public void filter(ContainerRequestContext req, ContainerResponseContext res) {
        MDC.remove("tenant");
    }

    private static void setCaller(ContainerRequestContext req, Caller caller) {
        boolean secure = req.getSecurityContext() != null && req.getSecurityContext().isSecure();
        req.setSecurityContext(new SecurityContext() {
            @Override public Principal getUserPrincipal() { return caller; }
            @Override public boolean isUserInRole(String role) { return caller.admin() == ADMIN.equals(role); }
            @Override public boolean isSecure() { return secure; }
            @Override public String getAuthenticationScheme() { return "Bearer"; }
        });
    }

    private static String bearer(String header) {
        if (header == null) return null;
        String h = header.trim();
        if (h.length() < 7 || !h.regionMatches(true, 0, "Bearer ", 0, 7)) return null;
        String t = h.substring(7).trim();
        return t.isEmpty() ? null : t;
    }

    private static ApiException unauthorized(String message) {
        return new ApiException(401, message, List.of(), Map.of(HttpHeaders.WWW_AUTHENTICATE, "Bearer realm=\"fairq\""));
    }

    /** The tenant of a tenant request (the filter let it through, so there is one). */
    static String tenant(SecurityContext sc) {
        return sc.getUserPrincipal().getName();
    }
}

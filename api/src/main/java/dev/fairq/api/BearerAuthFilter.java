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
 * Authentication: {@code Authorization: Bearer <token>} on everything under /v1 says who calls. A tenant key
 * ({@code fqk_...}) is the tenant (never the body's), in the role {@link Role#TENANT}; an admin token is the
 * token's name (FAIRQ_ADMIN_TOKEN is {@code bootstrap}), in the role {@link Role#ADMIN}. Missing, unknown or
 * revoked: 401. Admin tokens are checked against the database on every request; a tenant key only when this
 * process does not remember it ({@link ApiKeyStore}): a revocation through this process applies at once, one made
 * elsewhere as its notification arrives. What a caller may do is decided on the resources themselves ({@code @RolesAllowed}, {@link RolesFeature}),
 * not here. A tenant's request takes a token from its API request limit ({@link ApiRateLimiter}) first.
 */
@Priority(Priorities.AUTHENTICATION)
final class BearerAuthFilter implements ContainerRequestFilter, ContainerResponseFilter {
    /** The two roles a caller can have. */
    static final class Role {
        static final String ADMIN = "admin";
        static final String TENANT = "tenant";

        private Role() {}
    }

    private final String bootstrapHash;
    private final ApiKeyStore keys;
    private final AdminTokenStore adminTokens;
    private final ApiRateLimiter limiter;

    /** @param bootstrapHash FAIRQ_ADMIN_TOKEN's hash, or null when it is not set */
    BearerAuthFilter(String bootstrapHash, ApiKeyStore keys, AdminTokenStore adminTokens, ApiRateLimiter limiter) {
        this.bootstrapHash = bootstrapHash;
        this.keys = keys;
        this.adminTokens = adminTokens;
        this.limiter = limiter;
    }

    /** The caller: a tenant id (role tenant), or an admin token's name (role admin). */
    record Caller(String name, String role) implements Principal {
        @Override
        public String getName() {
            return name;
        }

        boolean admin() {
            return Role.ADMIN.equals(role);
        }
    }

    @Override
    public void filter(ContainerRequestContext req) {
        String path = req.getUriInfo().getPath();
        if (path.startsWith("/")) path = path.substring(1);
        if (!path.startsWith("v1/") && !path.equals("v1")) return;
        String header = req.getHeaderString(HttpHeaders.AUTHORIZATION);
        String token = bearer(header);
        // a header of another scheme (Basic ...) or without a token had been told its header was missing
        if (token == null && header != null && !header.isBlank()) {
            throw unauthorized("the Authorization header must be 'Bearer <token>' (a tenant key or an admin token), not another scheme or an empty token");
        }
        if (token == null) throw unauthorized("missing 'Authorization: Bearer <token>'");
        String hash = Tokens.sha256(token);
        if (bootstrapHash != null && Tokens.sameHash(hash, bootstrapHash)) {
            setCaller(req, new Caller(AdminTokenStore.BOOTSTRAP, Role.ADMIN));
            return;
        }
        if (token.startsWith(ApiKeyStore.PREFIX)) { // tenant keys are made with this prefix; admin tokens never are
            Optional<ApiKeyStore.Owner> owner = keys.ownerOfHash(hash);
            if (owner.isEmpty()) throw unauthorized("unknown or revoked API key");
            limit(owner.get());
            setCaller(req, new Caller(owner.get().tenant(), Role.TENANT));
            MDC.put("tenant", owner.get().tenant());
            return;
        }
        Optional<String> admin = adminTokens.nameOf(token);
        if (admin.isEmpty()) throw unauthorized("unknown or revoked token");
        setCaller(req, new Caller(admin.get(), Role.ADMIN));
    }

    @Override
    public void filter(ContainerRequestContext req, ContainerResponseContext res) {
        MDC.remove("tenant");
    }

    /** The tenant's API request limit: over it, a 429 with Retry-After (whole seconds until the next token). */
    private void limit(ApiKeyStore.Owner o) {
        long wait = limiter.acquire(o.tenant(), o.apiRatePerSecond(), o.apiBurst());
        if (wait == 0) return;
        // rounded up without adding to wait: a token centuries away saturates it at Long.MAX_VALUE, and the sum overflowed to 1 s
        long seconds = Math.max(1, wait / 1_000_000_000L + (wait % 1_000_000_000L == 0 ? 0 : 1));
        throw new ApiException(429, "tenant " + o.tenant() + " is over its API request limit (api_rate_per_second "
                + o.apiRatePerSecond() + ", api_burst " + o.apiBurst() + "); retry after " + seconds + " s", List.of(),
                Map.of("Retry-After", Long.toString(seconds)));
    }

    private static void setCaller(ContainerRequestContext req, Caller caller) {
        boolean secure = req.getSecurityContext() != null && req.getSecurityContext().isSecure();
        req.setSecurityContext(new SecurityContext() {
            @Override public Principal getUserPrincipal() { return caller; }
            @Override public boolean isUserInRole(String role) { return caller.role().equals(role); }
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

    static ApiException unauthorized(String message) {
        return new ApiException(401, message, List.of(), Map.of(HttpHeaders.WWW_AUTHENTICATE, "Bearer realm=\"fairq\""));
    }

    /** The tenant of a tenant request (its resource allows the tenant role only, so there is one). */
    static String tenant(SecurityContext sc) {
        return sc.getUserPrincipal().getName();
    }

    /** The admin token's name, for the audit log (the resource allows the admin role only). */
    static String actor(SecurityContext sc) {
        return sc.getUserPrincipal().getName();
    }
}

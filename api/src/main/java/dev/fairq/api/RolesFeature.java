package dev.fairq.api;

import jakarta.annotation.Priority;
import jakarta.annotation.security.PermitAll;
import jakarta.annotation.security.RolesAllowed;
import jakarta.ws.rs.Priorities;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerRequestFilter;
import jakarta.ws.rs.container.DynamicFeature;
import jakarta.ws.rs.container.ResourceInfo;
import jakarta.ws.rs.core.FeatureContext;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.SecurityContext;

import java.lang.reflect.Method;
import java.util.List;

/**
 * Authorization on the resources themselves: a resource method (or its class) says who may call it with
 * {@code @RolesAllowed} ({@link BearerAuthFilter.Role}: admin, tenant) or {@code @PermitAll}. Jersey's own
 * RolesAllowedDynamicFeature does the same but answers with its plain 403; this one answers with fairq's error body
 * and says which credential the endpoint takes. A method that declares neither is refused to everyone (fail
 * closed), so a new endpoint cannot be opened by forgetting the annotation ({@code RolesTest} lists them all).
 */
final class RolesFeature implements DynamicFeature {
    @Override
    public void configure(ResourceInfo info, FeatureContext context) {
        if (info.getResourceMethod() == null || info.getResourceClass() == null) return; // not a resource method of ours
        // Jersey's own OPTIONS answer (200 with the route's Allow header): open to any valid credential (BearerAuthFilter
        // still asks for one under /v1), since it says less than /openapi.json, which is public; refused as "no
        // credential may call this endpoint", it told even the admin token something untrue
        if (info.getResourceClass().getName().startsWith(OPTIONS_ANSWER)) return;
        String[] roles = rolesOf(info.getResourceMethod(), info.getResourceClass());
        if (roles != null && roles.length > 0) context.register(new Check(roles));
        else if (roles == null) context.register(new Check(new String[0]));
        // an empty array is @PermitAll
    }

    private static final String OPTIONS_ANSWER = "org.glassfish.jersey.server.wadl.processor.OptionsMethodProcessor$";

    /** The roles that may call: null when nothing is declared, empty for @PermitAll. */
    static String[] rolesOf(Method method, Class<?> resource) {
        if (method.isAnnotationPresent(PermitAll.class)) return new String[0];
        if (method.isAnnotationPresent(RolesAllowed.class)) return method.getAnnotation(RolesAllowed.class).value();
        if (resource.isAnnotationPresent(PermitAll.class)) return new String[0];
        if (resource.isAnnotationPresent(RolesAllowed.class)) return resource.getAnnotation(RolesAllowed.class).value();
        return null;
    }

    @Priority(Priorities.AUTHORIZATION)
    private static final class Check implements ContainerRequestFilter {
        private final List<String> roles;

        Check(String[] roles) {
            this.roles = List.of(roles);
        }

        @Override
        public void filter(ContainerRequestContext req) {
            SecurityContext sc = req.getSecurityContext();
            if (sc == null || !(sc.getUserPrincipal() instanceof BearerAuthFilter.Caller caller)) {
                throw BearerAuthFilter.unauthorized("missing 'Authorization: Bearer <token>'");
            }
            for (String role : roles) if (sc.isUserInRole(role)) return;
            String message;
            if (roles.isEmpty()) message = "no credential may call this endpoint";
            else if (caller.admin()) message = "an admin token does not belong to a tenant; use a tenant key here, or /v1/admin/jobs";
            else message = "a tenant key cannot use the admin API; use an admin token";
            throw ApiException.of(Response.Status.FORBIDDEN, message);
        }
    }
}

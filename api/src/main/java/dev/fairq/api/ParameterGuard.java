package dev.fairq.api;

import dev.fairq.schema.FieldError;
import jakarta.annotation.Priority;
import jakarta.ws.rs.Priorities;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerRequestFilter;
import jakarta.ws.rs.core.MultivaluedMap;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Path and query parameters with a control character are a 422 naming the parameter, before any resource runs.
 * No id, name, key or filter fairq stores can hold one (JobRequest refuses them in keys; names and ids have
 * patterns), and a NUL would reach PostgreSQL, whose text type cannot hold it (a 500 before this guard:
 * {@code GET /v1/jobs?queue=%00}). Runs after authentication, so an anonymous caller learns nothing new.
 */
@Priority(Priorities.HEADER_DECORATOR)
final class ParameterGuard implements ContainerRequestFilter {
    static final String RULE = "must not contain control characters";

    @Override
    public void filter(ContainerRequestContext req) {
        List<FieldError> errors = new ArrayList<>();
        check(req.getUriInfo().getPathParameters(true), errors);
        check(req.getUriInfo().getQueryParameters(true), errors);
        if (!errors.isEmpty()) throw ApiException.invalid(errors);
    }

    private static void check(MultivaluedMap<String, String> params, List<FieldError> errors) {
        for (Map.Entry<String, List<String>> e : params.entrySet()) {
            for (String v : e.getValue()) {
                if (hasControl(v) || hasControl(e.getKey())) {
                    errors.add(new FieldError(printable(e.getKey()), RULE));
                    break;
                }
            }
        }
    }

    static boolean hasControl(String s) {
        if (s == null) return false;
        for (int i = 0; i < s.length(); i++) if (Character.isISOControl(s.charAt(i))) return true;
        return false;
    }

    /** A parameter's name as the answer shows it: control characters as \\uXXXX. */
    private static String printable(String s) {
        StringBuilder b = new StringBuilder();
        for (char c : s.toCharArray()) b.append(Character.isISOControl(c) ? String.format("\\u%04x", (int) c) : String.valueOf(c));
        return b.toString();
    }
}

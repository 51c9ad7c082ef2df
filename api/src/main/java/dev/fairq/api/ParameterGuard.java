package dev.fairq.api;

import dev.fairq.schema.FieldError;
import dev.fairq.schema.JobRequest;
import jakarta.annotation.Priority;
import jakarta.ws.rs.Priorities;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerRequestFilter;
import jakarta.ws.rs.core.MultivaluedMap;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Path and query parameters with a control character are a 422 naming the parameter, before any resource runs.
 * No id, name, key or filter fairq stores can hold one (JobRequest refuses them in keys; names and ids have
 * patterns), and a NUL would reach PostgreSQL, whose text type cannot hold it (a 500 before this guard:
 * {@code GET /v1/jobs?queue=%00}). Runs after authentication, so an anonymous caller learns nothing new. A query
 * parameter given twice, and a queue, type or tenant filter that no queue, type or tenant can match, are 422s too.
 */
@Priority(Priorities.HEADER_DECORATOR)
final class ParameterGuard implements ContainerRequestFilter {
    static final String RULE = "must not contain control characters";

    /**
     * Filters with the pattern of what they name: a value that no queue, type or tenant can have matches nothing,
     * and is a mistake ({@code queue=bad queue} had answered an empty page).
     */
    private static final Map<String, Pattern> FILTERS = Map.of("queue", Pattern.compile(JobRequest.NAME_REGEX),
            "type", Pattern.compile(JobRequest.NAME_REGEX), "tenant", AdminTenantsResource.TENANT_ID);
    /** The query parameters some resource reads (the others are ignored, as unknown ones). */
    private static final java.util.Set<String> READ = java.util.Set.of("after", "limit", "offset", "ordering_key", "search",
            "status", "tenant", "type", "queue");
    private static final Map<String, String> FILTER_RULES = Map.of("queue", JobRequest.NAME_RULE, "type", JobRequest.NAME_RULE,
            "tenant", "must be a tenant id: 1-63 lower-case letters, digits, '_' or '-', starting with a letter or digit");

    @Override
    public void filter(ContainerRequestContext req) {
        List<FieldError> errors = new ArrayList<>();
        check(req.getUriInfo().getPathParameters(true), errors);
        MultivaluedMap<String, String> query = req.getUriInfo().getQueryParameters(true);
        check(query, errors);
        if (errors.isEmpty()) {
            for (Map.Entry<String, List<String>> e : query.entrySet()) {
                // one value a parameter fairq reads: limit=1&limit=2 would silently take the first
                if (e.getValue().size() > 1 && READ.contains(e.getKey())) {
                    errors.add(new FieldError(e.getKey(), "must be given once, not " + e.getValue().size() + " times"));
                    continue;
                }
                Pattern p = FILTERS.get(e.getKey());
                String v = e.getValue().isEmpty() ? null : e.getValue().get(0);
                if (p != null && v != null && !v.isBlank() && !p.matcher(v).matches()) { // blank: no filter
                    errors.add(new FieldError(e.getKey(), FILTER_RULES.get(e.getKey())));
                }
                // likewise an ordering key no job can have, by the jobs' own rule (one over 255 characters had
                // answered an empty page); empty is no filter
                if (e.getKey().equals("ordering_key") && v != null && !v.isEmpty() && !JobRequest.isKey(v)) {
                    errors.add(new FieldError("ordering_key", JobRequest.KEY_RULE));
                }
            }
        }
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

    /** A {@code limit} query parameter: blank is left out ({@code dflt}), else a whole number 1 to {@code max} or a 422. */
    static int pageSize(String limit, int dflt, int max) {
        List<FieldError> errors = new ArrayList<>();
        int n = pageSize(limit, dflt, max, errors);
        if (!errors.isEmpty()) throw ApiException.invalid(errors);
        return n;
    }

    /** As {@link #pageSize(String, int, int)}, adding the error to {@code errors} (a resource that reports all at once). */
    static int pageSize(String limit, int dflt, int max, List<FieldError> errors) {
        if (limit == null || limit.isBlank()) return dflt;
        try {
            int n = Integer.parseInt(limit.strip());
            if (n >= 1 && n <= max) return n;
        } catch (NumberFormatException e) {
            // answered below
        }
        errors.add(new FieldError("limit", "must be a whole number between 1 and " + max));
        return dflt;
    }

    /**
     * An {@code after} query parameter that pages by id: blank is the first page, else the {@code next} of a previous
     * page, a whole number of 0 or more (ids start at 1; -1 had answered the first page as if it meant something).
     */
    static Long afterId(String after, List<FieldError> errors) {
        if (after == null || after.isBlank()) return null;
        try {
            long n = Long.parseLong(after.strip());
            if (n >= 0) return n;
        } catch (NumberFormatException e) {
            // answered below
        }
        errors.add(new FieldError("after", "must be the 'next' value of a previous page (a whole number of 0 or more)"));
        return null;
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

package dev.fairq.api;

import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;

import java.util.Map;

/**
 * The JSON behind the admin overview: totals over the active tenants, and one page of tenants (those over their
 * share first, then by backlog), each with its share of worker time against its weight. {@code search} keeps
 * the tenants whose id starts with it, idle ones included.
 */
@Path("/v1/admin/overview")
@Produces(MediaType.APPLICATION_JSON)
public final class AdminOverviewResource {
    private final DashboardFigures figures;

    AdminOverviewResource(DashboardFigures figures) {
        this.figures = figures;
    }

    @GET
    public Map<String, Object> overview(@QueryParam("offset") String offset, @QueryParam("limit") String limit,
                                        @QueryParam("search") String search) {
        int from = offset == null ? 0 : intIn("offset", offset, 0, Integer.MAX_VALUE);
        int size = limit == null ? DashboardFigures.DEFAULT_PAGE : intIn("limit", limit, 1, DashboardFigures.MAX_PAGE);
        String prefix = search == null || search.isEmpty() ? null : search;
        if (prefix != null && !prefix.matches("[a-z0-9_-]{1,63}")) {
            throw ApiException.invalid("search", "must be the start of a tenant id: 1-63 lower-case letters, digits, '_' or '-'");
        }
        return figures.overview(from, size, prefix);
    }

    private static int intIn(String field, String value, int min, int max) {
        try {
            long n = Long.parseLong(value);
            if (n >= min && n <= max) return (int) n;
        } catch (NumberFormatException ignored) {
            // answered below
        }
        throw ApiException.invalid(field, "must be a whole number between " + min + " and " + max);
    }
}

package dev.fairq.api;

import dev.fairq.schema.FieldError;
import io.swagger.v3.oas.annotations.Operation;
import io.swagger.v3.oas.annotations.Parameter;
import io.swagger.v3.oas.annotations.media.Content;
import io.swagger.v3.oas.annotations.media.Schema;
import io.swagger.v3.oas.annotations.responses.ApiResponse;
import io.swagger.v3.oas.annotations.security.SecurityRequirement;
import io.swagger.v3.oas.annotations.tags.Tag;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;

import java.util.ArrayList;
import java.util.List;

/**
 * The JSON behind the admin overview: totals over the active tenants, and one page of tenants (those over their
 * share first, then by backlog), each with its share of worker time against its weight. {@code search} keeps
 * the tenants whose id starts with it, idle ones included.
 */
@Path("/v1/admin/overview")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "dashboards")
@SecurityRequirement(name = OpenApiDocument.ADMIN_TOKEN)
@jakarta.annotation.security.RolesAllowed(BearerAuthFilter.Role.ADMIN)
public final class AdminOverviewResource {
    private final DashboardFigures figures;

    AdminOverviewResource(DashboardFigures figures) {
        this.figures = figures;
    }

    @GET
    @Operation(summary = "Totals over the active tenants and one page of tenants with their share of worker time "
            + "against their weight share", responses = {
            @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = DashboardViews.Overview.class))),
            @ApiResponse(responseCode = "422", description = "a bad offset, limit or search")})
    public DashboardViews.Overview overview(
            @Parameter(description = "first row of the page (default 0)", schema = @Schema(type = "integer", format = "int32", minimum = "0", maximum = "2147483647", defaultValue = "0")) @QueryParam("offset") String offset,
            @Parameter(description = "rows per page, 1-500 (default 50)", schema = @Schema(type = "integer", minimum = "1", maximum = "" + DashboardFigures.MAX_PAGE,
                    defaultValue = "" + DashboardFigures.DEFAULT_PAGE)) @QueryParam("limit") String limit,
            @Parameter(description = "only tenants whose id starts with this") @QueryParam("search") String search) {
        // a blank parameter is one left out, as GET /v1/jobs?limit= takes it
        // (blank as ParameterGuard.pageSize reads it: offset=%20 had been a 422 where limit=%20 was left out);
        // every bad one in one 422, as GET /v1/jobs answers (it had named the first only)
        List<FieldError> errors = new ArrayList<>();
        int from = offset == null || offset.isBlank() ? 0 : intIn("offset", offset.strip(), 0, Integer.MAX_VALUE, errors);
        int size = ParameterGuard.pageSize(limit, DashboardFigures.DEFAULT_PAGE, DashboardFigures.MAX_PAGE, errors);
        String prefix = search == null || search.isBlank() ? null : search;
        if (prefix != null && !prefix.matches("[a-z0-9_-]{1,63}")) {
            errors.add(new FieldError("search", "must be the start of a tenant id: 1-63 lower-case letters, digits, '_' or '-'"));
        }
        if (!errors.isEmpty()) throw ApiException.invalid(errors);
        return figures.overview(from, size, prefix);
    }

    private static int intIn(String field, String value, int min, int max, List<FieldError> errors) {
        try {
            long n = Long.parseLong(value);
            if (n >= min && n <= max) return (int) n;
        } catch (NumberFormatException ignored) {
            // answered below
        }
        errors.add(new FieldError(field, "must be a whole number between " + min + " and " + max));
        return min;
    }
}

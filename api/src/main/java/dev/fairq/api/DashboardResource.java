package dev.fairq.api;

import io.swagger.v3.oas.annotations.Operation;
import io.swagger.v3.oas.annotations.media.Content;
import io.swagger.v3.oas.annotations.media.Schema;
import io.swagger.v3.oas.annotations.responses.ApiResponse;
import io.swagger.v3.oas.annotations.security.SecurityRequirement;
import io.swagger.v3.oas.annotations.tags.Tag;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.SecurityContext;

/** The JSON behind the tenant dashboard: the caller's own tenant only (the key decides, never a parameter). */
@Path("/v1/dashboard")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "dashboards")
@SecurityRequirement(name = OpenApiDocument.TENANT_KEY)
@jakarta.annotation.security.RolesAllowed(BearerAuthFilter.Role.TENANT)
public final class DashboardResource {
    private final DashboardFigures figures;

    DashboardResource(DashboardFigures figures) {
        this.figures = figures;
    }

    @GET
    @Operation(summary = "The tenant dashboard's figures: counts, the last hour per minute, running jobs, dead letters", responses = {
            @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = DashboardViews.TenantDashboard.class))),
            @ApiResponse(responseCode = "404", description = "the key's tenant no longer exists")})
    public DashboardViews.TenantDashboard dashboard(@Context SecurityContext sc) {
        return figures.tenant(BearerAuthFilter.tenant(sc));
    }
}

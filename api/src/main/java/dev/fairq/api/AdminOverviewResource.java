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
import jakarta.ws.rs.core.MediaType;

/** The JSON behind the admin overview: every tenant's figures and its share of worker time against its weight. */
@Path("/v1/admin/overview")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "dashboards")
@SecurityRequirement(name = OpenApiDocument.ADMIN_TOKEN)
public final class AdminOverviewResource {
    private final DashboardFigures figures;

    AdminOverviewResource(DashboardFigures figures) {
        this.figures = figures;
    }

    @GET
    @Operation(summary = "Every tenant's figures, with its share of worker time against its weight share", responses =
            @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = DashboardViews.Overview.class))))
    public DashboardViews.Overview overview() {
        return figures.overview();
    }
}

package dev.fairq.api;

import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;

import java.util.Map;

/** The JSON behind the admin overview: every tenant's figures and its share of worker time against its weight. */
@Path("/v1/admin/overview")
@Produces(MediaType.APPLICATION_JSON)
public final class AdminOverviewResource {
    private final DashboardFigures figures;

    AdminOverviewResource(DashboardFigures figures) {
        this.figures = figures;
    }

    @GET
    public Map<String, Object> overview() {
        return figures.overview();
    }
}

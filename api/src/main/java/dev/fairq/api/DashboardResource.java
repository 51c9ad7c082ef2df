package dev.fairq.api;

import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.SecurityContext;

import java.util.Map;

/** The JSON behind the tenant dashboard: the caller's own tenant only (the key decides, never a parameter). */
@Path("/v1/dashboard")
@Produces(MediaType.APPLICATION_JSON)
public final class DashboardResource {
    private final DashboardFigures figures;

    DashboardResource(DashboardFigures figures) {
        this.figures = figures;
    }

    @GET
    public Map<String, Object> dashboard(@Context SecurityContext sc) {
        return figures.tenant(BearerAuthFilter.tenant(sc));
    }
}

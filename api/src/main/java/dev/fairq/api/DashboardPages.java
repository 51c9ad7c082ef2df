package dev.fairq.api;

import io.swagger.v3.oas.annotations.Operation;
import io.swagger.v3.oas.annotations.media.Content;
import io.swagger.v3.oas.annotations.media.Schema;
import io.swagger.v3.oas.annotations.responses.ApiResponse;
import io.swagger.v3.oas.annotations.tags.Tag;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.core.Response;

import java.io.IOException;
import java.io.InputStream;
import java.util.Map;

/**
 * The dashboard pages, served from the classpath ({@code /dashboard/*} in the jar): static files with no data
 * in them and no external resource, so they need no authentication; the data comes from /v1/dashboard and
 * /v1/admin/overview with the key or token the user pastes in (kept in sessionStorage, sent as Bearer).
 * The CSP allows only this origin: no inline script, nothing from a CDN.
 */
@Path("/dashboard")
@Tag(name = "dashboards")
@jakarta.annotation.security.PermitAll // static pages; their scripts call /v1 with the token the user pastes
public final class DashboardPages {
    private static final Map<String, String> FILES = Map.of(
            "dashboard.js", "text/javascript; charset=utf-8",
            "dashboard.css", "text/css; charset=utf-8",
            "tenant.html", "text/html; charset=utf-8",
            "admin.html", "text/html; charset=utf-8");
    static final String CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
            + "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

    @GET
    @Operation(summary = "The tenant dashboard page (HTML; no credential: the page asks for the key)", security = {},
            responses = @ApiResponse(responseCode = "200", content = @Content(mediaType = "text/html", schema = @Schema(type = "string"))))
    public Response tenant() {
        return file("tenant.html");
    }

    @GET
    @Path("/admin")
    @Operation(summary = "The admin overview page (HTML; no credential: the page asks for the admin token)", security = {},
            responses = @ApiResponse(responseCode = "200", content = @Content(mediaType = "text/html", schema = @Schema(type = "string"))))
    public Response admin() {
        return file("admin.html");
    }

    @GET
    @Path("/static/{name}")
    @Operation(summary = "The pages' script and style sheet", security = {}, responses = {
            @ApiResponse(responseCode = "200", content = {
                    @Content(mediaType = "text/javascript", schema = @Schema(type = "string")),
                    @Content(mediaType = "text/css", schema = @Schema(type = "string"))}),
            // the answer is the server's error body (JsonErrorHandlers), not an empty one of any type
            @ApiResponse(responseCode = "404", description = "no such file", content = @Content(mediaType = "application/json",
                    schema = @Schema(ref = "#/components/schemas/Error")))})
    public Response asset(@PathParam("name") String name) {
        return file(name);
    }

    private static Response file(String name) {
        String type = FILES.get(name);
        if (type == null) return Response.status(404).build();
        try (InputStream in = DashboardPages.class.getResourceAsStream("/dashboard/" + name)) {
            if (in == null) return Response.status(404).build();
            return Response.ok(in.readAllBytes(), type)
                    .header("Content-Security-Policy", CSP)
                    .header("X-Content-Type-Options", "nosniff")
                    .header("Referrer-Policy", "no-referrer")
                    .header("Cache-Control", "no-cache")
                    .build();
        } catch (IOException e) {
            throw new IllegalStateException("reading the dashboard file " + name, e);
        }
    }
}

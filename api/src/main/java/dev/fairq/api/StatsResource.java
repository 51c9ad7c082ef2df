package dev.fairq.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.fairq.schema.JobQueries;
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
import org.jooq.DSLContext;

import java.time.Duration;


/** The caller's own numbers and limits. */
@Path("/v1/stats")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "jobs")
@SecurityRequirement(name = OpenApiDocument.TENANT_KEY)
@jakarta.annotation.security.RolesAllowed(BearerAuthFilter.Role.TENANT)
public final class StatsResource {
    static final Duration RECENT = Duration.ofMinutes(5);
    private final JobQueries queries = new JobQueries();
    private final DSLContext db;

    StatsResource(DSLContext db) {
        this.db = db;
    }

    /** A tenant's numbers now; the recent ones over the last five minutes. */
    @Schema(name = "Stats")
    public record Stats(String tenant, long pending, long ready, long running,
                        @JsonProperty("succeeded_last_5m") long succeededLast5m,
                        @JsonProperty("dead_last_5m") long deadLast5m,
                        long deadTotal,
                        @Schema(description = "null when nothing is pending") Long oldestPendingAgeMs,
                        long blockedOrderingKeys,
                        TenantView.Limits limits) {}

    @GET
    @Operation(summary = "The caller's counts and limits", responses =
            @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = Stats.class))))
    public Stats stats(@Context SecurityContext sc) {
        String tenant = BearerAuthFilter.tenant(sc);
        // one statement for the counts and the tenant's row, which were three round trips of the pool
        JobQueries.TenantFigures f = queries.tenantFigures(db, tenant, RECENT)
                .orElseThrow(() -> ApiException.notFound("no tenant " + tenant));
        JobQueries.TenantStats s = f.stats();
        return new Stats(tenant, s.pending(), s.ready(), s.running(), s.succeededRecent(), s.deadRecent(), s.deadTotal(),
                s.oldestPendingAgeMs(), s.blockedOrderingKeys(), TenantView.of(f.tenant()).limits());
    }
}

package dev.fairq.api;

import dev.fairq.schema.FieldError;
import dev.fairq.schema.JobQueries;
import dev.fairq.schema.JobStore;
import io.swagger.v3.oas.annotations.Operation;
import io.swagger.v3.oas.annotations.Parameter;
import io.swagger.v3.oas.annotations.media.Content;
import io.swagger.v3.oas.annotations.media.Schema;
import io.swagger.v3.oas.annotations.responses.ApiResponse;
import io.swagger.v3.oas.annotations.security.SecurityRequirement;
import io.swagger.v3.oas.annotations.tags.Tag;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import org.jooq.DSLContext;

import java.util.ArrayList;
import java.util.List;

/** Admin: any tenant's jobs, replay and discard of dead jobs, blocked ordering keys, the audit log. */
@Path("/v1/admin")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "admin: jobs", description = "any tenant's jobs, blocked ordering keys, the audit log")
@SecurityRequirement(name = OpenApiDocument.ADMIN_TOKEN)
@jakarta.annotation.security.RolesAllowed(BearerAuthFilter.Role.ADMIN)
public final class AdminJobsResource {
    private final JobStore store;
    private final JobQueries queries = new JobQueries();
    private final DSLContext db;
    private final TenantAdminStore tenants;

    AdminJobsResource(JobStore store, DSLContext db, TenantAdminStore tenants) {
        this.store = store;
        this.db = db;
        this.tenants = tenants;
    }

    @Schema(name = "BlockedKeys")
    public record BlockedKeys(List<JobQueries.BlockedKey> orderingKeys) {}

    @Schema(name = "AuditPage", description = "newest first; pass next back as after")
    public record AuditPage(List<TenantAdminStore.AuditEntry> entries, String next) {}

    @GET
    @Path("/jobs")
    @Operation(summary = "Any tenant's jobs, newest first, a page at a time", responses = {
            @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = JobPage.class))),
            @ApiResponse(responseCode = "422", description = "a bad status, limit or after")})
    public JobPage jobs(@QueryParam("tenant") String tenant,
                        @Parameter(schema = @Schema(allowableValues = {"pending", "ready", "running", "succeeded", "dead", "cancelled"})) @QueryParam("status") String status,
                        @QueryParam("queue") String queue, @QueryParam("type") String type,
                        @QueryParam("ordering_key") String orderingKey,
                        @Parameter(description = "page size", schema = @Schema(type = "integer", minimum = "1", maximum = "" + JobPage.MAX_LIMIT, defaultValue = "" + JobPage.DEFAULT_LIMIT)) @QueryParam("limit") String limit,
                        @Parameter(description = "the next value of the previous page") @QueryParam("after") String after) {
        return JobPage.fetch(queries, db, blank(tenant), status, queue, type, orderingKey, limit, after);
    }

    @GET
    @Path("/jobs/{id}")
    @Operation(summary = "Any tenant's job", responses = {
            @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = JobView.class))),
            @ApiResponse(responseCode = "404", description = "no such job")})
    public JobView job(@Parameter(description = "the job id", schema = @Schema(type = "integer", format = "int64")) @PathParam("id") String id) {
        long jobId = JobsResource.parseId(id);
        return JobView.of(store.find(db, jobId).orElseThrow(() -> ApiException.notFound("no job " + jobId)));
    }

    /** Any tenant's job, as {@code POST /v1/jobs/{id}/cancel}: 200 when cancelled or ended, 202 while stopping. */
    @POST
    @Path("/jobs/{id}/cancel")
    @Operation(operationId = "adminCancelJob", summary = "Cancel any tenant's job: a waiting one at once, a running one is stopped", responses = {
            @ApiResponse(responseCode = "200", description = "cancelled, or already ended (unchanged)",
                    content = @Content(schema = @Schema(implementation = JobView.class))),
            @ApiResponse(responseCode = "202", description = "running: its worker is told to stop it",
                    content = @Content(schema = @Schema(implementation = JobView.class))),
            @ApiResponse(responseCode = "404", description = "no job with this id")})
    public jakarta.ws.rs.core.Response cancel(@Parameter(description = "the job id", schema = @Schema(type = "integer", format = "int64")) @PathParam("id") String id) {
        long jobId = JobsResource.parseId(id);
        return JobActions.cancelAnswer(jobId, store.cancel(db, null, jobId));
    }

    /** dead or cancelled -> pending, attempts reset (unblocks its ordering key when it was the dead head). */
    @POST
    @Path("/jobs/{id}/retry")
    @Operation(operationId = "adminRetryJob", summary = "Run a dead or cancelled job again (attempts reset)", responses = {
            @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = JobView.class))),
            @ApiResponse(responseCode = "404", description = "no such job"),
            @ApiResponse(responseCode = "409", description = "the job is not dead or cancelled")})
    public JobView retry(@Parameter(description = "the job id", schema = @Schema(type = "integer", format = "int64")) @PathParam("id") String id) {
        long jobId = JobsResource.parseId(id);
        return JobActions.answer(jobId, store.replay(db, null, jobId), "only a dead or cancelled job can be retried");
    }

    /** dead -> cancelled, kept for the record; a dead head hands its ordering key on. */
    @POST
    @Path("/jobs/{id}/discard")
    @Operation(summary = "Discard a dead job (it becomes cancelled; a dead head hands its ordering key on)", responses = {
            @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = JobView.class))),
            @ApiResponse(responseCode = "404", description = "no such job"),
            @ApiResponse(responseCode = "409", description = "the job is not dead")})
    public JobView discard(@Parameter(description = "the job id", schema = @Schema(type = "integer", format = "int64")) @PathParam("id") String id) {
        long jobId = JobsResource.parseId(id);
        return JobActions.answer(jobId, store.discard(db, null, jobId), "only a dead job can be discarded");
    }

    @GET
    @Path("/ordering-keys/blocked")
    @Operation(summary = "Ordering keys held up by a dead job", responses =
            @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = BlockedKeys.class))))
    public BlockedKeys blocked(@QueryParam("tenant") String tenant) {
        return new BlockedKeys(queries.blockedOrderingKeys(db, blank(tenant), 1000));
    }

    @GET
    @Path("/audit")
    @Operation(summary = "Changes to tenants' limits, newest first", responses = {
            @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = AuditPage.class))),
            @ApiResponse(responseCode = "422", description = "a bad limit or after")})
    public AuditPage audit(@QueryParam("tenant") String tenant,
                           @Parameter(description = "page size", schema = @Schema(type = "integer", minimum = "1", maximum = "1000", defaultValue = "100")) @QueryParam("limit") String limit,
                           @Parameter(description = "the next value of the previous page") @QueryParam("after") String after) {
        List<FieldError> errors = new ArrayList<>();
        int lim = ParameterGuard.pageSize(limit, 100, 1000, errors);
        Long before = ParameterGuard.afterId(after, errors);
        if (!errors.isEmpty()) throw ApiException.invalid(errors);
        List<TenantAdminStore.AuditEntry> entries = tenants.audit(blank(tenant), before, lim + 1);
        boolean more = entries.size() > lim;
        List<TenantAdminStore.AuditEntry> page = more ? entries.subList(0, lim) : entries;
        return new AuditPage(page, more ? Long.toString(page.get(page.size() - 1).id()) : null);
    }

    private static String blank(String s) {
        return s == null || s.isBlank() ? null : s;
    }
}

package dev.fairq.api;

import dev.fairq.schema.JobStore;
import dev.fairq.schema.Leases;
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
import org.jooq.DSLContext;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The worker registry (issue 11): each worker process, what it serves (queues, job types, reserved threads) and
 * when it was last seen. The scheduler routes jobs by the live ones; a job none of them serves waits as
 * {@code no_worker}. One row per process seen within the last hour, so the answer stays small.
 */
@Path("/v1/admin/workers")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "admin: workers", description = "the worker registry: what each worker process serves")
@SecurityRequirement(name = OpenApiDocument.ADMIN_TOKEN)
@jakarta.annotation.security.RolesAllowed(BearerAuthFilter.Role.ADMIN)
public final class AdminWorkersResource {
    private final JobStore store;
    private final DSLContext db;

    AdminWorkersResource(JobStore store, DSLContext db) {
        this.store = store;
        this.db = db;
    }

    @Schema(name = "Worker")
    public record WorkerView(String id, int threads,
                             @Schema(description = "the queues it serves; null: every queue") Set<String> queues,
                             @Schema(description = "the job types it has handlers for; null: every type") Set<String> types,
                             @Schema(description = "threads kept for a queue's jobs, by queue") Map<String, Integer> reserved,
                             Instant startedAt, Instant lastSeen,
                             @Schema(description = "heart-beat within the scheduler's liveness (30 s): jobs are routed to it")
                             boolean live) {}

    @Schema(name = "Workers")
    public record Workers(List<WorkerView> workers) {}

    @GET
    @Operation(summary = "The worker registry: every worker process seen within the last hour, what it serves and "
            + "whether it is live", responses = {
            @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = Workers.class)))})
    public Workers workers() {
        List<WorkerView> out = store.leases().registry(db, Explainer.WORKER_LIVENESS).stream()
                .map(AdminWorkersResource::view).toList();
        return new Workers(out);
    }

    private static WorkerView view(Leases.Registered w) {
        return new WorkerView(w.workerId(), w.threads(), w.route().queues(), w.route().types(), w.route().reserved(),
                w.startedAt().toInstant(), w.lastSeen().toInstant(), w.live());
    }
}

package dev.fairq.api;

import dev.fairq.schema.EnqueueResult;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.JobQueries;
import dev.fairq.schema.JobStore;
import dev.fairq.schema.Waker;
import dev.fairq.schema.generated.enums.JobStatus;
import dev.fairq.schema.generated.tables.records.JobsRecord;
import io.swagger.v3.oas.annotations.Operation;
import io.swagger.v3.oas.annotations.Parameter;
import io.swagger.v3.oas.annotations.headers.Header;
import io.swagger.v3.oas.annotations.media.Content;
import io.swagger.v3.oas.annotations.media.Schema;
import io.swagger.v3.oas.annotations.responses.ApiResponse;
import io.swagger.v3.oas.annotations.security.SecurityRequirement;
import io.swagger.v3.oas.annotations.tags.Tag;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.SecurityContext;
import jakarta.ws.rs.core.UriInfo;
import org.jooq.DSLContext;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** A tenant's jobs: submit (one or a batch), read, list, cancel, retry, explain. Always the caller's tenant. */
@Path("/v1/jobs")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "jobs", description = "a tenant's own jobs (the tenant is the key's)")
@SecurityRequirement(name = OpenApiDocument.TENANT_KEY)
@jakarta.annotation.security.RolesAllowed(BearerAuthFilter.Role.TENANT)
public final class JobsResource {
    private final JobStore store;
    private final JobQueries queries = new JobQueries();
    private final DSLContext db;
    private final Explainer explainer;
    /** Wakes the workers for a job a grant inserted ready, once its statement committed ({@link Waker}). */
    private final Waker workersWaker;
    /** FAIRQ_SUBMIT_START=commit: a job may start at its commit, before the flush the answer waits for. */
    private final boolean startAtCommit;

    JobsResource(JobStore store, DSLContext db, Waker workersWaker, boolean startAtCommit, Explainer explainer) {
        this.store = store;
        this.db = db;
        this.workersWaker = workersWaker;
        this.startAtCommit = startAtCommit;
        this.explainer = explainer;
    }

    /**
     * Runs {@code enqueue} (its own commit included), wakes the workers, and with FAIRQ_SUBMIT_START=commit waits for
     * the flush, all on one connection: the flush covers only what that server committed, so the wait must reach the
     * server the insert committed on. On another connection of the pool, a crash and restart in between (or a
     * failover) would let it succeed for a job the server lost; on this one it fails with the connection.
     */
    private List<EnqueueResult> onOneConnection(java.util.function.Function<DSLContext, List<EnqueueResult>> enqueue) {
        return db.connectionResult(c -> {
            DSLContext one = db.configuration().derive(c).dsl();
            List<EnqueueResult> results = enqueue.apply(one);
            store.startCommitted(results); // a job a grant admitted that this process's worker took in the statement
            wakeForReady(one, results);
            if (startAtCommit) store.awaitDurable(one);
            return results;
        });
    }

    private List<EnqueueResult> enqueue(DSLContext tx, List<JobRequest> requests) {
        return startAtCommit ? store.enqueueAllUnflushed(tx, requests) : store.enqueueAllWakingAfterCommit(tx, requests);
    }

    /**
     * Wakes the workers when a job was inserted ready (a tenant grant admitted it in its enqueue), on the connection
     * the enqueue holds ({@code one}, its commit done): not on a second one of the API pool (Waker#wakeNow(Runnable)).
     */
    private void wakeForReady(DSLContext one, List<EnqueueResult> results) {
        for (EnqueueResult r : results) {
            if (r.created() && r.job().getStatus() == JobStatus.ready) {
                workersWaker.wakeNow(() -> store.leases().wakeWorkers(one));
                return;
            }
        }
    }

    @POST
    @Consumes(MediaType.APPLICATION_JSON)
    @Operation(summary = "Submit a job", responses = {
            @ApiResponse(responseCode = "201", description = "created",
                    headers = @Header(name = "Location", description = "the job's URL", schema = @Schema(type = "string", format = "uri")),
                    content = @Content(schema = @Schema(implementation = JobView.class))),
            @ApiResponse(responseCode = "200", description = "a replay of an identical request with the same job_key: the original job, nothing written",
                    headers = @Header(name = "Idempotent-Replay", description = "always true", schema = @Schema(type = "string", allowableValues = "true")),
                    content = @Content(schema = @Schema(implementation = JobView.class))),
            @ApiResponse(responseCode = "409", description = "the job_key was used by another job with a different request"),
            @ApiResponse(responseCode = "413", description = "the payload is larger than FAIRQ_MAX_PAYLOAD_BYTES"),
            @ApiResponse(responseCode = "429", description = "the tenant has max_queued jobs waiting; nothing was written",
                    headers = @Header(name = "Retry-After", description = "seconds to wait", schema = @Schema(type = "integer")))})
    public Response submit(@Context SecurityContext sc, @Context UriInfo uri, JobSubmission body) {
        String tenant = BearerAuthFilter.tenant(sc);
        JobRequest request = JsonBodyReader.required(body).toRequest(tenant);
        // No transaction around one job: the insert is one statement (a second only when its job_key or
        // ordering key raced another request), each atomic on its own, and a job_key replay writes nothing.
        // Autocommit saves the COMMIT round trip, about a millisecond of enqueue-to-start on an idle server.
        // By default (FAIRQ_SUBMIT_START=commit) the commit does not wait for the WAL flush, so the workers can take
        // the job at once; the answer waits for it (awaitDurable), so nothing answered is ever lost
        // (JobStore#enqueueAllUnflushed). A job a tenant grant inserted ready wakes the workers after the commit,
        // in a statement of its own (Waker; a pending job still wakes the scheduler in the statement: V7's trigger).
        List<EnqueueResult> results = onOneConnection(one -> enqueue(one, List.of(request)));
        EnqueueResult result = results.get(0);
        if (!result.created()) checkReplay(result.job(), request, body.earlierHash(tenant), "", List.of());
        JobView job = JobView.of(result.job());
        if (result.created()) {
            return Response.created(uri.getBaseUriBuilder().path("v1/jobs/{id}").build(job.id())).entity(job).build();
        }
        return Response.ok(job).header("Idempotent-Replay", "true").build();
    }

    /**
     * All or nothing, in one transaction: an invalid item is a 422 naming {@code jobs[i].field} before
     * anything is written, and a job_key reused with a different request rolls the whole batch back (409).
     * Items that replay an earlier identical request return the original job with {@code idempotent_replay}.
     */
    @POST
    @Path("/batch")
    @Consumes(MediaType.APPLICATION_JSON)
    @Operation(summary = "Submit up to 1000 jobs, all or nothing", responses = {
            @ApiResponse(responseCode = "201", description = "at least one job was created",
                    content = @Content(schema = @Schema(implementation = BatchAnswer.class))),
            @ApiResponse(responseCode = "200", description = "every item replayed an earlier identical request (job_key)",
                    content = @Content(schema = @Schema(implementation = BatchAnswer.class))),
            @ApiResponse(responseCode = "409", description = "an item's job_key was used with a different request; nothing was written"),
            @ApiResponse(responseCode = "413", description = "an item's payload is larger than FAIRQ_MAX_PAYLOAD_BYTES"),
            @ApiResponse(responseCode = "429", description = "the batch does not fit under max_queued; nothing was written",
                    headers = @Header(name = "Retry-After", description = "seconds to wait", schema = @Schema(type = "integer")))})
    public Response submitBatch(@Context SecurityContext sc, BatchSubmission body) {
        String tenant = BearerAuthFilter.tenant(sc);
        List<JobRequest> requests = JsonBodyReader.required(body).jobs().stream().map(j -> j.toRequest(tenant)).toList();
        List<EnqueueResult> results = onOneConnection(one -> one.transactionResult(c -> {
            List<EnqueueResult> rs = enqueue(c.dsl(), requests);
            for (int i = 0; i < rs.size(); i++) {
                if (!rs.get(i).created()) {
                    checkReplay(rs.get(i).job(), requests.get(i), body.jobs().get(i).earlierHash(tenant), "jobs[" + i + "].", rs.subList(0, i));
                }
            }
            return rs;
        }));
        List<BatchAnswer.Item> jobs = new ArrayList<>(results.size());
        boolean anyCreated = false;
        for (EnqueueResult r : results) {
            anyCreated |= r.created();
            jobs.add(new BatchAnswer.Item(JobView.of(r.job()), !r.created()));
        }
        return Response.status(anyCreated ? 201 : 200).entity(new BatchAnswer(jobs)).build();
    }

    /** The batch answer, in the order of the request. */
    @Schema(name = "BatchAnswer")
    public record BatchAnswer(List<Item> jobs) {
        @Schema(name = "BatchItem")
        public record Item(JobView job, @Schema(description = "true when the item replayed an earlier identical request") boolean idempotentReplay) {}
    }

    /**
     * A 409 names the job that used the key. When that job is an earlier item of the same batch, it names the
     * item: the 409 rolls the batch back, so its id would name a job that never exists.
     */
    private static void checkReplay(JobsRecord existing, JobRequest request, String earlierHash, String prefix, List<EnqueueResult> earlier) {
        String stored = existing.getRequestHash();
        if (stored == null || !(stored.equals(request.requestHash()) || stored.equals(earlierHash))) {
            String by = "job " + existing.getId();
            for (int k = 0; k < earlier.size(); k++) {
                if (earlier.get(k).created() && earlier.get(k).job().getId().equals(existing.getId())) {
                    by = "jobs[" + k + "] of this batch";
                    break;
                }
            }
            throw new ApiException(409, prefix + "job_key '" + request.jobKey() + "' was already used by " + by
                    + " with a different request", List.of(
                    new dev.fairq.schema.FieldError(prefix + "job_key", "already used by " + by
                            + " with a different request")), Map.of());
        }
    }

    @GET
    @Path("/{id}")
    @Operation(operationId = "getJob", summary = "Read a job", responses = {
            @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = JobView.class))),
            @ApiResponse(responseCode = "404", description = "no job with this id for the caller's tenant")})
    public JobView get(@Context SecurityContext sc, @Parameter(description = "the job id", schema = @Schema(type = "integer", format = "int64")) @PathParam("id") String id) {
        return JobView.of(find(sc, id));
    }

    @GET
    @Operation(operationId = "listJobs", summary = "List the tenant's jobs, newest first, a page at a time (pass next back as after)", responses = {
            @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = JobPage.class))),
            @ApiResponse(responseCode = "422", description = "a bad status, limit or after")})
    public JobPage list(@Context SecurityContext sc, @Parameter(schema = @Schema(allowableValues = {"pending", "ready", "running", "succeeded", "dead", "cancelled"})) @QueryParam("status") String status,
                        @QueryParam("queue") String queue, @QueryParam("type") String type,
                        @QueryParam("ordering_key") String orderingKey, @Parameter(description = "page size", schema = @Schema(type = "integer", minimum = "1", maximum = "" + JobPage.MAX_LIMIT, defaultValue = "" + JobPage.DEFAULT_LIMIT)) @QueryParam("limit") String limit,
                        @Parameter(description = "the next value of the previous page") @QueryParam("after") String after) {
        return JobPage.fetch(queries, db, BearerAuthFilter.tenant(sc), status, queue, type, orderingKey, limit, after);
    }

    /** pending/ready: cancelled at once (200); running: stopping (202); ended: unchanged (200). */
    @POST
    @Path("/{id}/cancel")
    @Operation(operationId = "cancelJob", summary = "Cancel a job: a waiting one at once, a running one is stopped", responses = {
            @ApiResponse(responseCode = "200", description = "the job was pending or ready and is now cancelled, or it had "
                    + "already ended (unchanged)", content = @Content(schema = @Schema(implementation = JobView.class))),
            @ApiResponse(responseCode = "202", description = "the job is running: its worker is told to stop it; it ends "
                    + "cancelled (or succeeded, if it finished first)", content = @Content(schema = @Schema(implementation = JobView.class))),
            @ApiResponse(responseCode = "404", description = "no job with this id for the caller's tenant")})
    public Response cancel(@Context SecurityContext sc, @Parameter(description = "the job id", schema = @Schema(type = "integer", format = "int64")) @PathParam("id") String id) {
        String tenant = BearerAuthFilter.tenant(sc);
        long jobId = parseId(id);
        return JobActions.cancelAnswer(jobId, store.cancel(db, tenant, jobId));
    }

    @POST
    @Path("/{id}/retry")
    @Operation(operationId = "retryJob", summary = "Run a dead or cancelled job again (attempts reset)", responses = {
            @ApiResponse(responseCode = "200", description = "the job as the retry left it",
                    content = @Content(schema = @Schema(implementation = JobView.class))),
            @ApiResponse(responseCode = "404", description = "no job with this id for the caller's tenant"),
            @ApiResponse(responseCode = "409", description = "the job is not dead or cancelled")})
    public JobView retry(@Context SecurityContext sc, @Parameter(description = "the job id", schema = @Schema(type = "integer", format = "int64")) @PathParam("id") String id) {
        String tenant = BearerAuthFilter.tenant(sc);
        long jobId = parseId(id);
        return JobActions.answer(jobId, store.replay(db, tenant, jobId),
                "only a dead or cancelled job can be retried");
    }

    @GET
    @Path("/{id}/explain")
    @Operation(summary = "Why the job is not running", responses = {
            @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = Explainer.Explanation.class))),
            @ApiResponse(responseCode = "404", description = "no job with this id for the caller's tenant")})
    public Explainer.Explanation explain(@Context SecurityContext sc, @Parameter(description = "the job id", schema = @Schema(type = "integer", format = "int64")) @PathParam("id") String id) {
        return explainer.explain(find(sc, id));
    }

    private JobsRecord find(SecurityContext sc, String id) {
        long jobId = parseId(id);
        return store.find(db, BearerAuthFilter.tenant(sc), jobId)
                .orElseThrow(() -> ApiException.notFound("no job " + jobId));
    }

    /** A malformed id names no job of the caller's: 404, like another tenant's id. */
    static long parseId(String id) {
        try {
            return Long.parseLong(id);
        } catch (NumberFormatException e) {
            throw ApiException.notFound("no job " + id);
        }
    }
}

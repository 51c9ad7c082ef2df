package dev.fairq.api;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.schema.EnqueueResult;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.JobQueries;
import dev.fairq.schema.JobStore;
import dev.fairq.schema.generated.tables.records.JobsRecord;
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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** A tenant's jobs: submit (one or a batch), read, list, cancel, retry, explain. Always the caller's tenant. */
@Path("/v1/jobs")
@Produces(MediaType.APPLICATION_JSON)
public final class JobsResource {
    static final int MAX_BATCH = 1000;

    private final JobStore store;
    private final JobQueries queries = new JobQueries();
    private final DSLContext db;
    private final JobRequestParser parser;
    private final Explainer explainer;

    JobsResource(JobStore store, DSLContext db, JobRequestParser parser, Explainer explainer) {
        this.store = store;
        this.db = db;
        this.parser = parser;
        this.explainer = explainer;
    }

    @POST
    @Consumes(MediaType.APPLICATION_JSON)
    public Response submit(@Context SecurityContext sc, @Context UriInfo uri, String body) {
        JobRequest request = parser.parseOne(BearerAuthFilter.tenant(sc), JobRequestParser.readBody(body));
        // No transaction around one job: the insert is one statement (a second only when its job_key or
        // ordering key raced another request), each atomic on its own, and a job_key replay writes nothing.
        // Autocommit saves the COMMIT round trip, about a millisecond of enqueue-to-start on an idle server.
        EnqueueResult result = store.enqueue(db, request);
        if (!result.created()) checkReplay(result.job(), request, "");
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
    public Response submitBatch(@Context SecurityContext sc, String body) {
        List<JobRequest> requests = parser.parseBatch(BearerAuthFilter.tenant(sc), JobRequestParser.readBody(body), MAX_BATCH);
        List<EnqueueResult> results = db.transactionResult(c -> {
            List<EnqueueResult> rs = store.enqueueAll(c.dsl(), requests);
            for (int i = 0; i < rs.size(); i++) {
                if (!rs.get(i).created()) checkReplay(rs.get(i).job(), requests.get(i), "jobs[" + i + "].");
            }
            return rs;
        });
        List<Map<String, Object>> jobs = new ArrayList<>(results.size());
        boolean anyCreated = false;
        for (EnqueueResult r : results) {
            anyCreated |= r.created();
            Map<String, Object> item = new LinkedHashMap<>();
            item.put("job", JobView.of(r.job()));
            item.put("idempotent_replay", !r.created());
            jobs.add(item);
        }
        return Response.status(anyCreated ? 201 : 200).entity(Map.of("jobs", jobs)).build();
    }

    private static void checkReplay(JobsRecord existing, JobRequest request, String prefix) {
        if (existing.getRequestHash() == null || !existing.getRequestHash().equals(request.requestHash())) {
            throw new ApiException(409, prefix + "job_key '" + request.jobKey() + "' was already used by job "
                    + existing.getId() + " with a different request", List.of(
                    new dev.fairq.schema.FieldError(prefix + "job_key", "already used by job " + existing.getId()
                            + " with a different request")), Map.of());
        }
    }

    @GET
    @Path("/{id}")
    public JobView get(@Context SecurityContext sc, @PathParam("id") String id) {
        return JobView.of(find(sc, id));
    }

    @GET
    public JobPage list(@Context SecurityContext sc, @QueryParam("status") String status, @QueryParam("queue") String queue,
                        @QueryParam("type") String type, @QueryParam("ordering_key") String orderingKey,
                        @QueryParam("limit") String limit, @QueryParam("after") String after) {
        return JobPage.fetch(queries, db, BearerAuthFilter.tenant(sc), status, queue, type, orderingKey, limit, after);
    }

    /** pending/ready: cancelled at once (200); running: stopping (202); ended: unchanged (200). */
    @POST
    @Path("/{id}/cancel")
    public Response cancel(@Context SecurityContext sc, @PathParam("id") String id) {
        String tenant = BearerAuthFilter.tenant(sc);
        long jobId = parseId(id);
        return JobActions.cancelAnswer(jobId, store.cancel(db, tenant, jobId));
    }

    @POST
    @Path("/{id}/retry")
    public JobView retry(@Context SecurityContext sc, @PathParam("id") String id) {
        String tenant = BearerAuthFilter.tenant(sc);
        long jobId = parseId(id);
        return JobActions.answer(jobId, store.replay(db, tenant, jobId),
                "only a dead or cancelled job can be retried");
    }

    @GET
    @Path("/{id}/explain")
    public Explainer.Explanation explain(@Context SecurityContext sc, @PathParam("id") String id) {
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

package dev.fairq.api;

import dev.fairq.schema.JobQueries;
import dev.fairq.schema.JobStore;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import org.jooq.DSLContext;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Admin: any tenant's jobs, replay and discard of dead jobs, blocked ordering keys, the audit log. */
@Path("/v1/admin")
@Produces(MediaType.APPLICATION_JSON)
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

    @GET
    @Path("/jobs")
    public JobPage jobs(@QueryParam("tenant") String tenant, @QueryParam("status") String status,
                        @QueryParam("queue") String queue, @QueryParam("type") String type,
                        @QueryParam("ordering_key") String orderingKey, @QueryParam("limit") String limit,
                        @QueryParam("after") String after) {
        return JobPage.fetch(queries, db, blank(tenant), status, queue, type, orderingKey, limit, after);
    }

    @GET
    @Path("/jobs/{id}")
    public JobView job(@PathParam("id") String id) {
        long jobId = JobsResource.parseId(id);
        return JobView.of(store.find(db, jobId).orElseThrow(() -> ApiException.notFound("no job " + jobId)));
    }

    /** Any tenant's job, as {@code POST /v1/jobs/{id}/cancel}: 200 when cancelled or ended, 202 while stopping. */
    @POST
    @Path("/jobs/{id}/cancel")
    public jakarta.ws.rs.core.Response cancel(@PathParam("id") String id) {
        long jobId = JobsResource.parseId(id);
        return JobActions.cancelAnswer(jobId, store.cancel(db, null, jobId));
    }

    /** dead or cancelled -> pending, attempts reset (unblocks its ordering key when it was the dead head). */
    @POST
    @Path("/jobs/{id}/retry")
    public JobView retry(@PathParam("id") String id) {
        long jobId = JobsResource.parseId(id);
        return JobActions.answer(jobId, store.replay(db, null, jobId), "only a dead or cancelled job can be retried");
    }

    /** dead -> cancelled, kept for the record; a dead head hands its ordering key on. */
    @POST
    @Path("/jobs/{id}/discard")
    public JobView discard(@PathParam("id") String id) {
        long jobId = JobsResource.parseId(id);
        return JobActions.answer(jobId, store.discard(db, null, jobId), "only a dead job can be discarded");
    }

    @GET
    @Path("/ordering-keys/blocked")
    public Map<String, Object> blocked(@QueryParam("tenant") String tenant) {
        return Map.of("ordering_keys", queries.blockedOrderingKeys(db, blank(tenant), 1000));
    }

    @GET
    @Path("/audit")
    public Map<String, Object> audit(@QueryParam("tenant") String tenant, @QueryParam("limit") String limit,
                                     @QueryParam("after") String after) {
        int lim = 100;
        Long before = null;
        try {
            if (limit != null && !limit.isBlank()) lim = Integer.parseInt(limit);
        } catch (NumberFormatException e) {
            throw ApiException.invalid("limit", "must be a whole number");
        }
        if (lim < 1 || lim > 1000) throw ApiException.invalid("limit", "must be between 1 and 1000");
        try {
            if (after != null && !after.isBlank()) before = Long.parseLong(after);
        } catch (NumberFormatException e) {
            throw ApiException.invalid("after", "must be the 'next' value of a previous page");
        }
        List<TenantAdminStore.AuditEntry> entries = tenants.audit(blank(tenant), before, lim + 1);
        Map<String, Object> out = new LinkedHashMap<>();
        boolean more = entries.size() > lim;
        List<TenantAdminStore.AuditEntry> page = more ? entries.subList(0, lim) : entries;
        out.put("entries", page);
        out.put("next", more ? Long.toString(page.get(page.size() - 1).id()) : null);
        return out;
    }

    private static String blank(String s) {
        return s == null || s.isBlank() ? null : s;
    }
}

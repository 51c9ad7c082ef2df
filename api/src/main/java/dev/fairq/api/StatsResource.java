package dev.fairq.api;

import dev.fairq.schema.JobQueries;
import dev.fairq.schema.TenantStore;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.SecurityContext;
import org.jooq.DSLContext;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;


/** The caller's own numbers and limits. */
@Path("/v1/stats")
@Produces(MediaType.APPLICATION_JSON)
public final class StatsResource {
    static final Duration RECENT = Duration.ofMinutes(5);
    private final JobQueries queries = new JobQueries();
    private final TenantStore tenants = new TenantStore();
    private final DSLContext db;

    StatsResource(DSLContext db) {
        this.db = db;
    }

    @GET
    public Map<String, Object> stats(@Context SecurityContext sc) {
        String tenant = BearerAuthFilter.tenant(sc);
        JobQueries.TenantStats s = queries.tenantStats(db, tenant, RECENT);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("tenant", tenant);
        out.put("pending", s.pending());
        out.put("ready", s.ready());
        out.put("running", s.running());
        out.put("succeeded_last_5m", s.succeededRecent());
        out.put("dead_last_5m", s.deadRecent());
        out.put("dead_total", s.deadTotal());
        out.put("oldest_pending_age_ms", s.oldestPendingAgeMs());
        out.put("blocked_ordering_keys", s.blockedOrderingKeys());
        out.put("limits", TenantView.of(tenants.find(db, tenant).orElseThrow()).limits());
        return out;
    }
}

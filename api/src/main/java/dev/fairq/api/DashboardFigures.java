package dev.fairq.api;

import dev.fairq.scheduler.ScheduleService;
import dev.fairq.schema.DashboardStore;
import dev.fairq.schema.JobQueries;
import dev.fairq.schema.TenantStore;
import dev.fairq.schema.generated.enums.JobStatus;
import dev.fairq.schema.generated.tables.records.JobsRecord;
import dev.fairq.schema.generated.tables.records.TenantsRecord;
import org.jooq.DSLContext;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;


/**
 * The figures behind the dashboards, assembled from {@link JobQueries} and {@link DashboardStore} reads. The
 * tenant dashboard and the admin overview show the same per-tenant summary ({@link #summary}); the tenant one
 * adds the series and the lists.
 * Every read takes the tenant id from the caller (the key), never from the request.
 */
final class DashboardFigures {
    /** Charts and the rates: the last hour of the rollup. */
    static final Duration WINDOW = Duration.ofHours(1);
    /** Share of worker time: the last five minutes of the rollup (recent enough to show a flood now). */
    static final Duration SHARE_WINDOW = Duration.ofMinutes(5);
    /** Start rate against rate_per_second: live, attempts started in the last minute. */
    static final Duration START_RATE_WINDOW = Duration.ofMinutes(1);
    static final int LIST_LIMIT = 50;

    private final JobQueries queries = new JobQueries();
    private final DashboardStore dashboards = new DashboardStore();
    private final TenantStore tenantStore = new TenantStore();
    private final DSLContext db;

    private final ScheduleService schedules;

    DashboardFigures(DSLContext db, ScheduleService schedules) {
        this.db = db;
        this.schedules = schedules;
    }

    /** The tenant dashboard: summary, per-minute series of the last hour, running jobs, blocked keys, dead letters. */
    Map<String, Object> tenant(String tenantId) {
        TenantsRecord t = tenantStore.find(db, tenantId).orElse(null);
        if (t == null) throw ApiException.notFound("no tenant " + tenantId);
        OffsetDateTime now = queries.now(db);
        JobQueries.TenantStats live = queries.tenantStats(db, tenantId, WINDOW);
        DashboardStore.RollupTotals totals = dashboards.rollupTotals(db, tenantId, WINDOW, SHARE_WINDOW)
                .getOrDefault(tenantId, DashboardStore.RollupTotals.NONE);
        long starts = dashboards.startsSince(db, tenantId, START_RATE_WINDOW).getOrDefault(tenantId, 0L);

        Map<String, Object> out = new LinkedHashMap<>();
        out.put("generated_at", now.toInstant());
        out.putAll(summary(t, live, totals, starts));
        out.put("series", series(dashboards.minuteStats(db, tenantId, WINDOW), now));
        List<Map<String, Object>> running = new ArrayList<>();
        for (DashboardStore.RunningJob r : dashboards.runningJobs(db, tenantId, LIST_LIMIT)) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", r.id());
            m.put("type", r.type());
            m.put("queue", r.queue());
            m.put("attempt", r.attempts());
            m.put("max_attempts", r.maxAttempts());
            m.put("ordering_key", r.orderingKey());
            m.put("started_at", JobView.utc(r.startedAt()));
            m.put("age_ms", r.ageMs());
            running.add(m);
        }
        out.put("running_jobs", running);
        List<Map<String, Object>> blocked = new ArrayList<>();
        for (JobQueries.BlockedKey k : queries.blockedOrderingKeys(db, tenantId, LIST_LIMIT)) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("ordering_key", k.orderingKey());
            m.put("dead_job_id", k.deadJobId());
            m.put("dead_since", JobView.utc(k.deadSince()));
            m.put("last_error", k.lastError());
            m.put("waiting", k.waiting());
            blocked.add(m);
        }
        out.put("blocked_keys", blocked);
        List<Map<String, Object>> dead = new ArrayList<>();
        for (JobsRecord j : queries.list(db, new JobQueries.JobFilter(tenantId, JobStatus.dead, null, null, null), null, LIST_LIMIT)) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", j.getId());
            m.put("type", j.getType());
            m.put("queue", j.getQueue());
            m.put("attempts", j.getAttempts());
            m.put("ordering_key", j.getOrderingKey());
            m.put("finished_at", JobView.utc(j.getFinishedAt()));
            m.put("last_error", j.getLastError());
            dead.add(m);
        }
        out.put("dead_letters", dead);
        // the tenant's schedules, next to fire first, with the last fire's job status (at most max_schedules)
        out.put("schedules", schedules.byNextFire(db, tenantId, LIST_LIMIT));
        return out;
    }

    /** Every tenant's summary, with its share of worker time against its share of the weights. */
    Map<String, Object> overview() {
        OffsetDateTime now = queries.now(db);
        Map<String, Map<String, Long>> depths = queries.queueDepths(db);
        Map<String, Long> oldest = queries.oldestPendingAgeMs(db);
        Map<String, DashboardStore.RollupTotals> totals = dashboards.rollupTotals(db, null, WINDOW, SHARE_WINDOW);
        Map<String, Long> starts = dashboards.startsSince(db, null, START_RATE_WINDOW);
        Map<String, Long> blocked = new HashMap<>();
        for (JobQueries.BlockedKey k : queries.blockedOrderingKeys(db, null, 10_000)) blocked.merge(k.tenantId(), 1L, Long::sum);
        List<TenantsRecord> tenants = tenantStore.list(db);

        // Share of worker time over the last five minutes: worker time of the attempts that ended (busy_ms).
        // Jobs of a millisecond or less round that to nothing, so below a second of total worker time the
        // share is taken from attempts started instead (the answer says which).
        long totalBusy = 0, totalStarted = 0;
        for (DashboardStore.RollupTotals x : totals.values()) {
            totalBusy += x.busyMsRecent();
            totalStarted += x.startedRecent();
        }
        boolean byTime = totalBusy >= 1000;
        // Weight share among the active tenants (work waiting or running now, or worker time in the window):
        // weighted fair queueing divides the workers among those, so that is what each is entitled to.
        long activeWeight = 0;
        List<Boolean> active = new ArrayList<>();
        for (TenantsRecord t : tenants) {
            Map<String, Long> d = depths.getOrDefault(t.getId(), Map.of());
            DashboardStore.RollupTotals x = totals.getOrDefault(t.getId(), DashboardStore.RollupTotals.NONE);
            // a paused tenant's waiting jobs claim no share: it cannot start them
            boolean a = (!t.getPaused() && d.getOrDefault("pending", 0L) + d.getOrDefault("ready", 0L) > 0)
                    || d.getOrDefault("running", 0L) > 0 || x.busyMsRecent() > 0 || x.startedRecent() > 0;
            active.add(a);
            if (a) activeWeight += t.getWeight();
        }
        long activeCount = active.stream().filter(Boolean::booleanValue).count();

        List<Map<String, Object>> rows = new ArrayList<>();
        for (int i = 0; i < tenants.size(); i++) {
            TenantsRecord t = tenants.get(i);
            Map<String, Long> d = depths.getOrDefault(t.getId(), Map.of());
            JobQueries.TenantStats live = new JobQueries.TenantStats(d.getOrDefault("pending", 0L), d.getOrDefault("ready", 0L),
                    d.getOrDefault("running", 0L), 0, 0, d.getOrDefault("dead", 0L), oldest.get(t.getId()),
                    blocked.getOrDefault(t.getId(), 0L));
            DashboardStore.RollupTotals x = totals.getOrDefault(t.getId(), DashboardStore.RollupTotals.NONE);
            Map<String, Object> row = summary(t, live, x, starts.getOrDefault(t.getId(), 0L));
            Double workerShare = byTime ? share(x.busyMsRecent(), totalBusy) : share(x.startedRecent(), totalStarted);
            Double weightShare = active.get(i) && activeWeight > 0 ? (double) t.getWeight() / activeWeight : null;
            row.put("active", active.get(i));
            row.put("worker_share", workerShare);
            row.put("weight_share", weightShare);
            // A noisy neighbour: takes clearly more of the workers than its weight entitles it to while
            // other tenants are active too (alone, a tenant may use every worker: that is work conservation).
            boolean noisy = activeCount > 1 && workerShare != null && weightShare != null
                    && workerShare > 0.1 && workerShare > 1.5 * weightShare;
            row.put("over_share", noisy);
            rows.add(row);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("generated_at", now.toInstant());
        out.put("window_minutes", WINDOW.toMinutes());
        out.put("share_window_minutes", SHARE_WINDOW.toMinutes());
        out.put("worker_share_basis", byTime ? "worker_time" : "attempts_started");
        out.put("tenants", rows);
        return out;
    }

    private static Double share(long part, long total) {
        return total == 0 ? null : (double) part / total;
    }

    /** The figures both pages show for one tenant. */
    private static Map<String, Object> summary(TenantsRecord t, JobQueries.TenantStats live, DashboardStore.RollupTotals h, long starts) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("tenant", t.getId());
        Map<String, Object> counts = new LinkedHashMap<>();
        counts.put("pending", live.pending());
        counts.put("ready", live.ready());
        counts.put("running", live.running());
        counts.put("dead", live.deadTotal());
        counts.put("started_last_hour", h.started());
        counts.put("succeeded_last_hour", h.succeeded());
        counts.put("failed_last_hour", h.failed());
        counts.put("dead_last_hour", h.dead());
        m.put("counts", counts);
        m.put("oldest_pending_age_ms", live.oldestPendingAgeMs());
        m.put("blocked_ordering_keys", live.blockedOrderingKeys());
        // rates over the attempts that ended in the hour: succeeded, failed and retried, or dead
        long ended = h.succeeded() + h.failed() + h.dead();
        m.put("success_rate", ended == 0 ? null : (double) h.succeeded() / ended);
        m.put("failure_rate", ended == 0 ? null : (double) (h.failed() + h.dead()) / ended);
        Map<String, Object> limits = new LinkedHashMap<>();
        limits.put("weight", t.getWeight());
        limits.put("max_running", t.getMaxRunning());
        limits.put("rate_per_second", t.getRatePerSecond());
        limits.put("burst", t.getBurst());
        limits.put("max_queued", t.getMaxQueued());
        limits.put("paused", t.getPaused());
        m.put("limits", limits);
        Map<String, Object> usage = new LinkedHashMap<>();
        usage.put("running", live.running());
        usage.put("start_rate_per_second", starts / (double) START_RATE_WINDOW.toSeconds());
        usage.put("queued", live.pending() + live.ready());
        m.put("usage", usage);
        m.put("worker_time_ms_last_5m", h.busyMsRecent());
        m.put("started_last_5m", h.startedRecent());
        return m;
    }

    /**
     * One point per minute of the window, oldest first, on the database clock: a minute without a row had no
     * events (counts 0) and, if the rollup did not run then, an unknown depth (null: a gap in the chart).
     */
    private static List<Map<String, Object>> series(List<DashboardStore.MinuteStats> rows, OffsetDateTime now) {
        Map<java.time.Instant, DashboardStore.MinuteStats> byMinute = new HashMap<>();
        for (DashboardStore.MinuteStats r : rows) byMinute.put(r.minute().toInstant(), r);
        java.time.Instant current = now.toInstant().truncatedTo(ChronoUnit.MINUTES);
        List<Map<String, Object>> out = new ArrayList<>();
        for (long i = WINDOW.toMinutes() - 1; i >= 0; i--) {
            java.time.Instant minute = current.minus(i, ChronoUnit.MINUTES);
            DashboardStore.MinuteStats r = byMinute.get(minute);
            Map<String, Object> p = new LinkedHashMap<>();
            p.put("minute", minute);
            p.put("started", r == null ? 0 : r.started());
            p.put("succeeded", r == null ? 0 : r.succeeded());
            p.put("failed", r == null ? 0 : r.failed());
            p.put("dead", r == null ? 0 : r.dead());
            p.put("pending", r == null ? null : r.pending());
            p.put("ready", r == null ? null : r.ready());
            p.put("running", r == null ? null : r.running());
            p.put("oldest_pending_age_ms", r == null ? null : r.oldestPendingAgeMs());
            out.add(p);
        }
        return out;
    }
}

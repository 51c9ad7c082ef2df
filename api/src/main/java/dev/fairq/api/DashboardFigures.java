package dev.fairq.api;

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

    DashboardFigures(DSLContext db) {
        this.db = db;
    }

    /** The tenant dashboard: summary, per-minute series of the last hour, running jobs, blocked keys, dead letters. */
    DashboardViews.TenantDashboard tenant(String tenantId) {
        TenantsRecord t = tenantStore.find(db, tenantId).orElse(null);
        if (t == null) throw ApiException.notFound("no tenant " + tenantId);
        OffsetDateTime now = queries.now(db);
        JobQueries.TenantStats live = queries.tenantStats(db, tenantId, WINDOW);
        DashboardStore.RollupTotals totals = dashboards.rollupTotals(db, tenantId, WINDOW, SHARE_WINDOW)
                .getOrDefault(tenantId, DashboardStore.RollupTotals.NONE);
        long starts = dashboards.startsSince(db, tenantId, START_RATE_WINDOW).getOrDefault(tenantId, 0L);

        List<DashboardViews.RunningJob> running = new ArrayList<>();
        for (DashboardStore.RunningJob r : dashboards.runningJobs(db, tenantId, LIST_LIMIT)) {
            running.add(new DashboardViews.RunningJob(r.id(), r.type(), r.queue(), r.attempts(), r.maxAttempts(),
                    r.orderingKey(), JobView.utc(r.startedAt()), r.ageMs()));
        }
        List<DashboardViews.BlockedKey> blocked = new ArrayList<>();
        for (JobQueries.BlockedKey k : queries.blockedOrderingKeys(db, tenantId, LIST_LIMIT)) {
            blocked.add(new DashboardViews.BlockedKey(k.orderingKey(), k.deadJobId(), JobView.utc(k.deadSince()),
                    k.lastError(), k.waiting()));
        }
        List<DashboardViews.DeadLetter> dead = new ArrayList<>();
        for (JobsRecord j : queries.list(db, new JobQueries.JobFilter(tenantId, JobStatus.dead, null, null, null), null, LIST_LIMIT)) {
            dead.add(new DashboardViews.DeadLetter(j.getId(), j.getType(), j.getQueue(), j.getAttempts(), j.getOrderingKey(),
                    JobView.utc(j.getFinishedAt()), j.getLastError()));
        }
        return new DashboardViews.TenantDashboard(now.toInstant(), summary(t, live, totals, starts),
                series(dashboards.minuteStats(db, tenantId, WINDOW), now), running, blocked, dead);
    }

    /** Every tenant's summary, with its share of worker time against its share of the weights. */
    DashboardViews.Overview overview() {
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

        List<DashboardViews.OverviewRow> rows = new ArrayList<>();
        for (int i = 0; i < tenants.size(); i++) {
            TenantsRecord t = tenants.get(i);
            Map<String, Long> d = depths.getOrDefault(t.getId(), Map.of());
            JobQueries.TenantStats live = new JobQueries.TenantStats(d.getOrDefault("pending", 0L), d.getOrDefault("ready", 0L),
                    d.getOrDefault("running", 0L), 0, 0, d.getOrDefault("dead", 0L), oldest.get(t.getId()),
                    blocked.getOrDefault(t.getId(), 0L));
            DashboardStore.RollupTotals x = totals.getOrDefault(t.getId(), DashboardStore.RollupTotals.NONE);
            DashboardViews.Summary summary = summary(t, live, x, starts.getOrDefault(t.getId(), 0L));
            Double workerShare = byTime ? share(x.busyMsRecent(), totalBusy) : share(x.startedRecent(), totalStarted);
            Double weightShare = active.get(i) && activeWeight > 0 ? (double) t.getWeight() / activeWeight : null;
            // A noisy neighbour: takes clearly more of the workers than its weight entitles it to while
            // other tenants are active too (alone, a tenant may use every worker: that is work conservation).
            boolean noisy = activeCount > 1 && workerShare != null && weightShare != null
                    && workerShare > 0.1 && workerShare > 1.5 * weightShare;
            rows.add(new DashboardViews.OverviewRow(summary, active.get(i), workerShare, weightShare, noisy));
        }
        return new DashboardViews.Overview(now.toInstant(), WINDOW.toMinutes(), SHARE_WINDOW.toMinutes(),
                byTime ? "worker_time" : "attempts_started", rows);
    }

    private static Double share(long part, long total) {
        return total == 0 ? null : (double) part / total;
    }

    /** The figures both pages show for one tenant. */
    private static DashboardViews.Summary summary(TenantsRecord t, JobQueries.TenantStats live, DashboardStore.RollupTotals h, long starts) {
        DashboardViews.Counts counts = new DashboardViews.Counts(live.pending(), live.ready(), live.running(), live.deadTotal(),
                h.started(), h.succeeded(), h.failed(), h.dead());
        // rates over the attempts that ended in the hour: succeeded, failed and retried, or dead
        long ended = h.succeeded() + h.failed() + h.dead();
        DashboardViews.Limits limits = new DashboardViews.Limits(t.getWeight(), t.getMaxRunning(), t.getRatePerSecond(),
                t.getBurst(), t.getMaxQueued(), t.getPaused());
        DashboardViews.Usage usage = new DashboardViews.Usage(live.running(),
                starts / (double) START_RATE_WINDOW.toSeconds(), live.pending() + live.ready());
        return new DashboardViews.Summary(t.getId(), counts, live.oldestPendingAgeMs(), live.blockedOrderingKeys(),
                ended == 0 ? null : (double) h.succeeded() / ended, ended == 0 ? null : (double) (h.failed() + h.dead()) / ended,
                limits, usage, h.busyMsRecent(), h.startedRecent());
    }

    /**
     * One point per minute of the window, oldest first, on the database clock: a minute without a row had no
     * events (counts 0) and, if the rollup did not run then, an unknown depth (null: a gap in the chart).
     */
    private static List<DashboardViews.SeriesPoint> series(List<DashboardStore.MinuteStats> rows, OffsetDateTime now) {
        Map<java.time.Instant, DashboardStore.MinuteStats> byMinute = new HashMap<>();
        for (DashboardStore.MinuteStats r : rows) byMinute.put(r.minute().toInstant(), r);
        java.time.Instant current = now.toInstant().truncatedTo(ChronoUnit.MINUTES);
        List<DashboardViews.SeriesPoint> out = new ArrayList<>();
        for (long i = WINDOW.toMinutes() - 1; i >= 0; i--) {
            java.time.Instant minute = current.minus(i, ChronoUnit.MINUTES);
            DashboardStore.MinuteStats r = byMinute.get(minute);
            out.add(r == null ? new DashboardViews.SeriesPoint(minute, 0, 0, 0, 0, null, null, null, null)
                    : new DashboardViews.SeriesPoint(minute, r.started(), r.succeeded(), r.failed(), r.dead(), r.pending(),
                    r.ready(), r.running(), r.oldestPendingAgeMs()));
        }
        return out;
    }
}

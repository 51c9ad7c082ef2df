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
import java.util.Comparator;
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
    static final int LIST_LIMIT = 50;
    /** Keys on the tenant dashboard: the busiest ten (a tenant may have thousands of customers as keys). */
    static final int TOP_KEYS = 10;
    /** Recent jobs on the tenant dashboard. */
    static final int RECENT_JOBS = 10;

    private final JobQueries queries = new JobQueries();
    private final DashboardStore dashboards = new DashboardStore();
    private final TenantStore tenantStore = new TenantStore();
    private final DSLContext db;

    private final ScheduleService schedules;

    DashboardFigures(DSLContext db, ScheduleService schedules) {
        this.db = db;
        this.schedules = schedules;
    }

    /**
     * The tenant dashboard: summary, per-minute series of the last hour, running jobs, blocked keys, dead letters.
     * The head (tenant, clock, live counts, the hour's totals) is one statement; a list is read only when the
     * head counted something for it (no running jobs: no running list, and so on), so a tenant with nothing
     * running, dead, blocked or scheduled costs three statements (the recent jobs are always read). Eleven round
     * trips of the API's pool before.
     */
    DashboardViews.TenantDashboard tenant(String tenantId) {
        DashboardStore.TenantHead head = dashboards.tenantHead(db, tenantId, WINDOW, SHARE_WINDOW)
                .orElseThrow(() -> ApiException.notFound("no tenant " + tenantId));
        TenantsRecord t = head.tenant();
        OffsetDateTime now = head.now();
        JobQueries.TenantStats live = head.live();

        List<DashboardViews.RunningJob> running = new ArrayList<>();
        if (live.running() > 0) {
            for (DashboardStore.RunningJob r : dashboards.runningJobs(db, tenantId, LIST_LIMIT)) {
                running.add(new DashboardViews.RunningJob(r.id(), r.type(), r.queue(), r.attempts(), r.maxAttempts(),
                        r.orderingKey(), JobView.utc(r.startedAt()), r.ageMs()));
            }
        }
        List<DashboardViews.BlockedKey> blocked = new ArrayList<>();
        if (live.blockedOrderingKeys() > 0) {
            for (JobQueries.BlockedKey k : queries.blockedOrderingKeys(db, tenantId, LIST_LIMIT)) {
                blocked.add(new DashboardViews.BlockedKey(k.orderingKey(), k.deadJobId(), JobView.utc(k.deadSince()),
                        k.lastError(), k.waiting()));
            }
        }
        List<DashboardViews.DeadLetter> dead = new ArrayList<>();
        if (live.deadTotal() > 0) {
            for (JobsRecord j : queries.list(db, new JobQueries.JobFilter(tenantId, JobStatus.dead, null, null, null), null, LIST_LIMIT)) {
                dead.add(new DashboardViews.DeadLetter(j.getId(), j.getType(), j.getQueue(), j.getAttempts(), j.getOrderingKey(),
                        JobView.utc(j.getFinishedAt()), j.getLastError()));
            }
        }
        // the busiest keys among the tenant's ready and running jobs (none admitted or running: none to show)
        Map<String, Integer> keyLimits = dev.fairq.schema.TenantLimits.keyMap(t.getConcurrencyLimits());
        Map<String, Integer> keyWeights = dev.fairq.schema.TenantLimits.keyMap(t.getKeyWeights());
        List<DashboardViews.KeyUsage> topKeys = new ArrayList<>();
        if (live.ready() + live.running() > 0) {
            for (JobQueries.KeyUsage k : queries.topKeys(db, tenantId, TOP_KEYS)) {
                boolean concurrency = k.kind().equals("concurrency");
                topKeys.add(new DashboardViews.KeyUsage(k.kind(), k.key(), k.running(), k.admitted(),
                        concurrency ? keyLimits.get(k.key()) : null,
                        concurrency ? null : keyWeights.getOrDefault(k.key(), 1)));
            }
        }
        // the tenant's schedules, next to fire first, with the last fire's job status (at most max_schedules)
        List<dev.fairq.scheduler.ScheduleInfo> scheduled = head.hasSchedules()
                ? schedules.byNextFire(db, tenantId, LIST_LIMIT) : List.of();
        // the newest jobs here rather than from a second request: the page's two requests at once were a 429 at every
        // refresh for a tenant with an api_burst of 1, whose dashboard never showed
        List<DashboardViews.RecentJob> recent = new ArrayList<>();
        for (JobsRecord j : queries.list(db, new JobQueries.JobFilter(tenantId, null, null, null, null), null, RECENT_JOBS)) {
            recent.add(new DashboardViews.RecentJob(j.getId(), j.getType(), j.getQueue(), j.getStatus().getLiteral(),
                    j.getAttempts(), JobView.utc(j.getCreatedAt())));
        }
        return new DashboardViews.TenantDashboard(now.toInstant(), summary(t, live, head.totals()),
                series(dashboards.minuteStats(db, tenantId, WINDOW), now), running, blocked, dead, scheduled, topKeys, recent);
    }

    /** The overview's page size when none is asked for, and the most a page may hold. */
    static final int DEFAULT_PAGE = 50, MAX_PAGE = 500;
    /** A search by id prefix looks at this many matching tenants at most (in id order). */
    static final int MAX_SEARCH_MATCHES = 1000;
    /** The registered-tenant count is a count of the tenants table (40 ms at 1,000,000): kept this long. */
    static final Duration REGISTERED_COUNT_TTL = Duration.ofSeconds(30);
    private volatile long registeredTenants = -1;
    private volatile long registeredCountedAt;

    /**
     * The admin overview: totals over every active tenant, then one page of tenants, sorted (those taking more
     * than their share first, then by backlog, then by id), optionally only those whose id starts with
     * {@code search}. Its cost follows the active tenants (their rows of the last five minutes of the rollup)
     * plus one page: it never ships, or reads, every tenant. A tenant is active when the rollup saw it run
     * something or hold waiting jobs in the window (so its figures trail by at most the rollup's 10 s); a
     * search also finds idle tenants.
     */
    DashboardViews.Overview overview(int offset, int limit, String search) {
        OffsetDateTime now = queries.now(db);
        List<DashboardStore.Activity> active = dashboards.activity(db, SHARE_WINDOW, null);

        // Share of worker time over the last five minutes: worker time of the attempts that ended (busy_ms).
        // Jobs of a millisecond or less round that to nothing, so below a second of total worker time the
        // share is taken from attempts started instead (the answer says which).
        long totalBusy = 0, totalStarted = 0, activeWeight = 0, activeCount = 0;
        long pending = 0, ready = 0, running = 0;
        Map<String, DashboardStore.Activity> byTenant = new HashMap<>();
        for (DashboardStore.Activity x : active) {
            byTenant.put(x.tenantId(), x);
            totalBusy += x.busyMs();
            totalStarted += x.started();
            pending += x.pending();
            ready += x.ready();
            running += x.running();
            if (isActive(x)) {
                activeWeight += x.weight();
                activeCount++;
            }
        }
        boolean byTime = totalBusy >= 1000;

        List<DashboardStore.Activity> rows;
        if (search == null) {
            rows = new ArrayList<>(active);
        } else {
            // the active tenants it matches, whatever their id (a busy one must not hide behind 1,000 idle ones
            // that sort before it), then idle ones, the first MAX_SEARCH_MATCHES by id: read past as many matches as
            // are active (the first 1,000 matches less the active ones among them had listed fewer idle tenants,
            // the more active ones sorted among them); one range of the index, as long as the active matches
            rows = new ArrayList<>();
            for (DashboardStore.Activity x : active) if (x.tenantId().startsWith(search)) rows.add(x);
            int idle = 0;
            for (TenantsRecord t : tenantStore.byIdPrefix(db, search, MAX_SEARCH_MATCHES + rows.size())) {
                if (byTenant.containsKey(t.getId())) continue; // listed above
                if (++idle > MAX_SEARCH_MATCHES) break;
                rows.add(new DashboardStore.Activity(t.getId(), t.getWeight(), t.getPaused(), 0, 0, 0, 0, 0));
            }
        }
        record Row(DashboardStore.Activity a, Double workerShare, Double weightShare, boolean overShare) {}
        long busy = totalBusy, started = totalStarted, weights = activeWeight, competing = activeCount;
        java.util.function.Function<DashboardStore.Activity, Row> row = x -> {
            Double workerShare = byTime ? share(x.busyMs(), busy) : share(x.started(), started);
            // weighted fair queueing divides the workers among the active tenants: that is what each is owed
            Double weightShare = isActive(x) && weights > 0 ? (double) x.weight() / weights : null;
            // A noisy neighbour: takes clearly more of the workers than its weight entitles it to while other
            // tenants are active too (alone, a tenant may use every worker: that is work conservation).
            boolean noisy = competing > 1 && workerShare != null && weightShare != null
                    && workerShare > 0.1 && workerShare > 1.5 * weightShare;
            return new Row(x, workerShare, weightShare, noisy);
        };
        List<Row> sorted = new ArrayList<>(rows.size());
        for (DashboardStore.Activity x : rows) sorted.add(row.apply(x));
        // the totals are over every active tenant, with a search too (it had counted the matches only)
        long overShare = search == null ? sorted.stream().filter(Row::overShare).count()
                : active.stream().filter(x -> row.apply(x).overShare()).count();
        sorted.sort(Comparator.comparing((Row r) -> !r.overShare())
                .thenComparing(Comparator.comparingLong((Row r) -> r.a().pending() + r.a().ready()).reversed())
                .thenComparing(r -> r.a().tenantId()));

        int from = Math.min(offset, sorted.size());
        List<Row> page = sorted.subList(from, Math.min(sorted.size(), from + limit));
        List<String> ids = page.stream().map(r -> r.a().tenantId()).toList();
        Map<String, TenantsRecord> records = new HashMap<>();
        for (TenantsRecord t : tenantStore.byIds(db, ids)) records.put(t.getId(), t);
        Map<String, DashboardStore.RollupTotals> totals = dashboards.rollupTotals(db, ids, WINDOW, SHARE_WINDOW);
        Map<String, Long> dead = queries.deadCounts(db, ids);
        Map<String, Long> oldest = queries.oldestPendingAgeMs(db, ids);
        // counted for the page's tenants only: the first 10,000 blocked keys of all tenants (by tenant id) had
        // been read and filtered, so a tenant sorting after them showed 0
        Map<String, Long> blocked = queries.blockedKeyCounts(db, ids);

        List<DashboardViews.OverviewRow> out = new ArrayList<>();
        for (Row r : page) {
            TenantsRecord t = records.get(r.a().tenantId());
            if (t == null) continue; // deleted since the rollup saw it
            String id = t.getId();
            JobQueries.TenantStats live = new JobQueries.TenantStats(r.a().pending(), r.a().ready(), r.a().running(),
                    0, 0, dead.getOrDefault(id, 0L), oldest.get(id), blocked.getOrDefault(id, 0L));
            out.add(new DashboardViews.OverviewRow(summary(t, live, totals.getOrDefault(id, DashboardStore.RollupTotals.NONE)),
                    isActive(r.a()), r.workerShare(), r.weightShare(), r.overShare()));
        }
        DashboardViews.OverviewTotals sums = new DashboardViews.OverviewTotals(registeredTenants(), activeCount,
                overShare, pending, ready, running, totalStarted, totalBusy);
        DashboardViews.Page pageInfo = new DashboardViews.Page(offset, limit, sorted.size(),
                from + page.size() < sorted.size() ? from + page.size() : null, search);
        return new DashboardViews.Overview(now.toInstant(), WINDOW.toMinutes(), SHARE_WINDOW.toMinutes(),
                byTime ? "worker_time" : "attempts_started", sums, pageInfo, out);
    }

    /** Active: work waiting that it may start, or work running or done in the window. */
    private static boolean isActive(DashboardStore.Activity x) {
        // a paused tenant's waiting jobs claim no share: it cannot start them
        return (!x.paused() && x.pending() + x.ready() > 0) || x.running() > 0 || x.busyMs() > 0 || x.started() > 0;
    }

    private long registeredTenants() {
        long now = System.nanoTime();
        if (registeredTenants < 0 || now - registeredCountedAt > REGISTERED_COUNT_TTL.toNanos()) {
            registeredTenants = tenantStore.count(db);
            registeredCountedAt = now;
        }
        return registeredTenants;
    }

    private static Double share(long part, long total) {
        return total == 0 ? null : (double) part / total;
    }

    /** The figures both pages show for one tenant. */
    private static DashboardViews.Summary summary(TenantsRecord t, JobQueries.TenantStats live, DashboardStore.RollupTotals h) {
        DashboardViews.Counts counts = new DashboardViews.Counts(live.pending(), live.ready(), live.running(), live.deadTotal(),
                h.started(), h.succeeded(), h.failed(), h.dead());
        // rates over the attempts that ended in the hour: succeeded, failed and retried, or dead
        long ended = h.succeeded() + h.failed() + h.dead();
        DashboardViews.Limits limits = new DashboardViews.Limits(t.getWeight(), t.getMaxRunning(), t.getRatePerSecond(),
                t.getBurst(), t.getMaxQueued(), t.getPaused());
        DashboardViews.Usage usage = new DashboardViews.Usage(live.running(),
                h.startRatePerSecond(), live.pending() + live.ready());
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

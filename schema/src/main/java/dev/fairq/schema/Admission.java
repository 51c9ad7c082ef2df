package dev.fairq.schema;

import org.jooq.DSLContext;
import org.jooq.Record;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Admission, the scheduler's side of the queue: what a tick reads (the load), the candidates of the tenants
 * it may serve, the statement that moves the chosen jobs to ready, and admission grants. Every statement here
 * runs on the active scheduler's lock connection (the fence; see SchedulerService).
 */
public final class Admission {
    /**
     * Per tenant, its next admissible due jobs in aging order, for the tenants the scheduler names with how
     * many it may take from each. One index probe per named tenant on jobs_admit_idx, never a scan of the
     * backlog: cost grows with the tenants that have room, not with the jobs waiting.
     */
    static final NamedSql CANDIDATES = NamedSql.of("""
            SELECT l.tenant_id, c.id, c.sort_key, c.queue, c.type
            FROM unnest(:tenant_ids::text[], :limits::integer[]) AS l(tenant_id, lim)
            CROSS JOIN LATERAL (
                SELECT j.id, j.sort_key, j.queue, j.type FROM jobs j
                WHERE j.tenant_id = l.tenant_id AND j.status = 'pending'
                  AND (j.ordering_key IS NULL OR j.key_head) AND j.no_worker_since IS NULL AND j.run_at <= :now
                ORDER BY j.sort_key, j.id
                LIMIT l.lim
            ) c
            """);

    /**
     * Moves the chosen jobs to ready in one statement, each with the rank (start tag) the scheduler gave it;
     * workers claim in rank order. The status re-check makes a job cancelled meanwhile simply drop out.
     * pg_notify wakes idle workers; PostgreSQL delivers it at commit and folds duplicates into one.
     *
     * <p>The arrays go through a one-row MATERIALIZED CTE so that they are parsed once per statement. Arrays
     * are bound as text plus a cast, and in a generic (prepared) plan a cast written inside a per-row
     * expression is evaluated for every row: that parsing made this statement cost 55 µs per job instead of
     * 7 (see bench/RESULTS.md). COMPLETE and FAIL use the same shape for the same reason.
     */
    static final NamedSql ADMIT = NamedSql.of("""
            WITH picks AS MATERIALIZED (
                SELECT :ranks::double precision[] AS ranks, :ids::bigint[] AS ids
            ), admitted AS (
                UPDATE jobs j
                SET status = 'ready', admitted_at = :now, ready_rank = p.ranks[array_position(p.ids, j.id)]
                FROM picks p
                WHERE j.id = ANY(p.ids) AND j.status = 'pending'
                RETURNING j.id, j.tenant_id
            )
            SELECT admitted.id, admitted.tenant_id, pg_notify('fairq_ready', '')
            FROM admitted
            """);

    /**
     * Everything a tick needs to know, in one round trip: ready and running counts per tenant, the live
     * worker capacity, the lowest and highest rank in the ready buffer, and the grants. One branch per status
     * so each is served by its own small partial index (a single "status IN (...)" is planned as a scan of
     * the whole table). Its cost follows the ready buffer, the running jobs and the grants, all bounded by the
     * worker capacity: which tenants have work waiting is not read here but kept in the scheduler's memory
     * (wake-ups name the tenant; {@link #TENANTS_WITH_WORK} rebuilds it). The ready jobs are counted per
     * queue and type too (the same rows, grouped finer), so that jobs no live worker can run are found in the
     * buffer (routing: a job inserted ready by a grant, or the buffer of a worker that died).
     */
    static final NamedSql LOAD = NamedSql.of("""
            SELECT 'ready' AS what, tenant_id, count(*)::double precision AS n, queue, type
            FROM jobs WHERE status = 'ready' GROUP BY tenant_id, queue, type
            UNION ALL
            SELECT 'running', tenant_id, count(*), NULL, NULL FROM jobs WHERE status = 'running' GROUP BY tenant_id
            UNION ALL
            SELECT 'capacity', NULL, coalesce(sum(capacity), 0), NULL, NULL FROM workers
            WHERE heartbeat_at > :now - :liveness_ms * interval '1 millisecond'
            UNION ALL
            SELECT 'next_rank', NULL, (SELECT min(ready_rank) FROM jobs WHERE status = 'ready' AND ready_rank > '-Infinity'),
                   NULL, NULL
            UNION ALL
            SELECT 'last_rank', NULL, (SELECT max(ready_rank) FROM jobs WHERE status = 'ready'), NULL, NULL
            UNION ALL
            SELECT 'grant', tenant_id, extract(epoch FROM :now - granted_at)::double precision, NULL, NULL
            FROM admission_grants
            """);

    /**
     * The tenants with admissible pending jobs, due or not: a loose index scan over jobs_admit_idx, one probe
     * per distinct tenant (never a walk of the backlog, never the tenants table). The scheduler reads it when
     * it becomes the leader and, as a safety net, every few seconds; between those its wake-ups keep it
     * current. Cost: the tenants that have work, not those that exist.
     */
    static final NamedSql TENANTS_WITH_WORK = NamedSql.of("""
            WITH RECURSIVE with_work(tenant_id) AS (
                (SELECT tenant_id FROM jobs
                 WHERE status = 'pending' AND (ordering_key IS NULL OR key_head) AND no_worker_since IS NULL
                 ORDER BY tenant_id LIMIT 1)
                UNION ALL
                SELECT (SELECT j.tenant_id FROM jobs j
                        WHERE j.status = 'pending' AND (j.ordering_key IS NULL OR j.key_head)
                          AND j.no_worker_since IS NULL AND j.tenant_id > w.tenant_id
                        ORDER BY j.tenant_id LIMIT 1)
                FROM with_work w WHERE w.tenant_id IS NOT NULL
            )
            SELECT tenant_id FROM with_work WHERE tenant_id IS NOT NULL
            """);

    /**
     * For tenants that have nothing due now, how long until their next admissible job is due (null: none
     * waits). One probe of jobs_due_later_idx per tenant: only delayed, scheduled and retried jobs are in it.
     * A job that came due between the candidate probe and this one (a 10 ms retry) is not left out: its
     * negative wait becomes a timer of 0 (it used to drop out of the active set until the minute's rescan). The
     * jobs the round is admitting are left out by id (they are still pending at this point).
     */
    static final NamedSql NEXT_DUE = NamedSql.of("""
            SELECT t.tenant_id,
                   (SELECT (fairq_epoch(min(j.run_at)) - fairq_epoch(:now)) * 1000 FROM jobs j
                    WHERE j.tenant_id = t.tenant_id AND j.status = 'pending' AND j.run_at > j.created_at
                      AND (j.ordering_key IS NULL OR j.key_head) AND j.no_worker_since IS NULL
                      AND j.id <> ALL(:picked_ids::bigint[]))
            FROM unnest(:tenant_ids::text[]) AS t(tenant_id)
            """);

    /** A paused tenant's admitted jobs go back to pending, so that pausing stops starts at once. */
    static final NamedSql UNADMIT_PAUSED = NamedSql.of("""
            UPDATE jobs SET status = 'pending', ready_rank = NULL, admitted_at = NULL
            WHERE status = 'ready' AND tenant_id = ANY(:tenant_ids::text[])
            """);

    /**
     * Grants each tenant one admission in advance (see Enqueue.INSERT_JOBS). The scheduler only grants to
     * tenants the last LOAD showed without a grant, and it alone inserts grants, so ON CONFLICT never meets a
     * row an enqueue is deleting, and no enqueue makes the tick wait.
     */
    static final NamedSql GRANT = NamedSql.of("""
            INSERT INTO admission_grants (tenant_id, granted_at)
            SELECT t, :now FROM unnest(:tenant_ids::text[]) AS t
            WHERE EXISTS (SELECT 1 FROM tenants WHERE id = t) -- a tenant deleted meanwhile gets none
            ON CONFLICT (tenant_id) DO NOTHING
            RETURNING tenant_id
            """);

    /** Takes grants back. SKIP LOCKED: a grant an enqueue is taking right now is left to that enqueue. */
    static final NamedSql REVOKE_GRANTS = NamedSql.of("""
            DELETE FROM admission_grants
            WHERE tenant_id IN (SELECT tenant_id FROM admission_grants WHERE tenant_id = ANY(:tenant_ids::text[])
                                FOR UPDATE SKIP LOCKED)
            RETURNING tenant_id
            """);

    /**
     * Routing: parks pending jobs no live worker can run (they leave jobs_admit_idx, so no probe walks them
     * again; explain says no_worker). The status re-check leaves a job that moved on meanwhile alone.
     */
    static final NamedSql PARK = NamedSql.of("""
            UPDATE jobs SET no_worker_since = :now
            WHERE id = ANY(:ids::bigint[]) AND status = 'pending' AND no_worker_since IS NULL
            """);

    /**
     * Routing: ready jobs of (tenant, queue, type) groups no live worker can run go back to pending, parked
     * (a grant put them there, or the only worker serving them died). The buffer is small; this runs only for
     * the groups LOAD found unroutable.
     */
    static final NamedSql UNADMIT_UNROUTABLE = NamedSql.of("""
            UPDATE jobs j SET status = 'pending', ready_rank = NULL, admitted_at = NULL, no_worker_since = :now
            FROM unnest(:tenant_ids::text[], :queues::text[], :types::text[]) AS g(tenant_id, queue, type)
            WHERE j.status = 'ready' AND j.tenant_id = g.tenant_id AND j.queue = g.queue AND j.type = g.type
            """);

    /**
     * Routing: un-parks a batch of parked jobs that a live worker can now run (the routes are given as pairs,
     * a NULL queue or type meaning any), through jobs_no_worker_idx one range per type when no route takes
     * every type. Returns each un-parked job's tenant, which becomes work for the scheduler again. Runs only
     * when the live routes changed, so its cost is the parked jobs of the routes that came, once.
     */
    static final NamedSql UNPARK = NamedSql.of("""
            WITH picked AS (
                SELECT j.id FROM jobs j
                WHERE j.no_worker_since IS NOT NULL AND j.status = 'pending'
                  AND (:types::text[] IS NULL OR j.type = ANY(:types::text[]))
                  AND EXISTS (SELECT 1 FROM unnest(:route_queues::text[], :route_types::text[]) AS r(q, t)
                              WHERE (r.q IS NULL OR r.q = j.queue) AND (r.t IS NULL OR r.t = j.type))
                LIMIT :batch
            )
            UPDATE jobs j SET no_worker_since = NULL FROM picked p
            WHERE j.id = p.id AND j.no_worker_since IS NOT NULL AND j.status = 'pending'
            RETURNING j.tenant_id
            """);

    /** The highest rank in the ready buffer, for admitting behind everything already there. */
    static final NamedSql LAST_RANK = NamedSql.of("SELECT max(ready_rank) FROM jobs WHERE status = 'ready'");

    private final QueueClock clock;

    Admission(QueueClock clock) {
        this.clock = clock;
    }

    /**
     * What a tick starts from.
     *
     * @param nextRank        lowest rank in the ready buffer (the virtual time of the next job to start), or null
     * @param lastRank        highest rank in the ready buffer, or null
     * @param grantAgeSeconds the tenants holding an admission grant, with how long they have held it
     */
    public record QueueLoad(Map<String, Integer> readyByTenant, Map<String, Integer> runningByTenant,
                            int workerCapacity, Double nextRank, Double lastRank, Map<String, Double> grantAgeSeconds,
                            List<ReadyGroup> readyGroups) {
        public QueueLoad(Map<String, Integer> readyByTenant, Map<String, Integer> runningByTenant, int workerCapacity,
                         Double nextRank, Double lastRank, Map<String, Double> grantAgeSeconds) {
            this(readyByTenant, runningByTenant, workerCapacity, nextRank, lastRank, grantAgeSeconds, List.of());
        }

        public int ready(String tenant) { return readyByTenant.getOrDefault(tenant, 0); }
        public int running(String tenant) { return runningByTenant.getOrDefault(tenant, 0); }
        public int totalReady() { return readyByTenant.values().stream().mapToInt(Integer::intValue).sum(); }
        public int totalRunning() { return runningByTenant.values().stream().mapToInt(Integer::intValue).sum(); }
    }

    /** Ready jobs of one tenant, queue and type. */
    public record ReadyGroup(String tenantId, String queue, String type, int count) {}

    /** A candidate for admission: a job, its place in its tenant's aging order, and its route. */
    public record Candidate(long id, double sortKey, String queue, String type) {}

    public QueueLoad load(DSLContext ctx, Duration workerLiveness) {
        Map<String, Integer> ready = new HashMap<>(), running = new HashMap<>();
        List<ReadyGroup> groups = new ArrayList<>();
        Map<String, Double> grants = new HashMap<>();
        int capacity = 0;
        Double nextRank = null, lastRank = null;
        for (Record r : LOAD.bind().clock(clock).set("liveness_ms", workerLiveness.toMillis()).fetch(ctx)) {
            String tenant = r.get(1, String.class);
            Double n = r.get(2, Double.class);
            switch (r.get(0, String.class)) {
                case "ready" -> {
                    ready.merge(tenant, n.intValue(), Integer::sum);
                    groups.add(new ReadyGroup(tenant, r.get(3, String.class), r.get(4, String.class), n.intValue()));
                }
                case "running" -> running.put(tenant, n.intValue());
                case "capacity" -> capacity = n.intValue();
                case "next_rank" -> nextRank = n;
                case "last_rank" -> lastRank = n;
                default -> grants.put(tenant, n);
            }
        }
        return new QueueLoad(ready, running, capacity, nextRank, lastRank, grants, groups);
    }

    /** The tenants with admissible pending jobs (see {@link #TENANTS_WITH_WORK}). */
    public List<String> tenantsWithWork(DSLContext ctx) {
        return TENANTS_WITH_WORK.bind().fetch(ctx).getValues(0, String.class);
    }

    /** Per tenant, milliseconds until its next admissible job is due; tenants with none are left out. */
    public Map<String, Long> nextDueInMs(DSLContext ctx, List<String> tenants) {
        return nextDueInMs(ctx, tenants, List.of());
    }

    /** As above, leaving out the given jobs (those a round is admitting right now). */
    public Map<String, Long> nextDueInMs(DSLContext ctx, List<String> tenants, List<Long> picked) {
        Map<String, Long> out = new HashMap<>();
        if (tenants.isEmpty()) return out;
        for (Record r : NEXT_DUE.bind().clock(clock).set("tenant_ids", tenants.toArray(String[]::new))
                .set("picked_ids", picked.toArray(Long[]::new)).fetch(ctx)) {
            Double ms = r.get(1, Double.class);
            if (ms != null) out.put(r.get(0, String.class), Math.max(0, (long) Math.ceil(ms)));
        }
        return out;
    }

    /** Candidates per tenant, in each tenant's aging order. */
    public Map<String, List<Long>> candidates(DSLContext ctx, Map<String, Integer> limits) {
        Map<String, List<Long>> out = new LinkedHashMap<>();
        candidateRows(ctx, limits).forEach((tenant, rows) -> out.put(tenant, rows.stream().map(Candidate::id).toList()));
        return out;
    }

    /** Candidates per tenant with their routes, in each tenant's aging order. */
    public Map<String, List<Candidate>> candidateRows(DSLContext ctx, Map<String, Integer> limits) {
        Map<String, List<Candidate>> keyed = new LinkedHashMap<>();
        if (limits.isEmpty()) return keyed;
        String[] tenants = limits.keySet().toArray(String[]::new);
        Integer[] lims = new Integer[tenants.length];
        for (int i = 0; i < tenants.length; i++) lims[i] = limits.get(tenants[i]);
        NamedSql.Binding query = CANDIDATES.bind().clock(clock).set("tenant_ids", tenants).set("limits", lims);
        // Plain JDBC: up to a few thousand rows a tick, and materialising jOOQ records for them was most of the
        // scheduler's CPU per admitted job once the rows carried their queue and type (routing).
        ctx.connection(c -> {
            try (java.sql.PreparedStatement ps = query.prepare(c); java.sql.ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    keyed.computeIfAbsent(rs.getString(1), k -> new ArrayList<>())
                            .add(new Candidate(rs.getLong(2), rs.getDouble(3), rs.getString(4), rs.getString(5)));
                }
            }
        });
        // Each tenant's rows come out of its index walk in order already; sorting here makes that a
        // guarantee rather than a property of the plan (and lets the query skip an outer sort).
        keyed.values().forEach(rows -> rows.sort(Comparator.comparingDouble(Candidate::sortKey).thenComparingLong(Candidate::id)));
        return keyed;
    }

    /** Parks pending jobs no live worker can run; returns how many. */
    public int park(DSLContext ctx, List<Long> ids) {
        if (ids.isEmpty()) return 0;
        return PARK.bind().clock(clock).set("ids", ids.toArray(Long[]::new)).execute(ctx);
    }

    /** Sends ready jobs of the given groups (no live worker can run them) back to pending, parked; returns how many. */
    public int unadmitUnroutable(DSLContext ctx, List<ReadyGroup> groups) {
        if (groups.isEmpty()) return 0;
        return UNADMIT_UNROUTABLE.bind().clock(clock)
                .set("tenant_ids", groups.stream().map(ReadyGroup::tenantId).toArray(String[]::new))
                .set("queues", groups.stream().map(ReadyGroup::queue).toArray(String[]::new))
                .set("types", groups.stream().map(ReadyGroup::type).toArray(String[]::new)).execute(ctx);
    }

    /**
     * Un-parks at most {@code batch} parked jobs that one of the live routes can run; returns their tenants
     * (one entry per job, so the size says whether the batch was full).
     */
    public List<String> unpark(DSLContext ctx, List<WorkerRoute.Live> live, int batch) {
        if (live.isEmpty()) return List.of();
        List<String> routeQueues = new ArrayList<>(), routeTypes = new ArrayList<>();
        java.util.Set<String> types = new java.util.TreeSet<>();
        boolean anyType = false;
        for (WorkerRoute.Live w : live) {
            WorkerRoute r = w.route();
            if (r.types() == null) anyType = true;
            else types.addAll(r.types());
            for (String q : r.queues() == null ? java.util.Collections.<String>singleton(null) : r.queues()) {
                for (String t : r.types() == null ? java.util.Collections.<String>singleton(null) : r.types()) {
                    routeQueues.add(q);
                    routeTypes.add(t);
                }
            }
        }
        if (routeQueues.isEmpty()) return List.of();
        return UNPARK.bind().set("types", anyType ? null : types.toArray(String[]::new))
                .set("route_queues", routeQueues.toArray(String[]::new)).set("route_types", routeTypes.toArray(String[]::new))
                .set("batch", batch).fetch(ctx).getValues(0, String.class);
    }

    /** Admits the given jobs with the given ranks; returns the ids actually moved to ready. */
    public List<Long> admit(DSLContext ctx, List<Long> ids, List<Double> ranks) {
        if (ids.isEmpty()) return List.of();
        return ADMIT.bind().clock(clock).set("ranks", ranks.toArray(Double[]::new)).set("ids", ids.toArray(Long[]::new))
                .fetch(ctx).getValues(0, Long.class);
    }

    /** Admits the given jobs behind everything already ready, in the given order (tools and tests). */
    public List<Long> admit(DSLContext ctx, List<Long> idsInOrder) {
        Double last = LAST_RANK.bind().fetch(ctx).get(0).get(0, Double.class);
        double base = last == null ? 0.0 : last;
        List<Double> ranks = new ArrayList<>(idsInOrder.size());
        for (int i = 0; i < idsInOrder.size(); i++) ranks.add(base + 1 + i);
        return admit(ctx, idsInOrder, ranks);
    }

    public int unadmitPaused(DSLContext ctx, List<String> pausedTenants) {
        if (pausedTenants.isEmpty()) return 0;
        return UNADMIT_PAUSED.bind().set("tenant_ids", pausedTenants.toArray(String[]::new)).execute(ctx);
    }

    /** Grants the tenants an admission each; returns those that got one (a deleted tenant gets none). */
    public List<String> grant(DSLContext ctx, List<String> tenants) {
        if (tenants.isEmpty()) return List.of();
        return GRANT.bind().clock(clock).set("tenant_ids", tenants.toArray(String[]::new)).fetch(ctx).getValues(0, String.class);
    }

    /** Returns the tenants whose grant was taken back (not one an enqueue is taking at this moment). */
    public List<String> revokeGrants(DSLContext ctx, List<String> tenants) {
        if (tenants.isEmpty()) return List.of();
        return REVOKE_GRANTS.bind().set("tenant_ids", tenants.toArray(String[]::new)).fetch(ctx).getValues(0, String.class);
    }
}

package dev.fairq.bench;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.schema.EnqueueResult;
import dev.fairq.schema.Json;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.JobStore;
import org.jooq.Record;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Issue 9: does the platform's cost follow the work, or what exists? Phases, each on a fresh database (a new
 * database on the bench's PostgreSQL, migrated, dropped afterwards) with its own
 * {@code java -jar api/target/fairq.jar server} (8 worker threads), each printing its figures:
 * <ul>
 *   <li>drain10, drain1000, drain10000: 50,000 noop jobs spread evenly over 10 / 1,000 / 10,000 tenants;</li>
 *   <li>idle100k, idle1m: the same jobs over 10 tenants, with 100,000 / 1,000,000 idle tenants registered; the
 *       phase also times three drains on its own server before it registers them ({@code ratio_to_before_idle},
 *       reported as {@code ratio_1m_idle_same_server}: the idle tenants' cost without the drift between phases);</li>
 *   <li>stale: 10 tenants' 50,000 jobs plus 200,000 finished jobs past retention, which it must delete,
 *       drained once with fresh statistics and once after {@code ANALYZE jobs} while the queue was drained to
 *       zero (the table held 100 finished jobs), each drain aligned so that a retention run falls inside it;</li>
 *   <li>trickle: 1,000 tenants ({@code FAIRQ_BENCH_TRICKLE_TENANTS}) each submit sleep 5 ms jobs over HTTP,
 *       100 per second in all, round-robin; enqueue-to-start alone, then while another tenant's 30,000 sleep
 *       5 ms jobs flood the queue;</li>
 *   <li>metrics: 1,000,000 registered tenants, 10,000 of them active; {@code GET /metrics} and
 *       {@code GET /v1/admin/overview} timed and sized;</li>
 *   <li>stats: 1,000,000 of one tenant's finished jobs retained; 16 concurrent callers on stats, dashboard and
 *       explain, then on single and batch submits.</li>
 * </ul>
 * A drain: the jobs are enqueued (JobStore.enqueueAll, a call per tenant) in one transaction, so nothing can
 * start before the last is stored; the rate is jobs / (last finished_at - first admitted_at), the database's
 * clock. Warm-up drains of the same 50,000 jobs over the phase's active tenants (at least two, until two in a row
 * are within 10%, at most six) come first in each drain phase (before any idle tenant is registered); then three timed drains, of which the
 * median is reported (all three rates are in {@code timed_jobs_per_s}). A drain still running 120 s after
 * it became due is cut short and reported as capped, at the rate achieved until then.
 * {@code FAIRQ_BENCH_PHASES=drain10,stale} runs a subset; {@code FAIRQ_BENCH_SCALE=0.1} scales the tenant
 * and retained-job counts down (for trying the harness, not for figures).
 */
final class TenantsBench implements Bench.Benchmark {
    static final List<String> PHASES = List.of("drain10", "drain1000", "drain10000", "idle100k", "idle1m", "stale",
            "trickle", "metrics", "stats");
    static final int JOBS = 50_000;
    static final int THREADS = 8;
    static final int CHUNK = 5_000;
    static final int WARMUPS = 2, MAX_WARMUPS = 6;
    /** Timed drains per drain phase; the median is reported. */
    static final int TIMED_DRAINS = 3;
    static final long DRAIN_CAP_MS = 120_000;
    /** Finished jobs past retention in the stale phase, and the 10 tenants they belong to. */
    static final int SLAB = 200_000;
    /** The server's retention of finished jobs (FAIRQ_RETENTION_HOURS, not set: the default). */
    static final int RETENTION_HOURS = 24;
    static final int TRICKLE_PER_S = 100;
    static final int FLOOD = 30_000;
    static final long TRICKLE_WARMUP_MS = 10_000, TRICKLE_ALONE_MS = 30_000, FLOOD_CAP_MS = 180_000, JIT_QUIET_CAP_MS = 240_000;
    static final int CALLERS = 16;
    static final long LOAD_WARMUP_MS = 2_000, LOAD_MS = 10_000, WARMUP_WINDOW_MS = 5_000, WARMUP_MAX_MS = 240_000;
    static final int BATCH = 100;

    private final JobStore store = new JobStore();
    private final double scale = Double.parseDouble(env("FAIRQ_BENCH_SCALE", "1"));

    @Override
    public Map<String, Object> run(BenchDatabase bench) throws Exception {
        List<String> phases = new ArrayList<>();
        for (String p : env("FAIRQ_BENCH_PHASES", String.join(",", PHASES)).split(",")) {
            if (p.isBlank()) continue;
            if (!PHASES.contains(p.trim())) throw new IllegalArgumentException("unknown phase '" + p + "' (phases: " + PHASES + ")");
            phases.add(p.trim());
        }
        int trickleTenants = Integer.parseInt(env("FAIRQ_BENCH_TRICKLE_TENANTS", "1000"));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("phases_run", phases);
        out.put("jobs_per_drain", JOBS);
        out.put("server", "java -jar api/target/fairq.jar server, " + THREADS + " worker threads, a fresh database per phase");
        if (scale != 1) out.put("scale", scale);
        Map<String, Map<String, Object>> results = new LinkedHashMap<>();
        for (String phase : phases) {
            long t0 = System.nanoTime();
            progress("phase " + phase);
            Map<String, Object> r = switch (phase) {
                case "drain10" -> drainPhase(bench, phase, 10, 0);
                case "drain1000" -> drainPhase(bench, phase, scaled(1_000), 0);
                case "drain10000" -> drainPhase(bench, phase, scaled(10_000), 0);
                case "idle100k" -> drainPhase(bench, phase, 10, scaled(100_000));
                case "idle1m" -> drainPhase(bench, phase, 10, scaled(1_000_000));
                case "stale" -> stalePhase(bench);
                case "trickle" -> tricklePhase(bench, trickleTenants);
                case "metrics" -> metricsPhase(bench, scaled(10_000), scaled(1_000_000));
                case "stats" -> statsPhase(bench, scaled(1_000_000));
                default -> throw new IllegalStateException(phase);
            };
            r.put("phase_seconds", Math.round((System.nanoTime() - t0) / 1e9));
            results.put(phase, r);
            System.out.println("tenants " + phase + ": " + Json.MAPPER.writeValueAsString(r));
        }

        Double base = rate(results, "drain10");
        out.put("drain_jobs_per_s_10", base == null ? null : Math.round(base));
        // the baseline of every ratio below: capped (a drain that stalled), its rate would make each of them read
        // high, as targets met; so no ratio to it
        boolean baseCapped = Boolean.TRUE.equals(results.getOrDefault("drain10", Map.of()).get("capped"));
        if (baseCapped) out.put("drain_capped_10", true);
        for (String[] p : new String[][]{{"drain1000", "1000_active"}, {"drain10000", "10000_active"},
                {"idle100k", "100k_idle"}, {"idle1m", "1m_idle"}}) {
            Double r = rate(results, p[0]);
            if (r == null) continue;
            out.put("drain_jobs_per_s_" + p[1], Math.round(r));
            if (Boolean.TRUE.equals(results.get(p[0]).get("capped"))) out.put("drain_capped_" + p[1], true);
            out.put("ratio_" + p[1], base == null || baseCapped ? null : Stats.ratio(r, base));
            // the idle phases: against their own server's drains before the idle tenants were registered
            Object same = results.get(p[0]).get("ratio_to_before_idle");
            if (same != null) out.put("ratio_" + p[1] + "_same_server", same);
        }
        if (results.containsKey("stale")) {
            Map<String, Object> s = results.get("stale");
            out.put("drain_jobs_per_s_stale", s.get("stale_jobs_per_s"));
            out.put("drain_jobs_per_s_stale_baseline_fresh", s.get("fresh_jobs_per_s"));
            out.put("ratio_stale_stats", s.get("ratio_stale_stats"));
            // what retention in the drain costs at all (fresh statistics) against the plain 10-tenant drain
            if (base != null && !baseCapped) {
                out.put("ratio_fresh_retention_vs_drain10", Stats.ratio(((Number) s.get("fresh_jobs_per_s")).doubleValue(), base));
            }
        }
        if (results.containsKey("trickle")) {
            Map<String, Object> t = results.get("trickle");
            for (String k : List.of("trickle_tenants", "trickle_p99_ms_alone", "trickle_p99_ms_flood", "trickle_p99_ratio",
                    "trickle_db_p99_ms_alone", "trickle_db_p99_ms_flood", "trickle_started_in_enqueue_alone",
                    "trickle_started_in_enqueue_flood", "trickle_submits_failed")) {
                out.put(k, t.get(k));
            }
        }
        if (results.containsKey("metrics")) {
            Map<String, Object> m = results.get("metrics");
            for (String k : List.of("metrics_bytes", "metrics_ms", "metrics_max_ms", "overview_bytes", "overview_ms", "overview_max_ms")) {
                out.put(k, m.get(k));
            }
            // a scrape cut short at 120 s: its size is unknown (null above), at least this
            for (String k : List.of("metrics_bytes_at_least", "overview_bytes_at_least")) {
                if (m.containsKey(k)) out.put(k, m.get(k));
            }
        }
        if (results.containsKey("stats")) {
            Map<String, Object> m = results.get("stats");
            for (String k : List.of("stats_p99_ms", "dashboard_p99_ms", "explain_p99_ms", "post_rps", "post_p50_ms", "batch_rps",
                    "batch_p50_ms")) {
                out.put(k, m.get(k));
            }
        }
        Map<String, Object> ticks = new LinkedHashMap<>();
        results.forEach((phase, r) -> ticks.put(phase, r.get("tick_p99_ms")));
        out.put("tick_p99_ms", ticks);
        out.put("targets", "ratio_10000_active >= 0.8, ratio_1m_idle >= 0.95, ratio_stale_stats >= 0.8, "
                + "trickle_p99_ratio <= 1.5, metrics_bytes <= 1,000,000; stats/dashboard/explain p99 <= 20 ms at 16 callers; "
                + "post_rps >= 835 and batch_rps >= 166 (the issue's figures)");
        out.put("note", "tick_p99_ms: the scheduler's tick() as it logs it at DEBUG (SchedulerService), within each phase's "
                + "measured window; drains timed on the database clock from the first admitted_at to the last finished_at; "
                + "a capped drain reports the rate until the cap (120 s after its jobs could start)");
        out.put("phases", results);
        return out;
    }

    // ---------------------------------------------------------------------------------------------------
    // Drains
    // ---------------------------------------------------------------------------------------------------

    /** {@code active} tenants t0.. with their limits out of the way; {@code idle} tenants registered after warming up. */
    private Map<String, Object> drainPhase(BenchDatabase bench, String phase, int active, int idle) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("active_tenants", active);
        out.put("idle_tenants", idle);
        try (PhaseDatabase db = PhaseDatabase.create(bench, phase)) {
            insertActiveTenants(db, "t", active);
            try (FairqServer server = FairqServer.start(db, phase, THREADS)) {
                // warmed up on the drain's own tenants: warmed on 10, the first timed drain over 10,000 ran at
                // 40-60% of the third (the cache of tenant limits filled, the 10,000-tenant paths compiled)
                out.put("warmup_jobs_per_s", warmUp(db, server, ids("t", active)));
                if (idle > 0) {
                    // The same timed drains on the same server and database before the idle tenants exist: the
                    // cross-phase ratio (against drain10's own database and server) moved 0.86-0.95 between runs
                    // of one build, more than the idle tenants themselves can be told from it.
                    Drain before = timedDrains(db, server, active);
                    out.put("before_idle_timed_jobs_per_s", lastTimed);
                    out.put("before_idle_drain_jobs_per_s", Math.round(before.rate()));
                    if (before.capped()) out.put("before_idle_capped", true);
                    double t0 = db.now();
                    insertIdleTenants(db, idle);
                    out.put("idle_insert_s", Stats.round(db.now() - t0));
                    // Autovacuum's pass over the freshly inserted rows (1,000,000: seconds of one core) is the
                    // registration's one-off cost, not what idle tenants cost a running system: done here, before
                    // the drain, instead of landing in the middle of it.
                    double v0 = db.now();
                    db.dsl().execute("VACUUM (ANALYZE) tenants");
                    // and the checkpoint of the registration's writes: left to come on its own, it landed in the
                    // first timed drain (16,879 and 17,669 jobs/s against 21,000-25,700 for the others)
                    db.dsl().execute("CHECKPOINT");
                    out.put("idle_vacuum_s", Stats.round(db.now() - v0));
                    Thread.sleep(2_000); // the scheduler re-reads the tenants every 500 ms
                }
                Drain median = timedDrains(db, server, active);
                out.put("timed_jobs_per_s", lastTimed);
                out.putAll(median.figures(""));
                if (idle > 0) {
                    out.put("ratio_to_before_idle", out.containsKey("before_idle_capped") ? null
                            : Stats.ratio(median.rate(), ((Number) out.get("before_idle_drain_jobs_per_s")).doubleValue()));
                }
            }
        }
        return out;
    }

    /** The rates of the last timedDrains call, in the order run. */
    private List<Long> lastTimed = List.of();

    /**
     * The median of three timed drains: one drain of 50,000 noop jobs lasts 2-4 s, and a single one moved by
     * 10-15% between runs on the 2-core machine (a GC, a checkpoint, autovacuum landing in it).
     */
    private Drain timedDrains(PhaseDatabase db, FairqServer server, int active) throws Exception {
        List<Drain> timed = new ArrayList<>();
        for (int i = 0; i < TIMED_DRAINS; i++) {
            db.dsl().execute("TRUNCATE jobs");
            timed.add(drain(db, server, ids("t", active), true, DRAIN_CAP_MS, null, null));
        }
        lastTimed = timed.stream().map(d -> Math.round(d.rate())).toList();
        timed.sort(java.util.Comparator.comparingDouble(Drain::rate));
        return timed.get(TIMED_DRAINS / 2);
    }

    /** Two drains of 50,000 jobs over {@code tenants} (the JVMs warm up on the same work); their rates. */
    private List<Long> warmUp(PhaseDatabase db, FairqServer server, List<String> tenants) throws Exception {
        List<Long> rates = new ArrayList<>();
        // At least WARMUPS drains, and on until the last two are within 10% of each other (at most
        // MAX_WARMUPS): after two, the timed drains still rose drain after drain (17,774, 21,369, 24,810 jobs/s
        // over 10 tenants), so the median of three timed a server still compiling, and a phase that idled
        // between its warm-up and its drains (registering 1,000,000 tenants) came out ahead of its baseline.
        while (rates.size() < WARMUPS || (rates.size() < MAX_WARMUPS
                && Math.abs(rates.get(rates.size() - 1) - rates.get(rates.size() - 2)) > 0.1 * rates.get(rates.size() - 2))) {
            db.dsl().execute("TRUNCATE jobs");
            rates.add(Math.round(drain(db, server, tenants, true, 300_000, null, null).rate));
        }
        db.dsl().execute("TRUNCATE jobs");
        return rates;
    }

    /** The set-up of a drain was not done by the time it had to start (a busy machine). */
    private static final class LateEnqueue extends IllegalStateException {
        LateEnqueue(String message) {
            super(message);
        }
    }

    /** Something polled during a drain that reports, once, when it saw a change (database epoch seconds). */
    private interface Watch {
        /** True when the watched thing has happened by now. */
        boolean seen();
    }

    /**
     * One measured drain. {@code capMs} after its run_at it is cut short (capped). When {@code watch} is given,
     * {@code watchSeenAt} is the first poll (every 100 ms) at which it reported true.
     */
    private record Drain(int jobs, double rate, boolean capped, long succeeded, double firstAdmitted, double end,
                         double enqueueSeconds, double runAt, double enqueuedAt, long admittedInEnqueue, Double watchSeenAt,
                         Map<String, Object> ticks) {
        Map<String, Object> figures(String prefix) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put(prefix + "jobs", jobs);
            m.put(prefix + "drain_jobs_per_s", Math.round(rate));
            m.put(prefix + "capped", capped);
            if (capped) m.put(prefix + "succeeded_by_cap", succeeded);
            m.put(prefix + "drain_s", Stats.round(end - firstAdmitted));
            m.put(prefix + "enqueue_s", Stats.round(enqueueSeconds));
            m.put(prefix + "first_admission_after_due_ms", Math.round((firstAdmitted - runAt) * 1000));
            m.put(prefix + "admitted_by_grant_in_enqueue", admittedInEnqueue);
            ticks.forEach((k, v) -> m.put(prefix + k, v));
            return m;
        }
    }

    /** What happens between a drain's enqueue and its start: returns when the jobs may start (database epoch). */
    private interface Release {
        double release(double enqueuedAt) throws Exception;
    }

    /**
     * Enqueues {@code JOBS} noop jobs spread evenly over {@code tenants} in one transaction (JobStore.enqueueAll,
     * a call per tenant), so that no job can be admitted before the last is stored: the drain starts at the commit,
     * or, with {@code release} (the tenants were paused), when it unpauses them. {@code analyze}: ANALYZE jobs
     * inside that transaction (ANALYZE counts its own transaction's rows), so the drain starts with fresh
     * statistics. Then waits until every job succeeded, and checks that each ran exactly once (attempts = 1).
     */
    private Drain drain(PhaseDatabase db, FairqServer server, List<String> tenants, boolean analyze, long capMs, Watch watch,
                        Release release) throws Exception {
        List<JobRequest> jobs = new ArrayList<>(JOBS);
        for (int i = 0; i < JOBS; i++) jobs.add(JobRequest.builder(tenants.get(i % tenants.size()), "noop").build());
        double t0 = db.now();
        progress("enqueue " + JOBS + " jobs over " + tenants.size() + " tenants");
        long[] ids = db.dsl().transactionResult(tx -> {
            long[] r = enqueue(tx.dsl(), jobs);
            if (analyze) tx.dsl().execute("ANALYZE jobs");
            return r;
        });
        double enqueuedAt = db.now();
        double runAt = enqueuedAt;
        if (release != null) {
            long early = db.count("SELECT count(*) FROM jobs WHERE id BETWEEN ? AND ? AND admitted_at IS NOT NULL", ids[0], ids[1]);
            if (early > 0) throw new IllegalStateException(early + " jobs of paused tenants were admitted");
            runAt = release.release(enqueuedAt);
        }
        double capAt = runAt + capMs / 1000.0;
        boolean capped = false;
        Double watchSeen = null;
        double end;
        long poll = watch == null ? 250 : 100;
        while (true) {
            // The drain's first job (by id) that has not succeeded, if any: a walk of the primary key from the
            // drain's first id that stops there. A count of the 50,000 rows' statuses, four times a second, took
            // about 100 ms each in the database (auto_explain on PostgreSQL 15, the 10,000-tenant drain).
            Record r = db.dsl().fetchOne("SELECT (SELECT status::text FROM jobs WHERE id BETWEEN ? AND ? AND status <> 'succeeded' "
                    + "ORDER BY id LIMIT 1), fairq_epoch(clock_timestamp())", ids[0], ids[1]);
            String unfinished = r.get(0, String.class);
            double now = r.get(1, Double.class);
            if (watch != null && watchSeen == null && watch.seen()) watchSeen = db.now();
            if ("dead".equals(unfinished)) throw new IllegalStateException("a noop job is dead; see " + server.log);
            if (unfinished == null) {
                end = Double.NaN;
                break;
            }
            if (now > capAt) {
                capped = true;
                end = now;
                break;
            }
            if (!server.alive()) throw new IllegalStateException("the server exited during a drain; see " + server.log);
            Thread.sleep(poll);
        }
        Record f = db.dsl().fetchOne("""
                SELECT fairq_epoch(min(admitted_at)), fairq_epoch(max(finished_at)), count(*),
                       count(*) FILTER (WHERE status = 'succeeded' AND attempts = 1),
                       count(*) FILTER (WHERE status = 'succeeded' AND finished_at <= to_timestamp(?)),
                       count(*) FILTER (WHERE status = 'dead'),
                       count(*) FILTER (WHERE fairq_epoch(admitted_at) < ?)
                FROM jobs WHERE id BETWEEN ? AND ?""", capped ? end : 1e12, enqueuedAt, ids[0], ids[1]);
        // The clock starts at the first admission, but not before the enqueue committed: a tenant active in the
        // last minute holds an admission grant, and its first job takes it inside the enqueue's own INSERT, with
        // that transaction's now() as admitted_at; none can start before the commit.
        double firstAdmitted = Math.max(f.get(0, Double.class), runAt);
        long admittedInEnqueue = f.get(6, Long.class);
        long total = f.get(2, Long.class), once = f.get(3, Long.class), byCap = f.get(4, Long.class), dead = f.get(5, Long.class);
        if (total != JOBS) throw new IllegalStateException(total + " jobs in the table, " + JOBS + " enqueued: jobs lost");
        if (dead != 0) throw new IllegalStateException(dead + " noop jobs dead; see " + server.log);
        double rate;
        if (capped) {
            rate = byCap / (end - firstAdmitted);
        } else {
            if (once != JOBS) throw new IllegalStateException((JOBS - once) + " jobs ran more than once (attempts > 1)");
            end = f.get(1, Double.class);
            rate = JOBS / (end - firstAdmitted);
        }
        progress("drained at " + Math.round(rate) + " jobs/s" + (capped ? " (capped)" : ""));
        return new Drain(JOBS, rate, capped, capped ? byCap : JOBS, firstAdmitted, end, enqueuedAt - t0, runAt, enqueuedAt,
                admittedInEnqueue, watchSeen, server.tickSummary(firstAdmitted, end));
    }

    /**
     * JobStore.enqueueAll, one tenant's jobs a call, 5,000 at most; returns the lowest and highest id, which must
     * span exactly these jobs (nothing else inserts jobs meanwhile), else it throws.
     */
    private long[] enqueue(PhaseDatabase db, List<JobRequest> jobs) {
        return enqueue(db.dsl(), jobs);
    }

    private long[] enqueue(org.jooq.DSLContext dsl, List<JobRequest> jobs) {
        long[] ids = enqueueAny(dsl, jobs);
        if (ids[1] - ids[0] + 1 != jobs.size()) throw new IllegalStateException("ids not contiguous: " + ids[0] + ".." + ids[1]);
        return ids;
    }

    /** As enqueue, while other jobs may be inserted concurrently (their ids may fall inside the range). */
    private long[] enqueueAny(PhaseDatabase db, List<JobRequest> jobs) {
        return enqueueAny(db.dsl(), jobs);
    }

    private long[] enqueueAny(org.jooq.DSLContext dsl, List<JobRequest> jobs) {
        // each tenant's jobs in calls of their own (as each tenant's app would submit them): the max_queued check
        // counts the queue of every tenant in a call, so mixing 5,000 tenants in one call costs 5,000 counts
        Map<String, List<JobRequest>> byTenant = new LinkedHashMap<>();
        for (JobRequest j : jobs) byTenant.computeIfAbsent(j.tenantId(), k -> new ArrayList<>()).add(j);
        List<List<JobRequest>> calls = new ArrayList<>();
        for (List<JobRequest> own : byTenant.values()) {
            for (int i = 0; i < own.size(); i += CHUNK) calls.add(own.subList(i, Math.min(own.size(), i + CHUNK)));
        }
        long min = Long.MAX_VALUE, max = Long.MIN_VALUE;
        for (List<JobRequest> call : calls) {
            for (EnqueueResult r : store.enqueueAll(dsl, call)) {
                if (!r.created()) throw new IllegalStateException("enqueue did not create job " + r.job().getId());
                min = Math.min(min, r.job().getId());
                max = Math.max(max, r.job().getId());
            }
        }
        return new long[]{min, max};
    }

    // ---------------------------------------------------------------------------------------------------
    // Stale statistics
    // ---------------------------------------------------------------------------------------------------

    /**
     * 10 tenants, 50,000 jobs, and 200,000 of their jobs finished just over a day ago (past the 1-day retention,
     * as on a real install). Drained twice on one server: statistics fresh (ANALYZE in the enqueue's transaction),
     * and stale (ANALYZE when the queue had drained to zero and the table held 100 finished jobs, then the inserts). Autoanalyze of jobs is held off for the phase, so
     * the statistics stay as set up for the whole drain. The retention run is located (a 2-day-old sentinel job:
     * when it is gone, retention just ran; two in a row give the period) and each drain's tenants are unpaused so
     * that a retention run with the slab to delete comes a third of a warm drain after admission starts; the run
     * checks that retention deleted jobs during the drain, retrying the variant once when it did not.
     */
    private Map<String, Object> stalePhase(BenchDatabase bench) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("tenants", 10);
        out.put("slab_finished_jobs_past_retention", SLAB);
        try (PhaseDatabase db = PhaseDatabase.create(bench, "stale")) {
            db.dsl().execute("ALTER TABLE jobs SET (autovacuum_analyze_threshold = 2000000000)");
            insertActiveTenants(db, "t", 10);
            try (FairqServer server = FairqServer.start(db, "stale", THREADS)) {
                List<Long> warm = warmUp(db, server, ids("t", 10));
                out.put("warmup_jobs_per_s", warm);
                // the jobs become due a third of a warm drain before retention is due (0.3-5 s): the retention run
                // falls inside the drain whether the platform is slow or fast
                double lead = Math.max(0.3, Math.min(5, JOBS / (double) warm.get(warm.size() - 1) / 3));
                out.put("due_before_retention_s", Stats.round(lead));
                progress("locating the retention runs");
                double a = awaitRetentionRun(db);
                double period = awaitRetentionRun(db) - a;
                out.put("retention_period_s", Stats.round(period));
                Map<String, Object> fresh = retentionDrain(db, server, false, period, lead);
                Map<String, Object> stale = retentionDrain(db, server, true, period, lead);
                fresh.forEach((k, v) -> out.put("fresh_" + k, v));
                stale.forEach((k, v) -> out.put("stale_" + k, v));
                double fr = ((Number) fresh.get("drain_jobs_per_s")).doubleValue(), st = ((Number) stale.get("drain_jobs_per_s")).doubleValue();
                out.put("fresh_jobs_per_s", Math.round(fr));
                out.put("stale_jobs_per_s", Math.round(st));
                // a capped (stalled) fresh drain is no baseline: its low rate would make the ratio read high
                out.put("ratio_stale_stats", Boolean.TRUE.equals(fresh.get("capped")) ? null : Stats.ratio(st, fr));
                out.put("tick_p99_ms", stale.get("tick_p99_ms"));
            }
        }
        return out;
    }

    /**
     * One drain of the stale phase. Retention runs every {@code period} seconds. The 10 tenants are paused (admin
     * API) and the 50,000 jobs enqueued; then a retention run is seen at T0 (a sentinel job deleted); the slab is
     * inserted to become eligible for deletion (finished_at one retention period before) 3 s before the run after
     * next, T0 + 2 x period, so the run at T0 + period finds nothing to delete and the insert has most of two
     * periods (four on a retry); {@code lead} seconds before that run the tenants are unpaused (admin API, live
     * within a second).
     */
    private Map<String, Object> retentionDrain(PhaseDatabase db, FairqServer server, boolean stale, double period, double lead)
            throws Exception {
        List<String> tenants = ids("t", 10);
        for (int attempt = 1; ; attempt++) {
            db.dsl().execute("TRUNCATE jobs");
            if (stale) analyzeNearlyEmpty(db);
            setPaused(server, tenants, true);
            Thread.sleep(1_500); // limits are live within a second
            int periods = attempt == 1 ? 2 : 4, tries = attempt;
            long autoanalyze0 = autoanalyzeCount(db);
            long[][] slab = new long[1][];
            Release release = enqueuedAt -> {
                progress((stale ? "stale" : "fresh") + " statistics, attempt " + tries + ": waiting for a retention run");
                double seen = awaitRetentionRun(db);
                double aligned = seen + periods * period;
                progress("inserting " + SLAB + " finished jobs, eligible for retention " + Stats.round(aligned - 3 - db.now()) + " s from now");
                // one microsecond apart, oldest first: the first slab rows of each tenant are its oldest and its first
                // on disk, so whichever way retention reads them (index or scan), its first batch takes some of these
                slab[0] = insertFinished(db, "'t' || ((g - 1) % 10)", SLAB, String.format(java.util.Locale.ROOT,
                        "to_timestamp(%.3f) - interval '%d hours' - (%d - g) * interval '1 microsecond'", aligned - 3, RETENTION_HOURS, SLAB));
                if (!stale) db.dsl().execute("ANALYZE jobs");
                double unpause = aligned - lead - 0.5; // the scheduler re-reads limits every 500 ms today
                double now = db.now();
                if (now > unpause - 0.2) {
                    throw new LateEnqueue(String.format("the slab insert ended %.2f s after the tenants were to be unpaused", now - unpause));
                }
                Thread.sleep(Math.round((unpause - now) * 1000));
                setPaused(server, tenants, false);
                return db.now();
            };
            Watch watch = () -> db.count("SELECT count(*) FROM jobs WHERE id BETWEEN ? AND ?", slab[0][0], slab[0][0] + 99) < 100;
            Drain d;
            try {
                d = drain(db, server, tenants, false, DRAIN_CAP_MS, watch, release);
            } catch (LateEnqueue e) {
                setPaused(server, tenants, false);
                if (attempt == 2) throw e;
                progress((stale ? "stale" : "fresh") + " statistics, attempt " + attempt + ": " + e.getMessage() + "; again");
                continue;
            }
            long slabLeft = db.count("SELECT count(*) FROM jobs WHERE id BETWEEN ? AND ?", slab[0][0], slab[0][1]);
            Map<String, Object> m = d.figures("");
            m.put("slab_deleted_by_end", SLAB - slabLeft);
            m.put("retention_seen_s_after_first_admission", d.watchSeenAt == null ? null : Stats.round(d.watchSeenAt - d.firstAdmitted));
            m.put("autoanalyze_runs_during", autoanalyzeCount(db) - autoanalyze0);
            m.put("attempt", attempt);
            // retention must have deleted slab rows after admission began and before the drain ended (the watch
            // polls every 100 ms, so allow one poll and the statement's own time after the last finished_at)
            boolean during = d.watchSeenAt != null && d.watchSeenAt >= d.firstAdmitted && d.watchSeenAt <= d.end + 0.35;
            if (d.capped) during = d.watchSeenAt != null && d.watchSeenAt >= d.firstAdmitted;
            m.put("retention_ran_during_drain", during);
            if (during) return m;
            System.out.println("tenants stale: retention did not run during the " + (stale ? "stale" : "fresh") + " drain (attempt "
                    + attempt + ": " + Json.MAPPER.writeValueAsString(m) + ")");
            if (attempt == 2) {
                throw new IllegalStateException("retention did not run during the " + (stale ? "stale" : "fresh")
                        + " drain twice: nothing measured (retention period " + Stats.round(period) + " s)");
            }
        }
    }

    private static void setPaused(FairqServer server, List<String> tenants, boolean paused) throws Exception {
        for (String t : tenants) server.send("PATCH", "/v1/admin/tenants/" + t, server.adminToken, "{\"paused\": " + paused + "}", 200);
    }

    /**
     * The queue as autovacuum often finds it: drained to zero, the table holding only the last few finished jobs
     * (100, over the 10 tenants, through the platform), and analysed then: every row 'succeeded'.
     */
    private void analyzeNearlyEmpty(PhaseDatabase db) throws InterruptedException {
        List<JobRequest> few = new ArrayList<>();
        for (int i = 0; i < 100; i++) few.add(JobRequest.builder("t" + (i % 10), "noop").build());
        enqueue(db, few);
        awaitNoneWaiting(db, "true", 60_000);
        awaitNoneRunning(db, 60_000);
        db.dsl().execute("ANALYZE jobs");
    }

    /** Inserts one finished job 2 days old and waits until retention deletes it; returns when (database epoch). */
    private double awaitRetentionRun(PhaseDatabase db) throws InterruptedException {
        long id = insertFinished(db, "'t0'", 1, "now() - interval '2 days'")[0];
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(150);
        while (db.count("SELECT count(*) FROM jobs WHERE id = ?", id) > 0) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("retention did not delete a finished job 2 days old within 150 s");
            }
            Thread.sleep(50);
        }
        return db.now();
    }

    private static long autoanalyzeCount(PhaseDatabase db) {
        return db.count("SELECT autoanalyze_count FROM pg_stat_user_tables WHERE relname = 'jobs'");
    }

    /**
     * {@code count} succeeded noop jobs, by SQL: tenant and timestamp (created, admitted, started and finished)
     * are SQL expressions in terms of g (1..count); returns the id range (one INSERT: contiguous ids).
     */
    private static long[] insertFinished(PhaseDatabase db, String tenant, int count, String at) {
        Record r = db.dsl().fetchOne("""
                WITH ins AS (
                    INSERT INTO jobs (tenant_id, type, status, attempts, run_at, created_at, admitted_at, started_at, finished_at)
                    SELECT %s, 'noop', 'succeeded', 1, ts, ts, ts, ts, ts
                    FROM (SELECT g, %s AS ts FROM generate_series(1, ?::int) g) s
                    ORDER BY g
                    RETURNING id)
                SELECT min(id), max(id), count(*) FROM ins""".formatted(tenant, at), count);
        if (r.get(2, Long.class) != count || r.get(1, Long.class) - r.get(0, Long.class) + 1 != count) {
            throw new IllegalStateException("finished jobs not inserted as one id range");
        }
        return new long[]{r.get(0, Long.class), r.get(1, Long.class)};
    }

    // ---------------------------------------------------------------------------------------------------
    // Trickle under a flood
    // ---------------------------------------------------------------------------------------------------

    /**
     * {@code tenants} small tenants (k0.., default limits, one API key each from the admin API) each submit
     * sleep 5 ms jobs over HTTP, 100 per second in all, round-robin (each tenant one job every tenants/100 s).
     * After a warm-up (a first flood of 10,000 of the same jobs under the trickle, drained, then 10 s of the trickle
     * alone): 30 s alone, then tenant {@code flood} (limits out of the way) enqueues 30,000
     * sleep 5 ms jobs at once and the trickle goes on until the flood has no job left waiting. Enqueue-to-start
     * (started_at - created_at, the database's clock) of the trickle jobs created alone, and of those created
     * between the flood's enqueue and the start of its last job.
     */
    private Map<String, Object> tricklePhase(BenchDatabase bench, int tenants) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("trickle_tenants", tenants);
        out.put("trickle", TRICKLE_PER_S + " sleep 5 ms jobs/s over HTTP, round-robin");
        out.put("flood", FLOOD + " sleep 5 ms jobs of one tenant (JobStore.enqueueAll)");
        try (PhaseDatabase db = PhaseDatabase.create(bench, "trickle")) {
            db.dsl().execute("INSERT INTO tenants (id, rate_per_second, burst, max_running, max_queued) "
                    + "VALUES ('flood', 1000000, 1000000, 100000, 100000000)");
            db.dsl().execute("INSERT INTO tenants (id) SELECT 'k' || g FROM generate_series(0, ?::int - 1) g", tenants);
            try (FairqServer server = FairqServer.start(db, "trickle", THREADS)) {
                List<String> keys = new ArrayList<>(tenants);
                for (int i = 0; i < tenants; i++) {
                    keys.add(Json.MAPPER.readTree(server.send("POST", "/v1/admin/tenants/k" + i + "/keys", server.adminToken, "", 201))
                            .get("key").asText());
                }
                // warm the workers up on the flood tenant's kind of jobs (noop here, quickly)
                List<JobRequest> warm = new ArrayList<>();
                for (int i = 0; i < 20_000; i++) warm.add(JobRequest.builder("flood", "noop").build());
                enqueue(db, warm);
                awaitNoneWaiting(db, "tenant_id = 'flood'", 180_000);

                progress("trickle: warm-up, alone, then the flood");
                Trickle trickle = new Trickle(server, keys);
                try {
                    trickle.start();
                    // a first, smaller flood under the trickle, drained before anything is measured: the server's
                    // JIT compilers otherwise spent a quarter of the machine during the measured flood (JFR,
                    // compiler threads, 396 deoptimizations), recompiling the paths a flood under a trickle takes
                    List<JobRequest> warmFlood = new ArrayList<>(FLOOD / 3);
                    for (int i = 0; i < FLOOD / 3; i++) warmFlood.add(JobRequest.builder("flood", "sleep").payload("{\"ms\": 5}").build());
                    enqueueAny(db, warmFlood);
                    awaitNoneWaiting(db, "tenant_id = 'flood'", FLOOD_CAP_MS);
                    Thread.sleep(TRICKLE_WARMUP_MS);
                    out.put("server_jit_quiet_after_s", server.awaitJitQuiet(JIT_QUIET_CAP_MS));
                    double jitAlone = server.jitCpuSeconds();
                    double aloneFrom = db.now();
                    Wal walAlone = wal(db);
                    Thread.sleep(TRICKLE_ALONE_MS);
                    double aloneTo = db.now();
                    out.put("alone_wal", walSince(db, walAlone));
                    out.put("alone_server_jit_cpu_share", Stats.round((server.jitCpuSeconds() - jitAlone) / (aloneTo - aloneFrom)));
                    List<JobRequest> flood = new ArrayList<>(FLOOD);
                    for (int i = 0; i < FLOOD; i++) flood.add(JobRequest.builder("flood", "sleep").payload("{\"ms\": 5}").build());
                    double floodFrom = db.now();
                    Wal walFlood = wal(db);
                    double jitFlood = server.jitCpuSeconds();
                    long[] floodIds = enqueueAny(db, flood);
                    out.put("flood_enqueue_s", Stats.round(db.now() - floodFrom));
                    // until no flood job waits, or FLOOD_CAP_MS: then the flood window ends there (capped)
                    long floodDeadline = System.nanoTime() + FLOOD_CAP_MS * 1_000_000;
                    boolean floodCapped = false;
                    while (db.anyWaiting("tenant_id = 'flood'")) {
                        if (System.nanoTime() > floodDeadline) {
                            floodCapped = true;
                            break;
                        }
                        if (!server.alive()) throw new IllegalStateException("the server exited; see " + server.log);
                        Thread.sleep(100);
                    }
                    double floodEnd = floodCapped ? db.now() : ((Number) db.dsl().fetchValue(
                            "SELECT fairq_epoch(max(started_at)) FROM jobs WHERE tenant_id = 'flood' AND id BETWEEN ? AND ?",
                            floodIds[0], floodIds[1])).doubleValue();
                    out.put("flood_wal", walSince(db, walFlood));
                    out.put("flood_server_jit_cpu_share", Stats.round((server.jitCpuSeconds() - jitFlood) / (db.now() - floodFrom)));
                    trickle.stop();
                    out.put("flood_capped", floodCapped);
                    out.put("flood_started_by_end", db.count("SELECT count(*) FROM jobs WHERE tenant_id = 'flood' AND id BETWEEN ? AND ? "
                            + "AND fairq_epoch(started_at) <= ?", floodIds[0], floodIds[1], floodEnd));
                    // every accepted trickle job must run, flood or not
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
                    while (db.anyJob("tenant_id <> 'flood' AND status IN ('pending', 'ready', 'running')")) {
                        if (System.nanoTime() > deadline) throw new IllegalStateException("trickle jobs not all done 120 s after the trickle stopped");
                        Thread.sleep(100);
                    }

                    // A refused submit (5xx, timeout) is the platform's answer under load, reported, not a broken run;
                    // an accepted job that is not stored is (one the client gave up on may or may not have been stored)
                    long stored = db.count("SELECT count(*) FROM jobs WHERE tenant_id <> 'flood'");
                    if (stored < trickle.ok.get() || stored > trickle.ok.get() + trickle.failed.get()) {
                        throw new IllegalStateException(stored + " trickle jobs stored, " + trickle.ok.get() + " accepted (201), "
                                + trickle.failed.get() + " refused or unanswered");
                    }
                    long notOnce = db.count("SELECT count(*) FROM jobs WHERE tenant_id <> 'flood' AND (status <> 'succeeded' OR attempts <> 1)");
                    if (notOnce != 0) throw new IllegalStateException(notOnce + " trickle jobs did not succeed exactly once");
                    List<Double> alone = latencies(db, aloneFrom, aloneTo), flooded = latencies(db, floodFrom, floodEnd);
                    if (flooded.size() < 500) {
                        throw new IllegalStateException("only " + flooded.size() + " trickle jobs were submitted while the flood waited: nothing measured");
                    }
                    out.put("trickle_jobs_accepted", trickle.ok.get());
                    out.put("trickle_submits_failed", trickle.failed.get());
                    if (trickle.failed.get() > 0) out.put("trickle_first_failure", trickle.firstError.get());
                    // the submitter's view: the answer waits for the WAL flush (JobStore#awaitDurable), the start does not
                    List<Double> httpAlone = trickle.httpMs(aloneFrom, aloneTo), httpFlood = trickle.httpMs(floodFrom, floodEnd);
                    out.put("trickle_http_submit_p50_ms_alone", Stats.round(Stats.percentile(httpAlone, 50)));
                    out.put("trickle_http_submit_p99_ms_alone", Stats.round(Stats.percentile(httpAlone, 99)));
                    out.put("trickle_http_submit_p50_ms_flood", Stats.round(Stats.percentile(httpFlood, 50)));
                    out.put("trickle_http_submit_p99_ms_flood", Stats.round(Stats.percentile(httpFlood, 99)));
                    out.put("alone_samples", alone.size());
                    out.put("flood_samples", flooded.size());
                    out.put("flood_s", Stats.round(floodEnd - floodFrom));
                    out.put("flood_jobs_per_s", Math.round(((Number) out.get("flood_started_by_end")).doubleValue() / (floodEnd - floodFrom)));
                    // enqueue-to-start from the client's send (clientLatencies); the database's clock alone as before
                    List<double[]> aloneRows = clientRows(db, trickle, aloneFrom, aloneTo),
                            floodRows = clientRows(db, trickle, floodFrom, floodEnd);
                    List<Double> aloneClient = clientLatencies(aloneRows), floodClient = clientLatencies(floodRows);
                    out.put("trickle_p50_ms_alone", Stats.round(Stats.percentile(aloneClient, 50)));
                    out.put("trickle_p99_ms_alone", Stats.round(Stats.percentile(aloneClient, 99)));
                    out.put("trickle_p50_ms_flood", Stats.round(Stats.percentile(floodClient, 50)));
                    out.put("trickle_p99_ms_flood", Stats.round(Stats.percentile(floodClient, 99)));
                    out.put("trickle_max_ms_flood", Stats.round(Stats.percentile(floodClient, 100)));
                    out.put("trickle_p99_ratio", Stats.ratio(Stats.percentile(floodClient, 99), Stats.percentile(aloneClient, 99)));
                    out.put("trickle_client_slowest_alone", clientSlowest(aloneRows));
                    out.put("trickle_client_slowest_flood", clientSlowest(floodRows));
                    out.put("trickle_started_in_enqueue_alone", startedInEnqueue(db, aloneFrom, aloneTo));
                    out.put("trickle_started_in_enqueue_flood", startedInEnqueue(db, floodFrom, floodEnd));
                    out.put("trickle_db_p50_ms_alone", Stats.round(Stats.percentile(alone, 50)));
                    out.put("trickle_db_p99_ms_alone", Stats.round(Stats.percentile(alone, 99)));
                    out.put("trickle_db_p50_ms_flood", Stats.round(Stats.percentile(flooded, 50)));
                    out.put("trickle_db_p99_ms_flood", Stats.round(Stats.percentile(flooded, 99)));
                    out.put("trickle_steps_alone", trickleSteps(db, aloneFrom, aloneTo));
                    out.put("trickle_steps_flood", trickleSteps(db, floodFrom, floodEnd));
                    Map<String, Object> tAlone = server.tickSummary(aloneFrom, aloneTo), tFlood = server.tickSummary(floodFrom, floodEnd);
                    tAlone.forEach((k, v) -> out.put("alone_" + k, v));
                    tFlood.forEach((k, v) -> out.put("flood_" + k, v));
                    out.put("tick_p99_ms", tFlood.get("tick_p99_ms"));
                } finally {
                    trickle.timer.shutdownNow();
                }
            }
        }
        return out;
    }

    /** pg_stat_wal's counters (PostgreSQL 14-17) and when they were read (epoch seconds, the database clock). */
    private record Wal(double at, long records, long fullPageImages, long bytes, long buffersFull) {}

    private static Wal wal(PhaseDatabase db) {
        Record r = db.dsl().fetchOne("SELECT fairq_epoch(clock_timestamp()), wal_records, wal_fpi, wal_bytes::bigint, "
                + "wal_buffers_full FROM pg_stat_wal");
        return new Wal(r.get(0, Double.class), r.get(1, Long.class), r.get(2, Long.class), r.get(3, Long.class), r.get(4, Long.class));
    }

    /**
     * What was written to the WAL since {@code from}: a synchronous commit waits for the flush of every byte written
     * before its own commit record, and a full WAL buffer makes every writer wait for a write. pg_stat_wal is
     * updated about once a second, so a window's figures are to about a second.
     */
    private static Map<String, Object> walSince(PhaseDatabase db, Wal from) {
        Wal to = wal(db);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("mb_per_s", Stats.round((to.bytes() - from.bytes()) / 1e6 / (to.at() - from.at())));
        m.put("records", to.records() - from.records());
        m.put("full_page_images", to.fullPageImages() - from.fullPageImages());
        m.put("bytes", to.bytes() - from.bytes());
        m.put("buffers_full", to.buffersFull() - from.buffersFull());
        return m;
    }

    /**
     * Enqueue-to-start on the client's clock: from just before the trickle sent the submit to the job's started_at
     * (the machine's one clock, read by the bench and by the database), of the jobs {@link #clientRows} read. A job
     * started in its enqueue (a free thread of the server's worker, stop 30) has started_at = created_at, the
     * insert's own time, so the database's clock alone gives it 0 ms and the ratio had nothing to divide by
     * (alone, 99% of the trickle started so). This counts what the server did before its insert; it still stops short
     * of the handler's first line (the commit and the hand-off to the thread, 0.1-1 ms), which only makes the alone
     * figure smaller and the ratio larger.
     */
    private static List<Double> clientLatencies(List<double[]> rows) {
        List<Double> ms = new ArrayList<>(rows.size());
        for (double[] r : rows) ms.add(r[0]);
        return ms;
    }

    /**
     * Per trickle job created in [from, to) and answered to the client: enqueue-to-start on the client's clock
     * (ms), send -> created (ms), created -> started (ms), and when it was sent (seconds after {@code from}).
     */
    private static List<double[]> clientRows(PhaseDatabase db, Trickle trickle, double from, double to) {
        List<double[]> rows = new ArrayList<>();
        for (Record r : db.dsl().fetch("SELECT id, fairq_epoch(created_at), fairq_epoch(started_at) FROM jobs "
                + "WHERE tenant_id <> 'flood' AND fairq_epoch(created_at) >= ? AND fairq_epoch(created_at) < ?", from, to)) {
            Double sent = trickle.sentAtById.get(r.get(0, Long.class));
            if (sent == null) continue;
            double created = r.get(1, Double.class), started = r.get(2, Double.class);
            rows.add(new double[]{(started - sent) * 1000, (created - sent) * 1000, (started - created) * 1000, sent - from});
        }
        return rows;
    }

    /**
     * The slowest 1% on the client's clock, split where they waited: from the send to the insert's time (created_at:
     * the HTTP request, the key, the request's turn for a thread and a connection) and from there to the start (the
     * commit, the claim), with when each was sent, in seconds after {@code from} (a tail made by one event shows as
     * one cluster, a periodic one as a period).
     */
    private static Map<String, Object> clientSlowest(List<double[]> clientRows) {
        List<double[]> rows = new ArrayList<>(clientRows);
        Map<String, Object> m = new LinkedHashMap<>();
        if (rows.isEmpty()) return m;
        rows.sort((x, y) -> Double.compare(y[0], x[0]));
        List<double[]> slow = rows.subList(0, Math.max(1, rows.size() / 100));
        m.put("n", slow.size());
        m.put("send_to_created_mean_ms", Stats.round(slow.stream().mapToDouble(x -> x[1]).average().orElse(0)));
        m.put("created_to_started_mean_ms", Stats.round(slow.stream().mapToDouble(x -> x[2]).average().orElse(0)));
        m.put("sent_s_after_window_start", slow.stream().map(x -> Math.round(x[3] * 10) / 10.0).sorted().toList());
        return m;
    }

    /** Share of the trickle jobs created in [from, to) that were started in their enqueue (started_at = created_at). */
    private static double startedInEnqueue(PhaseDatabase db, double from, double to) {
        Record r = db.dsl().fetchOne("SELECT count(*) FILTER (WHERE started_at = created_at), count(*) FROM jobs "
                + "WHERE tenant_id <> 'flood' AND fairq_epoch(created_at) >= ? AND fairq_epoch(created_at) < ?", from, to);
        return Stats.ratio(r.get(0, Long.class), Math.max(1, r.get(1, Long.class)));
    }

    private static List<Double> latencies(PhaseDatabase db, double from, double to) {
        List<Double> ms = new ArrayList<>();
        for (Record r : db.dsl().fetch("SELECT (fairq_epoch(started_at) - fairq_epoch(created_at)) * 1000 FROM jobs "
                + "WHERE tenant_id <> 'flood' AND fairq_epoch(created_at) >= ? AND fairq_epoch(created_at) < ?", from, to)) {
            ms.add(r.get(0, Double.class));
        }
        return ms;
    }

    /**
     * Where the trickle jobs created in [from, to) waited, on the database clock: created -> admitted (the
     * scheduler; 0 for a job inserted ready by its tenant's admission grant), admitted -> started (the ready
     * buffer and the claim), and the share admitted inside their enqueue; for the slowest 1%, the same split and
     * when each was created, in seconds after {@code from} (so a tail made by one event shows as one cluster).
     */
    private static Map<String, Object> trickleSteps(PhaseDatabase db, double from, double to) {
        List<Double> admitted = new ArrayList<>(), started = new ArrayList<>(), total = new ArrayList<>(), at = new ArrayList<>();
        long inline = 0;
        List<Long> ids = new ArrayList<>();
        for (Record r : db.dsl().fetch("SELECT extract(epoch FROM admitted_at - created_at) * 1000, "
                + "extract(epoch FROM started_at - admitted_at) * 1000, fairq_epoch(created_at) - ?, id FROM jobs "
                + "WHERE tenant_id <> 'flood' AND fairq_epoch(created_at) >= ? AND fairq_epoch(created_at) < ?", from, from, to)) {
            double a = r.get(0, Double.class), s = r.get(1, Double.class);
            at.add(r.get(2, Double.class));
            ids.add(r.get(3, Long.class));
            admitted.add(a);
            started.add(s);
            total.add(a + s);
            if (a == 0) inline++;
        }
        Map<String, Object> m = new LinkedHashMap<>();
        if (total.isEmpty()) return m;
        m.put("created_to_admitted_p50", Stats.round(Stats.percentile(admitted, 50)));
        m.put("created_to_admitted_p99", Stats.round(Stats.percentile(admitted, 99)));
        m.put("admitted_to_started_p50", Stats.round(Stats.percentile(started, 50)));
        m.put("admitted_to_started_p99", Stats.round(Stats.percentile(started, 99)));
        m.put("admitted_in_enqueue", Stats.round((double) inline / total.size()));
        // the slowest 1% by count, not "at or above the p99": alone, every job started in its enqueue reads 0 ms,
        // so that took all 3,004 of them, and the scan below ran for minutes after each measured phase
        List<Integer> bySlowest = new ArrayList<>();
        for (int i = 0; i < total.size(); i++) bySlowest.add(i);
        bySlowest.sort((x, y) -> Double.compare(total.get(y), total.get(x)));
        List<Double> slowAdmitted = new ArrayList<>(), slowStarted = new ArrayList<>(), slowAt = new ArrayList<>();
        List<Long> slowIds = new ArrayList<>();
        for (int i : bySlowest.subList(0, Math.max(1, total.size() / 100))) {
            slowAdmitted.add(admitted.get(i));
            slowStarted.add(started.get(i));
            slowAt.add(Math.round(at.get(i) * 10) / 10.0);
            slowIds.add(ids.get(i));
        }
        // whether the slowest waited while other jobs kept starting (an order the claim chose) or while nothing
        // started at all (a stall of the whole process or machine): the jobs of any tenant started between each
        // one's creation and its start (a scan of jobs per slow job: no index on started_at alone, V6)
        Number meanwhile = slowIds.isEmpty() ? null : (Number) db.dsl().fetchValue("SELECT avg(m.n) FROM jobs s "
                + "JOIN LATERAL (SELECT count(*) AS n FROM jobs o WHERE o.started_at > s.created_at "
                + "AND o.started_at < s.started_at) m ON true WHERE s.id = ANY(?)", (Object) slowIds.toArray(Long[]::new));
        double startedMeanwhile = meanwhile == null ? 0 : meanwhile.doubleValue();
        Collections.sort(slowAt);
        m.put("slowest_1pct_created_s_after_window_start", slowAt);
        m.put("slowest_1pct_created_to_admitted_mean", Stats.round(slowAdmitted.stream().mapToDouble(x -> x).average().orElse(0)));
        m.put("slowest_1pct_admitted_to_started_mean", Stats.round(slowStarted.stream().mapToDouble(x -> x).average().orElse(0)));
        m.put("slowest_1pct_admitted_in_enqueue", slowAdmitted.stream().filter(x -> x == 0).count() + " of " + slowAdmitted.size());
        m.put("slowest_1pct_jobs_started_while_it_waited_mean", Stats.round(startedMeanwhile));
        return m;
    }

    /** Submits jobs over HTTP on a fixed schedule, without waiting for answers (a slow answer does not slow the rate). */
    private static final class Trickle {
        private final FairqServer server;
        private final List<String> keys;
        private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "bench-trickle");
            t.setDaemon(true); // a failed run must not be kept alive (and submitting) by it
            return t;
        });
        private final AtomicInteger next = new AtomicInteger(), inFlight = new AtomicInteger();
        final AtomicLong ok = new AtomicLong(), failed = new AtomicLong();
        final AtomicReference<String> firstError = new AtomicReference<>();
        /** Per answered submit: when it was sent (epoch seconds, this machine's clock, as the database's) and its ms. */
        private final List<double[]> httpMs = Collections.synchronizedList(new ArrayList<>());
        /** When each accepted job's submit was sent (epoch seconds, as httpMs). */
        final Map<Long, Double> sentAtById = new java.util.concurrent.ConcurrentHashMap<>();

        Trickle(FairqServer server, List<String> keys) {
            this.server = server;
            this.keys = keys;
        }

        void start() {
            timer.scheduleAtFixedRate(this::fire, 0, 1_000_000 / TRICKLE_PER_S, TimeUnit.MICROSECONDS);
        }

        private void fire() {
            String key = keys.get(next.getAndIncrement() % keys.size());
            HttpRequest req = FairqServer.request("POST", server.base + "/v1/jobs", key, "{\"type\": \"sleep\", \"payload\": {\"ms\": 5}}",
                    Duration.ofSeconds(30)).build();
            Instant now = Instant.now(); // microseconds on Linux, as clock_timestamp() of a database on this machine
            double sentAt = now.getEpochSecond() + now.getNano() / 1e9;
            long t0 = System.nanoTime();
            inFlight.incrementAndGet();
            server.http.sendAsync(req, HttpResponse.BodyHandlers.ofString()).whenComplete((r, e) -> {
                if (e == null && r.statusCode() == 201) {
                    ok.incrementAndGet();
                    httpMs.add(new double[]{sentAt, (System.nanoTime() - t0) / 1e6});
                    try {
                        sentAtById.put(Json.MAPPER.readTree(r.body()).get("id").asLong(), sentAt);
                    } catch (Exception parse) {
                        firstError.compareAndSet(null, "an answer without a job id: " + r.body());
                    }
                } else {
                    failed.incrementAndGet();
                    firstError.compareAndSet(null, e != null ? e.toString()
                            : r.statusCode() + " " + r.body().substring(0, Math.min(200, r.body().length())));
                }
                inFlight.decrementAndGet();
            });
        }

        void stop() throws InterruptedException {
            timer.shutdown();
            timer.awaitTermination(10, TimeUnit.SECONDS);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (inFlight.get() > 0 && System.nanoTime() < deadline) Thread.sleep(20);
            if (inFlight.get() > 0) throw new IllegalStateException(inFlight.get() + " trickle submits unanswered after 60 s");
        }

        /** The answer times of the submits sent in [from, to) (epoch seconds). */
        List<Double> httpMs(double from, double to) {
            List<Double> ms = new ArrayList<>();
            synchronized (httpMs) {
                for (double[] h : httpMs) if (h[0] >= from && h[0] < to) ms.add(h[1]);
            }
            return ms;
        }
    }

    private static void awaitNoneWaiting(PhaseDatabase db, String where, long timeoutMs) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (db.anyWaiting("run_at <= now() AND (" + where + ")")) {
            if (System.nanoTime() > deadline) throw new IllegalStateException("jobs still waiting (" + where + ") after " + timeoutMs + " ms");
            Thread.sleep(100);
        }
    }

    private static void awaitNoneRunning(PhaseDatabase db, long timeoutMs) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (db.anyJob("status = 'running'")) {
            if (System.nanoTime() > deadline) throw new IllegalStateException("jobs still running after " + timeoutMs + " ms");
            Thread.sleep(100);
        }
    }

    // ---------------------------------------------------------------------------------------------------
    // Metrics and the admin overview
    // ---------------------------------------------------------------------------------------------------

    /**
     * {@code active} tenants (t0..) run two noop jobs each (drained: recently run) and then hold one job each
     * scheduled an hour ahead (pending); then idle tenants are registered up to {@code registered}. Up to 5
     * scrapes of {@code :admin/metrics} and up to 3 {@code GET /v1/admin/overview}, each given 120 s at most,
     * each series stopped once it has taken 150 s.
     */
    private Map<String, Object> metricsPhase(BenchDatabase bench, int active, int registered) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("registered_tenants", registered);
        out.put("active_tenants", active);
        try (PhaseDatabase db = PhaseDatabase.create(bench, "metrics")) {
            insertActiveTenants(db, "t", active);
            try (FairqServer server = FairqServer.start(db, "metrics", THREADS)) {
                List<String> tenants = ids("t", active);
                List<JobRequest> jobs = new ArrayList<>();
                for (int i = 0; i < 2 * active; i++) jobs.add(JobRequest.builder(tenants.get(i % active), "noop").build());
                enqueue(db, jobs);
                awaitNoneWaiting(db, "true", 300_000);
                awaitNoneRunning(db, 60_000);
                OffsetDateTime later = OffsetDateTime.now(ZoneOffset.UTC).plusHours(1);
                jobs.clear();
                for (String t : tenants) jobs.add(JobRequest.builder(t, "noop").runAt(later).build());
                enqueue(db, jobs);
                double t0 = db.now();
                insertIdleTenants(db, registered - active);
                out.put("idle_insert_s", Stats.round(db.now() - t0));
                Thread.sleep(3_000);
                progress("scraping /metrics, then the admin overview");
                double from = db.now();
                Map<String, Object> metrics = fetchSeries("GET :admin/metrics",
                        () -> server.fetch(server.adminBase + "/metrics", null, 120_000), 5, 150_000);
                Map<String, Object> overview = fetchSeries("GET /v1/admin/overview",
                        () -> server.fetch(server.base + "/v1/admin/overview", server.adminToken, 120_000), 3, 150_000);
                metrics.forEach((k, v) -> out.put("metrics_" + k, v));
                overview.forEach((k, v) -> out.put("overview_" + k, v));
                Map<String, Object> ticks = server.tickSummary(from, db.now());
                out.putAll(ticks);
            }
        }
        return out;
    }

    /** One GET of a series ({@link FairqServer#fetch} bound to its URL). */
    interface Fetcher {
        FairqServer.Fetch fetch() throws Exception;
    }

    /**
     * Up to {@code max} fetches, stopped once they have taken {@code budgetMillis}. A size is the endpoint's only from
     * a whole 200 answer: any other status throws (a 404 or 500 body is small, and its size printed as
     * {@code metrics_bytes} read as the target met; a timeout counted its size as 0), and when the first fetch is cut
     * short at its deadline {@code bytes} is null and what had arrived is {@code bytes_at_least} (0 when the headers
     * never came).
     */
    static Map<String, Object> fetchSeries(String what, Fetcher fetcher, int max, long budgetMillis) throws Exception {
        List<Double> ms = new ArrayList<>();
        long bytes = -1, atLeast = 0;
        boolean cut = false;
        int status = 0;
        long t0 = System.nanoTime();
        for (int i = 0; i < max && System.nanoTime() - t0 < budgetMillis * 1_000_000; i++) {
            FairqServer.Fetch f = fetcher.fetch();
            ms.add(f.ms());
            status = f.status();
            if (f.cutShort()) {
                cut = true;
                atLeast = f.bytes();
                break;
            }
            if (f.status() != 200) throw new IllegalStateException(what + " answered " + f.status() + ", not 200: nothing measured");
            bytes = Math.max(bytes, f.bytes());
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("bytes", bytes < 0 ? null : bytes);
        if (bytes < 0) m.put("bytes_at_least", atLeast);
        m.put("ms", Stats.round(Stats.percentile(ms, 50)));
        m.put("max_ms", Stats.round(Collections.max(ms)));
        m.put("requests", ms.size());
        m.put("status", status);
        if (cut) m.put("cut_short_at_120_s", true);
        return m;
    }

    // ---------------------------------------------------------------------------------------------------
    // Tenant reads and submits with a large retained history
    // ---------------------------------------------------------------------------------------------------

    /**
     * Tenant {@code big} with {@code retained} succeeded jobs finished over the last 23 hours (inside the 1-day
     * retention), by SQL. A pending job is held by the tenant's rate (0.001/s, burst 1: its first job took the
     * only token), so explain takes its full path. 16 callers (wrk's connections when it is installed) warm the
     * server up until its JIT compilers are quiet, then 10 s each (after 2 s not counted) on
     * {@code GET /v1/stats}, {@code GET /v1/dashboard} and {@code GET /v1/jobs/{id}/explain}; then, with the
     * limits raised over the admin API and the single submit warmed up the same way, on {@code POST /v1/jobs} (one
     * noop job) and {@code POST /v1/jobs/batch} (100 noop jobs; after the single submits, its 2 s discarded only). Every job stored must then succeed exactly once, and
     * every accepted one must be stored.
     */
    private Map<String, Object> statsPhase(BenchDatabase bench, int retained) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("retained_jobs", retained);
        out.put("callers", CALLERS);
        out.put("measured_s_per_endpoint", LOAD_MS / 1000);
        try (PhaseDatabase db = PhaseDatabase.create(bench, "stats")) {
            // api limits far above what 16 callers send back to back: this phase measures the endpoints, not the limiter
            db.dsl().execute("INSERT INTO tenants (id, rate_per_second, burst, max_running, max_queued, api_rate_per_second, api_burst) "
                    + "VALUES ('big', 0.001, 1, 100, 100000000, 1000000, 1000000)");
            double t0 = db.now();
            long[] kept = insertFinished(db, "'big'", retained,
                    "now() - interval '1 minute' - (g::double precision / %d) * interval '23 hours'".formatted(retained));
            out.put("insert_s", Stats.round(db.now() - t0));
            db.dsl().execute("VACUUM ANALYZE jobs");
            try (FairqServer server = FairqServer.start(db, "stats", THREADS)) {
                String key = Json.MAPPER.readTree(server.send("POST", "/v1/admin/tenants/big/keys", server.adminToken, "", 201))
                        .get("key").asText();
                String noop = "{\"type\": \"noop\", \"payload\": {}}";
                long first = Json.MAPPER.readTree(server.send("POST", "/v1/jobs", key, noop, 201)).get("id").asLong();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (db.count("SELECT count(*) FROM jobs WHERE id = ? AND status = 'succeeded'", first) == 0) {
                    if (System.nanoTime() > deadline) throw new IllegalStateException("the first job did not run in 30 s");
                    Thread.sleep(50);
                }
                long waiting = Json.MAPPER.readTree(server.send("POST", "/v1/jobs", key, noop, 201)).get("id").asLong();
                Thread.sleep(1_500); // the scheduler publishes its per-tenant state (tokens) once a second
                JsonNode why = Json.MAPPER.readTree(server.send("GET", "/v1/jobs/" + waiting + "/explain", key, "", 200));
                out.put("explain_reason", why.path("reason").asText());
                if (!why.path("status").asText().equals("pending")) throw new IllegalStateException("the explained job is not pending: " + why);

                Optional<Path> wrk = Wrk.binary();
                out.put("client", wrk.map(w -> "wrk -t" + Wrk.THREADS + " -c" + CALLERS + " (" + w + ")").orElse(
                        "java.net.http, " + CALLERS + " threads in the bench JVM (wrk is not on PATH; its CPU per request shares the server's cores)"));
                Caller caller = wrk.isPresent() ? new WrkCaller(server, wrk.get()) : new JavaCaller(server);
                List<String> readPaths = List.of("/v1/stats", "/v1/dashboard", "/v1/jobs/" + waiting + "/explain");
                progress("16 callers: warming the server up on stats, dashboard and explain");
                out.putAll(caller.warmUp("GET", readPaths, key, "", 200).figures());
                progress("16 callers: stats, dashboard, explain, then single and batch submits");
                double from = db.now();
                Load stats = caller.load("GET", "/v1/stats", key, "", 200);
                Load dash = caller.load("GET", "/v1/dashboard", key, "", 200);
                Load explain = caller.load("GET", "/v1/jobs/" + waiting + "/explain", key, "", 200);
                out.putAll(server.tickSummary(from, db.now()));
                put(out, "stats", stats);
                put(out, "dashboard", dash);
                put(out, "explain", explain);

                server.send("PATCH", "/v1/admin/tenants/big", server.adminToken,
                        "{\"rate_per_second\": 1000000, \"burst\": 1000000, \"max_running\": 100000}", 200);
                Thread.sleep(1_500); // limits are live within a second
                Caller.WarmUp postWarm = caller.warmUp("POST", List.of("/v1/jobs"), key, noop, 201);
                out.put("post_warmup_s", postWarm.figures().get("warmup_s"));
                out.put("post_warmup_capped", postWarm.figures().get("warmup_capped"));
                Load post = caller.load("POST", "/v1/jobs", key, noop, 201);
                StringBuilder batch = new StringBuilder("{\"jobs\": [");
                for (int i = 0; i < BATCH; i++) batch.append(i == 0 ? "" : ", ").append(noop);
                Load batches = caller.load("POST", "/v1/jobs/batch", key, batch.append("]}").toString(), 201);
                put(out, "post", post);
                put(out, "batch", batches);

                awaitNoneWaiting(db, "true", 300_000);
                awaitNoneRunning(db, 60_000);
                // wrk stops with up to a request per connection unanswered, which the server may have accepted
                long expected = 2 + postWarm.accepted() + post.accepted + (long) BATCH * batches.accepted;
                long unseen = postWarm.unseen() + post.unseen + (long) BATCH * batches.unseen;
                long created = db.count("SELECT count(*) FROM jobs WHERE id > ?", kept[1]);
                if (created < expected || created > expected + unseen) {
                    throw new IllegalStateException(created + " jobs stored, " + expected + " accepted (and at most " + unseen + " unanswered)");
                }
                long once = db.count("SELECT count(*) FROM jobs WHERE id > ? AND status = 'succeeded' AND attempts = 1", kept[1]);
                if (once != created) throw new IllegalStateException((created - once) + " submitted jobs did not succeed exactly once");
                long still = db.count("SELECT count(*) FROM jobs WHERE id BETWEEN ? AND ?", kept[0], kept[1]);
                if (still != retained) throw new IllegalStateException("retained jobs went from " + retained + " to " + still);
            }
        }
        return out;
    }

    /**
     * What one endpoint measured: p50 and p99 (ms) and requests/s over {@code LOAD_MS}; {@code accepted}: every
     * response with the expected status, the discarded first {@code LOAD_WARMUP_MS} included (each submit created
     * jobs); {@code unseen}: requests that may have been accepted without their answer being counted.
     */
    private record Load(double p50, double p99, double rps, long accepted, long unseen) {}

    private static void put(Map<String, Object> out, String name, Load l) {
        out.put(name + "_p50_ms", Stats.round(l.p50()));
        out.put(name + "_p99_ms", Stats.round(l.p99()));
        out.put(name + "_rps", Math.round(l.rps()));
    }

    /** {@code CALLERS} callers in a closed loop: wrk when it is installed, else threads of this JVM. */
    private abstract static class Caller {
        final FairqServer server;

        Caller(FairqServer server) {
            this.server = server;
        }

        /** {@code paths} round-robin for {@code millis}: requests/s and the expected responses. */
        abstract Window window(String method, List<String> paths, String token, String body, int expect, long millis) throws Exception;

        /** 2 s not counted, then 10 s measured. */
        abstract Load load(String method, String path, String token, String body, int expect) throws Exception;

        record Window(long rps, long accepted, long unseen) {}

        /** The warm-up's figures for the JSON, and what its requests may have created (as {@link Load}). */
        record WarmUp(Map<String, Object> figures, long accepted, long unseen) {}

        /**
         * Windows of {@code WARMUP_WINDOW_MS} until the server's JIT compilers used under
         * {@link FairqServer#JIT_QUIET_SHARE} of a core in a window and the rate is within 10% of the window before
         * (at most {@code WARMUP_MAX_MS}; without /proc, the rate alone). A rate that stops rising was not enough:
         * on 2 cores under 16 callers the C2 thread had 12 s of CPU in the first 40 s, and the rate rose 3-8% a
         * window for two minutes, 590 -> 2,320 requests/s, then stepped to 4,100 as the compilers went quiet
         * (Stop 37; the JIT was also what the first runs of Stop 23 measured).
         */
        WarmUp warmUp(String method, List<String> paths, String token, String body, int expect) throws Exception {
            List<Long> rates = new ArrayList<>();
            List<Double> compiler = new ArrayList<>();
            long start = System.nanoTime(), accepted = 0, unseen = 0;
            double jit = server.jitCpuSeconds();
            while ((System.nanoTime() - start) / 1_000_000 < WARMUP_MAX_MS) {
                Window w = window(method, paths, token, body, expect, WARMUP_WINDOW_MS);
                accepted += w.accepted();
                unseen += w.unseen();
                double jitNow = server.jitCpuSeconds(), used = jit < 0 ? -1 : jitNow - jit; // -1: no /proc, the rate decides
                rates.add(w.rps());
                compiler.add(Stats.round(used));
                jit = jitNow;
                int n = rates.size();
                boolean quiet = used < FairqServer.JIT_QUIET_SHARE * WARMUP_WINDOW_MS / 1000.0;
                if (n >= 2 && quiet && Math.abs(rates.get(n - 1) - rates.get(n - 2)) <= 0.1 * rates.get(n - 2)) break;
            }
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("warmup_s", Stats.round((System.nanoTime() - start) / 1e9));
            out.put("warmup_rps_per_window", rates);
            out.put("warmup_compiler_cpu_s_per_window", compiler);
            out.put("warmup_capped", (System.nanoTime() - start) / 1_000_000 >= WARMUP_MAX_MS);
            return new WarmUp(out, accepted, unseen);
        }
    }

    /** wrk with the phase's {@code CALLERS} connections (see {@link Wrk}). */
    private static final class WrkCaller extends Caller {
        private final Path wrk;

        WrkCaller(FairqServer server, Path wrk) {
            super(server);
            this.wrk = wrk;
        }

        @Override
        Window window(String method, List<String> paths, String token, String body, int expect, long millis) throws Exception {
            Wrk.Result r = Wrk.run(wrk, server.base, paths, method, token, body, CALLERS, (int) (millis / 1000), expect);
            return new Window(Math.round(r.rps()), r.count(expect), CALLERS);
        }

        @Override
        Load load(String method, String path, String token, String body, int expect) throws Exception {
            Window discarded = window(method, List.of(path), token, body, expect, LOAD_WARMUP_MS);
            Wrk.Result r = Wrk.run(wrk, server.base, List.of(path), method, token, body, CALLERS, (int) (LOAD_MS / 1000), expect);
            if (r.count(expect) == 0) throw new IllegalStateException(method + " " + path + ": no request completed within the measured 10 s");
            return new Load(r.p50Ms(), r.p99Ms(), r.rps(), discarded.accepted() + r.count(expect), discarded.unseen() + CALLERS);
        }
    }

    /** {@code CALLERS} threads of this JVM on java.net.http, each sending its next request when answered. */
    private static final class JavaCaller extends Caller {
        JavaCaller(FairqServer server) {
            super(server);
        }

        @Override
        Window window(String method, List<String> paths, String token, String body, int expect, long millis) throws Exception {
            List<Double> ms = calls(method, paths, token, body, expect, System.nanoTime(), millis);
            return new Window(Math.round(ms.size() * 1000.0 / millis), ms.size(), 0);
        }

        @Override
        Load load(String method, String path, String token, String body, int expect) throws Exception {
            List<Double> outside = new ArrayList<>(), measured = new ArrayList<>();
            long measureFrom = System.nanoTime() + LOAD_WARMUP_MS * 1_000_000;
            List<Double> ms = calls(method, List.of(path), token, body, expect, measureFrom, LOAD_WARMUP_MS + LOAD_MS);
            for (Double m : ms) (m < 0 ? outside : measured).add(m);
            if (measured.isEmpty()) throw new IllegalStateException(method + " " + path + ": no request completed within the measured 10 s");
            return new Load(Stats.percentile(measured, 50), Stats.percentile(measured, 99), measured.size() / (LOAD_MS / 1000.0),
                    outside.size() + measured.size(), 0);
        }

        /**
         * Calls for {@code millis}: the latency (ms) of every call answered {@code expect}, as a negative number
         * when it began before {@code measureFrom} or ended after the end.
         */
        private List<Double> calls(String method, List<String> paths, String token, String body, int expect, long measureFrom,
                                   long millis) throws Exception {
            List<Double> ms = Collections.synchronizedList(new ArrayList<>());
            AtomicReference<String> error = new AtomicReference<>();
            long until = System.nanoTime() + millis * 1_000_000;
            List<HttpRequest> reqs = new ArrayList<>();
            for (String path : paths) reqs.add(FairqServer.request(method, server.base + path, token, body, Duration.ofSeconds(60)).build());
            List<Thread> threads = new ArrayList<>();
            for (int c = 0; c < CALLERS; c++) {
                int first = c;
                Thread thread = new Thread(() -> {
                    for (int i = first; error.get() == null; i++) {
                        long t0 = System.nanoTime();
                        if (t0 >= until) break;
                        HttpRequest req = reqs.get(i % reqs.size());
                        try {
                            HttpResponse<String> r = server.http.send(req, HttpResponse.BodyHandlers.ofString());
                            if (r.statusCode() != expect) {
                                error.compareAndSet(null, method + " " + req.uri() + ": " + r.statusCode() + " " + r.body());
                                break;
                            }
                            long t1 = System.nanoTime();
                            double d = (t1 - t0) / 1e6;
                            ms.add(t0 >= measureFrom && t1 <= until ? d : -d);
                        } catch (Exception e) {
                            error.compareAndSet(null, method + " " + req.uri() + ": " + e);
                            break;
                        }
                    }
                }, "bench-caller-" + c);
                thread.setDaemon(true);
                thread.start();
                threads.add(thread);
            }
            for (Thread t : threads) t.join();
            if (error.get() != null) throw new IllegalStateException(error.get());
            return new ArrayList<>(ms);
        }
    }

    // ---------------------------------------------------------------------------------------------------
    // Tenants
    // ---------------------------------------------------------------------------------------------------

    /** prefix0..prefix(n-1), limits out of the way (as the other benchmarks: rate and burst 1,000,000). */
    private static void insertActiveTenants(PhaseDatabase db, String prefix, int n) {
        db.dsl().execute("INSERT INTO tenants (id, rate_per_second, burst, max_running, max_queued) "
                + "SELECT ?::text || g, 1000000, 1000000, 100000, 100000000 FROM generate_series(0, ?::int - 1) g", prefix, n);
    }

    /** idle-1..idle-n, defaults, one INSERT ... SELECT (as an operator's import would). */
    private static void insertIdleTenants(PhaseDatabase db, int n) {
        db.dsl().execute("INSERT INTO tenants (id) SELECT 'idle-' || g FROM generate_series(1, ?::int) g", n);
    }

    private static List<String> ids(String prefix, int n) {
        List<String> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) out.add(prefix + i);
        return out;
    }

    private int scaled(int n) {
        return Math.max(10, (int) Math.round(n * scale));
    }

    private static Double rate(Map<String, Map<String, Object>> results, String phase) {
        Map<String, Object> r = results.get(phase);
        return r == null ? null : ((Number) r.get("drain_jobs_per_s")).doubleValue();
    }

    /** Progress on stderr (stdout carries each phase's figures and the JSON line). */
    static void progress(String message) {
        System.err.println("tenants " + java.time.LocalTime.now().withNano(0) + " " + message);
    }

    private static String env(String name, String fallback) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? fallback : v.trim();
    }
}

package dev.fairq.bench;

import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.schema.Database;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.JobStore;
import org.jooq.DSLContext;
import org.jooq.Record;

import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static dev.fairq.bench.OrderingBench.count;

/**
 * Steady load, then a long transaction beside it. A producer enqueues 10 noop jobs every 50 ms (200 jobs/s)
 * for one worker process (8 threads). A probe thread in this JVM times the claim statement every 20 ms:
 * {@code JobStore.claim} for up to 8 jobs inside a transaction that it then rolls back (the same statement
 * the workers run, without taking their jobs). Phases: warm-up (5 s, not counted), before (20 s), during (a session holds a REPEATABLE
 * READ snapshot for 120 s, instead of the 5 minutes, to fit the 5-minute budget), after (40 s). Dead
 * tuples of jobs (pg_stat_user_tables.n_dead_tup) are sampled every second. The baseline is the before phase.
 */
final class LongTxBench implements Bench.Benchmark {
    static final long WARMUP_MS = 5_000, BEFORE_MS = 20_000, HOLD_MS = 120_000, AFTER_MS = 40_000;
    static final int PER_TICK = 10;
    static final long TICK_MS = 50;

    private enum Phase { WARMUP, BEFORE, DURING, AFTER }

    @Override
    public Map<String, Object> run(BenchDatabase db) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("load", "noop jobs at " + PER_TICK * 1000 / TICK_MS + " per second, 1 worker process x 8 threads");
        out.put("hold_s", HOLD_MS / 1000);
        out.put("phases_s", WARMUP_MS / 1000 + " warm-up (not counted), " + BEFORE_MS / 1000 + " before, " + HOLD_MS / 1000 + " during, " + AFTER_MS / 1000 + " after");
        out.put("probe", "JobStore.claim(limit 8) in a transaction rolled back, every 20 ms");
        db.truncate();
        db.createUnlimitedTenant("t0");
        JobStore store = new JobStore();
        AtomicBoolean running = new AtomicBoolean(true);
        AtomicLong produced = new AtomicLong();
        Map<Phase, List<Double>> claims = new LinkedHashMap<>();
        for (Phase p : Phase.values()) claims.put(p, java.util.Collections.synchronizedList(new ArrayList<>()));
        List<Long> deadSamples = java.util.Collections.synchronizedList(new ArrayList<>());
        java.util.concurrent.atomic.AtomicReference<Phase> phase = new java.util.concurrent.atomic.AtomicReference<>(Phase.WARMUP);
        // claim p50 per 10 s of the run, to show the cost growing while the snapshot is held
        Map<Long, List<Double>> byTenSeconds = new java.util.concurrent.ConcurrentSkipListMap<>();
        long runStart = System.nanoTime();
        Object holdStart, holdEnd, beforeStart;
        try (BenchPlatform platform = new BenchPlatform(db);
             Connection probeConnection = Database.dedicated(db.jdbcUrl, db.user, db.password, "bench-probe");
             Connection holder = Database.dedicated(db.jdbcUrl, db.user, db.password, "bench-long-tx")) {
            platform.startScheduler(SchedulerConfig.defaults());
            platform.startWorkerProcess("longtx-w0", 8);
            while (count(db, "SELECT count(*) FROM workers") == 0) Thread.sleep(20);
            LoadThread producer = new LoadThread("bench-producer", () -> {
                long next = System.nanoTime();
                while (running.get()) {
                    List<JobRequest> jobs = new ArrayList<>(PER_TICK);
                    for (int i = 0; i < PER_TICK; i++) jobs.add(JobRequest.builder("t0", "noop").build());
                    store.enqueueAll(db.dsl(), jobs);
                    produced.addAndGet(PER_TICK);
                    next += TICK_MS * 1_000_000;
                    try {
                        FairnessBench.sleepUntil(next);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            DSLContext probe = Database.dsl(probeConnection);
            LoadThread prober = new LoadThread("bench-probe", () -> {
                while (running.get()) {
                    try {
                        probeConnection.setAutoCommit(false);
                        long t0 = System.nanoTime();
                        store.claim(probe, "bench-probe", 8, Duration.ofSeconds(30));
                        double ms = (System.nanoTime() - t0) / 1e6;
                        probeConnection.rollback();
                        claims.get(phase.get()).add(ms);
                        byTenSeconds.computeIfAbsent((System.nanoTime() - runStart) / 10_000_000_000L,
                                k -> java.util.Collections.synchronizedList(new ArrayList<>())).add(ms);
                        Thread.sleep(20);
                    } catch (Exception e) {
                        if (running.get()) throw new IllegalStateException(e);
                        return;
                    }
                }
            });
            LoadThread sampler = new LoadThread("bench-dead-tuples", () -> {
                while (running.get()) {
                    Object n = db.dsl().fetchValue("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'jobs'");
                    deadSamples.add(n == null ? 0 : ((Number) n).longValue());
                    try {
                        Thread.sleep(1000);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            producer.start();
            prober.start();
            sampler.start();
            Thread.sleep(WARMUP_MS);
            phase.set(Phase.BEFORE);
            beforeStart = db.dsl().fetchValue("SELECT now()::text");
            Thread.sleep(BEFORE_MS);
            long deadBefore = latest(deadSamples);
            holdStart = db.dsl().fetchValue("SELECT now()::text");
            holder.setAutoCommit(false);
            try (Statement s = holder.createStatement()) {
                s.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
                s.execute("SELECT 1 FROM jobs LIMIT 1");
            }
            phase.set(Phase.DURING);
            Thread.sleep(HOLD_MS);
            long deadAtRelease = latest(deadSamples);
            holder.rollback();
            holdEnd = db.dsl().fetchValue("SELECT now()::text");
            phase.set(Phase.AFTER);
            Thread.sleep(AFTER_MS);
            running.set(false);
            producer.join();
            prober.join();
            sampler.join();
            platform.awaitDrained(60_000);
            out.put("dead_tuples_before_hold", deadBefore);
            out.put("dead_tuples_at_release", deadAtRelease);
            out.put("dead_tuples_end", latest(deadSamples));
        }
        long peak = deadSamples.stream().mapToLong(Long::longValue).max().orElse(0);
        Map<Phase, Double> p99 = new LinkedHashMap<>();
        for (Phase p : List.of(Phase.BEFORE, Phase.DURING, Phase.AFTER)) {
            List<Double> c = claims.get(p);
            if (c.size() < 100) throw new IllegalStateException("only " + c.size() + " claim probes in phase " + p);
            p99.put(p, Stats.percentile(c, 99));
            out.put("claim_p50_ms_" + p.name().toLowerCase(), Stats.round(Stats.percentile(c, 50)));
        }
        out.put("claim_p99_ms_before", Stats.round(p99.get(Phase.BEFORE)));
        out.put("claim_p99_ms_during", Stats.round(p99.get(Phase.DURING)));
        out.put("claim_p99_ms_after", Stats.round(p99.get(Phase.AFTER)));
        out.put("claim_p99_ratio_during_vs_before", Stats.ratio(p99.get(Phase.DURING), p99.get(Phase.BEFORE)));
        out.put("claim_p99_ratio_after_vs_before", Stats.ratio(p99.get(Phase.AFTER), p99.get(Phase.BEFORE)));
        out.put("dead_tuples_peak", peak);
        List<Double> buckets = new ArrayList<>();
        byTenSeconds.forEach((k, v) -> buckets.add(Math.round(Stats.percentile(v, 50) * 100) / 100.0));
        out.put("claim_p50_ms_per_10s", buckets);
        out.put("hold_from_to_s", List.of((WARMUP_MS + BEFORE_MS) / 1000, (WARMUP_MS + BEFORE_MS + HOLD_MS) / 1000));
        // end-to-end: the workers' own view, per phase, from the jobs table (enqueue to start, database clock)
        // end-to-end, the workers' own view per phase: enqueue to start from the jobs table (database clock)
        for (Record r : db.dsl().fetch("""
                SELECT CASE WHEN created_at < ?::timestamptz THEN 'warmup'
                            WHEN created_at < ?::timestamptz THEN 'before' WHEN created_at < ?::timestamptz THEN 'during'
                            ELSE 'after' END AS phase,
                       percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - created_at) * 1000)
                FROM jobs GROUP BY 1""", beforeStart, holdStart, holdEnd)) {
            out.put("enqueue_to_start_p99_ms_" + r.get(0, String.class), Stats.round(r.get(1, Double.class)));
        }
        long succeeded = count(db, "SELECT count(*) FROM jobs WHERE status = 'succeeded'");
        if (succeeded != produced.get()) throw new IllegalStateException(succeeded + " of " + produced.get() + " succeeded");
        out.put("jobs", produced.get());
        Object autovacuums = db.dsl().fetchValue("SELECT autovacuum_count FROM pg_stat_user_tables WHERE relname = 'jobs'");
        out.put("autovacuum_runs", autovacuums);
        out.put("idle_in_transaction_session_timeout", db.dsl().fetchValue("SHOW idle_in_transaction_session_timeout"));
        return out;
    }

    private static long latest(List<Long> samples) {
        synchronized (samples) {
            return samples.isEmpty() ? 0 : samples.get(samples.size() - 1);
        }
    }
}

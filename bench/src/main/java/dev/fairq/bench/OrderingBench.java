package dev.fairq.bench;

import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.JobStore;
import org.jooq.Record;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * 20,000 {@code flaky} jobs over 200 ordering keys of one tenant, each sleeping 0-5 ms, 5% failing their
 * first attempt (retried after 20 ms), one worker process with 8 threads. Every handler run is recorded in
 * bench_runs with its start and end on the database clock. Per key, runs in start order must have
 * non-decreasing job ids (no inversion) and each must start after the previous one ended (no overlap).
 * Baseline in the same run: the same jobs without ordering keys (throughput_ratio_vs_unordered).
 */
final class OrderingBench implements Bench.Benchmark {
    static final double FAIL_SHARE = 0.05;
    private final int jobCount;
    private final int keyCount;

    OrderingBench() {
        this(20_000, 200);
    }

    /** A smaller run (the smoke test). */
    OrderingBench(int jobs, int keys) {
        this.jobCount = jobs;
        this.keyCount = keys;
    }

    @Override
    public Map<String, Object> run(BenchDatabase db) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("jobs", jobCount);
        out.put("ordering_keys", keyCount);
        out.put("handler", "flaky: sleep 0-5 ms (uniform), 5% fail attempt 1 (retry after 20 ms)");
        out.put("workers", "1 process x 8 threads");
        double unordered = drain(db, false, new LinkedHashMap<>());
        double ordered = drain(db, true, out);
        out.put("unordered_jobs_per_s", Math.round(unordered));
        out.put("throughput_jobs_per_s", Math.round(ordered));
        out.put("throughput_ratio_vs_unordered", Stats.ratio(ordered, unordered));
        return out;
    }

    /** Enqueues the workload, drains it, checks it; returns jobs per second. */
    private double drain(BenchDatabase db, boolean withKeys, Map<String, Object> out) throws Exception {
        db.truncate();
        db.dsl().execute(BenchWorker.RUNS_TABLE);
        db.dsl().execute("TRUNCATE bench_runs");
        db.createUnlimitedTenant("t0");
        Random random = new Random(42);
        List<JobRequest> jobs = new ArrayList<>(jobCount);
        int failing = 0;
        for (int i = 0; i < jobCount; i++) {
            boolean fail = random.nextDouble() < FAIL_SHARE;
            if (fail) failing++;
            JobRequest.Builder b = JobRequest.builder("t0", "flaky")
                    .payload("{\"ms\": " + random.nextInt(6) + (fail ? ", \"fail\": true" : "") + "}");
            if (withKeys) b.orderingKey("key-" + random.nextInt(keyCount));
            jobs.add(b.build());
        }
        JobStore store = new JobStore();
        for (int i = 0; i < jobCount; i += 5_000) store.enqueueAll(db.dsl(), jobs.subList(i, Math.min(jobCount, i + 5_000)));
        db.dsl().execute("VACUUM ANALYZE jobs");
        long start, end;
        try (BenchPlatform platform = new BenchPlatform(db)) {
            // the worker's JVM up (registered) before the clock starts: timed from its start, the drain included
            // 0.5-2 s of JVM start-up in both runs, which pulled throughput_ratio_vs_unordered towards 1
            platform.startWorkerProcess(withKeys ? "bench-ordered" : "bench-unordered", 8);
            platform.awaitWorkers(1, 60_000);
            start = System.nanoTime();
            platform.startScheduler(SchedulerConfig.defaults());
            end = platform.awaitDrained(200_000);
        }
        long succeeded = count(db, "SELECT count(*) FROM jobs WHERE status = 'succeeded'");
        if (succeeded != jobCount) throw new IllegalStateException("only " + succeeded + " of " + jobCount + " succeeded");
        long failedRuns = count(db, "SELECT count(*) FROM bench_runs WHERE failed");
        if (failedRuns < failing) throw new IllegalStateException(failedRuns + " failed runs recorded, " + failing + " planned");
        long unfinished = count(db, "SELECT count(*) FROM bench_runs WHERE finished IS NULL");
        if (unfinished != 0) throw new IllegalStateException(unfinished + " runs never recorded their end");
        long jobsRun = count(db, "SELECT count(DISTINCT job_id) FROM bench_runs WHERE NOT failed");
        if (jobsRun != jobCount) throw new IllegalStateException("only " + jobsRun + " jobs have a successful run recorded");
        if (withKeys) {
            // per key, runs in start order: the job id must never go down, and a run must not start before
            // the previous run of the key ended
            Record r = db.dsl().fetchOne("""
                    WITH r AS (
                        SELECT job_id, started, finished,
                               lag(job_id) OVER w AS prev_job, lag(finished) OVER w AS prev_finished
                        FROM bench_runs WINDOW w AS (PARTITION BY ordering_key ORDER BY started, run_id))
                    SELECT count(*) FILTER (WHERE job_id < prev_job),
                           count(*) FILTER (WHERE started < prev_finished),
                           count(*)
                    FROM r""");
            long runs = r.get(2, Long.class);
            out.put("runs", runs);
            out.put("planned_failures", failing);
            out.put("retried_runs", runs - jobCount);
            out.put("inversions", r.get(0, Long.class));
            out.put("overlaps", r.get(1, Long.class));
            long nullKeys = count(db, "SELECT count(*) FROM bench_runs WHERE ordering_key IS NULL");
            if (nullKeys != 0) throw new IllegalStateException(nullKeys + " runs without their ordering key");
            // the guarantee this benchmark checks: a run that broke it must not end with exit code 0 and a JSON line
            if (r.get(0, Long.class) != 0 || r.get(1, Long.class) != 0) {
                throw new IllegalStateException("ordering broken: " + r.get(0, Long.class) + " inversions, " + r.get(1, Long.class)
                        + " overlaps; " + out);
            }
        }
        return jobCount / ((end - start) / 1e9);
    }

    static long count(BenchDatabase db, String sql) {
        return ((Number) db.dsl().fetchValue(sql)).longValue();
    }
}

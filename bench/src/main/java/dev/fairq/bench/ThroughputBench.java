package dev.fairq.bench;

import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.JobStore;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * 50,000 no-op jobs over 10 tenants: bulk enqueue, then drain with one worker process (8 threads) and with
 * two, fairness on; divided by the pg-ceiling baseline measured on the same server in the same run.
 */
final class ThroughputBench implements Bench.Benchmark {
    static final int JOBS = 50_000;
    static final int TENANTS = 10;

    @Override
    public Map<String, Object> run(BenchDatabase db) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("jobs", JOBS);
        out.put("tenants", TENANTS);
        // the queue's own sessions commit asynchronously (Database.queuePool); the ceiling is measured both
        // that way (the like-for-like baseline) and with the server's defaults
        long ceilingAsync = Ceiling.jobsPerSecond(db, 10, "-c synchronous_commit=off");
        long ceilingDefault = Ceiling.jobsPerSecond(db, 10, "");
        out.put("ceiling_jobs_per_s", ceilingAsync);
        out.put("ceiling_default_commit_jobs_per_s", ceilingDefault);

        double best = 0;
        for (int processes : new int[]{1, 2}) {
            db.truncate();
            for (int t = 0; t < TENANTS; t++) db.createTenant("t" + t, 1, 1_000_000, 1_000_000, 100_000);
            JobStore store = new JobStore();
            List<JobRequest> jobs = new ArrayList<>(JOBS);
            for (int i = 0; i < JOBS; i++) jobs.add(JobRequest.builder("t" + (i % TENANTS), "noop").build());
            long t0 = System.nanoTime();
            for (int i = 0; i < JOBS; i += 5_000) store.enqueueAll(db.dsl(), jobs.subList(i, i + 5_000));
            double enqueueSeconds = (System.nanoTime() - t0) / 1e9;
            if (processes == 1) out.put("enqueue_jobs_per_s", Math.round(JOBS / enqueueSeconds));
            db.dsl().execute("VACUUM ANALYZE jobs");

            try (BenchPlatform platform = new BenchPlatform(db)) {
                platform.startScheduler(SchedulerConfig.defaults());
                long start = System.nanoTime();
                for (int p = 0; p < processes; p++) platform.startWorkerProcess("bench-w" + p, Integer.getInteger("fairq.bench.threads", 8));
                long end = platform.awaitDrained(240_000);
                double rate = JOBS / ((end - start) / 1e9);
                out.put("drain_jobs_per_s_" + processes + "_process" + (processes == 1 ? "" : "es"), Math.round(rate));
                best = Math.max(best, rate);
            }
            long done = ((Number) db.dsl().fetchValue("SELECT count(*) FROM jobs WHERE status = 'succeeded'")).longValue();
            if (done != JOBS) throw new IllegalStateException("only " + done + " of " + JOBS + " succeeded");
        }
        out.put("drain_jobs_per_s", Math.round(best));
        out.put("ratio_to_ceiling", ceilingAsync > 0 ? Math.round(best / ceilingAsync * 1000) / 1000.0 : null);
        out.put("note", "drain time includes starting the worker JVMs (about 0.5 s)");
        return out;
    }
}

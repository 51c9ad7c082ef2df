package dev.fairq.bench;

import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.JobStore;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static dev.fairq.bench.OrderingBench.count;

/**
 * 10,000 {@code record} jobs (each records its run in bench_runs, then sleeps 5 ms) over 4 tenants, two
 * worker processes of 8 threads with the default lease (30 s). At about 40% succeeded, worker 0 is killed
 * with SIGKILL; the rows it had running (claimed and locked by it) at that moment are counted; it is then
 * restarted (a new process, a new worker id, as a supervisor would). Checks at the end: every job succeeded,
 * none dead, none lost; reruns (recorded runs minus jobs) at most what was in flight at the kill.
 * Baseline in the same run: the time to drain the same jobs with no kill.
 */
final class CrashBench implements Bench.Benchmark {
    static final int JOBS = 10_000;

    @Override
    public Map<String, Object> run(BenchDatabase db) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("jobs", JOBS);
        out.put("workers", "2 processes x 8 threads, lease 30 s (default), reap every 5 s");
        out.put("handler", "record: insert the run into bench_runs, sleep 5 ms");
        long baselineMs = scenario(db, false, new LinkedHashMap<>());
        long crashMs = scenario(db, true, out);
        out.put("baseline_no_kill_ms", baselineMs);
        out.put("time_to_all_succeeded_ms", crashMs);
        out.put("time_ratio_vs_no_kill", Stats.ratio(crashMs, baselineMs));
        return out;
    }

    private long scenario(BenchDatabase db, boolean kill, Map<String, Object> out) throws Exception {
        db.truncate();
        db.dsl().execute(BenchWorker.RUNS_TABLE);
        db.dsl().execute("TRUNCATE bench_runs");
        for (int t = 0; t < 4; t++) db.createTenant("t" + t, 1, 1_000_000, 1_000_000, 100_000);
        List<JobRequest> jobs = new ArrayList<>(JOBS);
        for (int i = 0; i < JOBS; i++) jobs.add(JobRequest.builder("t" + (i % 4), "record").payload("{\"ms\": 5}").build());
        JobStore store = new JobStore();
        for (int i = 0; i < JOBS; i += 5_000) store.enqueueAll(db.dsl(), jobs.subList(i, i + 5_000));
        db.dsl().execute("VACUUM ANALYZE jobs");

        long start, end;
        try (BenchPlatform platform = new BenchPlatform(db)) {
            platform.startScheduler(SchedulerConfig.defaults());
            start = System.nanoTime();
            Process victim = platform.startWorkerProcess("crash-w0", 8);
            platform.startWorkerProcess("crash-w1", 8);
            if (kill) {
                long succeededAtKill;
                while ((succeededAtKill = count(db, "SELECT count(*) FROM jobs WHERE status = 'succeeded'")) < JOBS * 4 / 10) {
                    if (System.nanoTime() - start > 120_000_000_000L) throw new IllegalStateException("40% not reached in 120 s");
                    Thread.sleep(5);
                }
                victim.destroyForcibly(); // SIGKILL
                victim.waitFor();
                long killedAt = System.nanoTime();
                // the killed sessions' backends notice the closed sockets and roll back whatever was open;
                // nobody else may touch rows leased to crash-w0 before the lease runs out (30 s)
                Thread.sleep(500);
                long inFlight = count(db, "SELECT count(*) FROM jobs WHERE status = 'running' AND locked_by = 'crash-w0'");
                long runsAtKill = count(db, "SELECT count(*) FROM bench_runs WHERE worker = 'crash-w0' AND finished IS NULL");
                out.put("succeeded_at_kill", succeededAtKill);
                out.put("in_flight_at_kill", inFlight);
                out.put("handler_runs_cut_short", runsAtKill);
                out.put("kill_at_ms", (killedAt - start) / 1_000_000);
                platform.startWorkerProcess("crash-w0-restarted", 8);
            }
            end = awaitAllSucceeded(db, start, 200_000);
        }
        long succeeded = count(db, "SELECT count(*) FROM jobs WHERE status = 'succeeded'");
        long total = count(db, "SELECT count(*) FROM jobs");
        long dead = count(db, "SELECT count(*) FROM jobs WHERE status = 'dead'");
        long runs = count(db, "SELECT count(*) FROM bench_runs");
        long jobsRun = count(db, "SELECT count(DISTINCT job_id) FROM bench_runs");
        long lost = JOBS - succeeded;
        if (total != JOBS) throw new IllegalStateException(total + " jobs in the table, " + JOBS + " enqueued");
        if (jobsRun != JOBS) throw new IllegalStateException("only " + jobsRun + " of " + JOBS + " jobs ever ran");
        if (lost != 0 || dead != 0) throw new IllegalStateException("lost " + lost + ", dead " + dead);
        if (kill) {
            out.put("completed", succeeded);
            out.put("lost", lost);
            out.put("runs", runs);
            out.put("reruns", runs - JOBS);
            long inFlight = (Long) out.get("in_flight_at_kill");
            if (runs - JOBS > inFlight) throw new IllegalStateException("reruns " + (runs - JOBS) + " > in flight " + inFlight);
            long rerunByOthers = count(db, "SELECT count(*) FROM (SELECT job_id FROM bench_runs GROUP BY job_id HAVING count(*) > 1) x");
            out.put("jobs_run_twice", rerunByOthers);
        } else if (runs != JOBS) {
            throw new IllegalStateException("no kill, yet " + (runs - JOBS) + " reruns");
        }
        return (end - start) / 1_000_000;
    }

    private static long awaitAllSucceeded(BenchDatabase db, long start, long timeoutMs) throws InterruptedException {
        while (count(db, "SELECT count(*) FROM jobs WHERE status <> 'succeeded'") > 0) {
            if (System.nanoTime() - start > timeoutMs * 1_000_000) throw new IllegalStateException("not all succeeded in " + timeoutMs + " ms");
            Thread.sleep(50);
        }
        return System.nanoTime();
    }
}

package dev.fairq.bench;

import com.sun.net.httpserver.HttpServer;
import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.JobStore;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import static dev.fairq.bench.OrderingBench.count;

/**
 * 10,000 {@code record} jobs (each records its run in bench_runs, then sleeps 5 ms) over 4 tenants, two
 * worker processes of 8 threads with the default lease (30 s). At about 40% succeeded, worker 0 is killed
 * with SIGKILL; the rows it had running (claimed and locked by it) at that moment are counted; it is then
 * restarted (a new process, a new worker id, as a supervisor would). Checks at the end: every job succeeded,
 * none dead, none lost; reruns (recorded runs minus jobs) at most what was in flight at the kill.
 * Baseline in the same run: the time to drain the same jobs with no kill.
 *
 * <p>Then the freeze phase (issue 10's report, reproduced): 40 {@code http} jobs to a local receiver that
 * takes 3 s per request; a worker process of 8 threads (default lease 30 s) is frozen with SIGSTOP for 45 s
 * while 8 deliveries are in flight; a second worker process reaps the lapsed leases and delivers those jobs;
 * then the first resumes. Only the deliveries in flight at the freeze may be delivered twice:
 * {@code freeze_redeliveries <= freeze_in_flight}, checked.
 */
final class CrashBench implements Bench.Benchmark {
    static final int JOBS = 10_000;
    static final int FREEZE_JOBS = 40;
    static final long FREEZE_MS = 45_000;
    static final long RECEIVER_MS = 3_000;

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
        freeze(db, out);
        return out;
    }

    /** The freeze phase: see the class comment. */
    private void freeze(BenchDatabase db, Map<String, Object> out) throws Exception {
        db.truncate();
        db.createUnlimitedTenant("f");
        db.dsl().execute("UPDATE tenants SET webhook_allow = '{127.0.0.1}' WHERE id = 'f'");
        try (SlowReceiver receiver = new SlowReceiver(RECEIVER_MS); BenchPlatform platform = new BenchPlatform(db)) {
            List<JobRequest> jobs = new ArrayList<>();
            for (int i = 0; i < FREEZE_JOBS; i++) {
                jobs.add(JobRequest.builder("f", "http").payload("{\"url\": \"" + receiver.url() + "\", \"body\": {\"n\": " + i + "}}").build());
            }
            new JobStore().enqueueAll(db.dsl(), jobs);
            platform.startScheduler(SchedulerConfig.defaults());
            Process frozen = platform.startWorkerProcess("freeze-w0", 8);
            long deadline = System.nanoTime() + 120_000_000_000L;
            while (receiver.open() < 8) {
                if (System.nanoTime() > deadline) throw new IllegalStateException("8 deliveries never were in flight");
                Thread.sleep(5);
            }
            // a moment for the claimer to take more than its threads, as a busy worker does (a delivery takes
            // 3 s, so none of the 8 ends meanwhile)
            Thread.sleep(1_000);
            signal(frozen, "STOP");
            Set<Long> inFlight = receiver.openJobs();
            long claimed = count(db, "SELECT count(*) FROM jobs WHERE status = 'running' AND locked_by = 'freeze-w0'");
            platform.startWorkerProcess("freeze-w1", 8);
            Thread.sleep(FREEZE_MS);
            signal(frozen, "CONT");
            while (count(db, "SELECT count(*) FROM jobs WHERE status <> 'succeeded'") > 0 || receiver.open() > 0) {
                if (System.nanoTime() > deadline + FREEZE_MS * 1_000_000) throw new IllegalStateException("not all delivered");
                Thread.sleep(50);
            }
            platform.stopWorkers(); // SIGTERM: whatever the workers still do happens before the counting
            Map<Long, Integer> deliveries = receiver.deliveriesByJob();
            long redeliveries = deliveries.values().stream().mapToLong(n -> n - 1).sum();
            long outside = deliveries.entrySet().stream().filter(e -> e.getValue() > 1 && !inFlight.contains(e.getKey())).count();
            out.put("freeze", FREEZE_JOBS + " http jobs, receiver " + RECEIVER_MS + " ms each, 8 threads, lease 30 s; worker 0 "
                    + "frozen (SIGSTOP) " + FREEZE_MS + " ms with deliveries in flight, worker 1 takes over, worker 0 resumes");
            out.put("freeze_in_flight", inFlight.size());
            out.put("freeze_claimed_at_freeze", claimed);
            out.put("freeze_deliveries", deliveries.values().stream().mapToLong(Integer::longValue).sum());
            out.put("freeze_redeliveries", redeliveries);
            out.put("freeze_redelivered_outside_in_flight", outside);
            if (deliveries.size() != FREEZE_JOBS) throw new IllegalStateException(deliveries.size() + " of " + FREEZE_JOBS + " delivered");
            if (redeliveries > inFlight.size() || outside > 0) {
                throw new IllegalStateException("freeze: " + redeliveries + " re-deliveries (" + outside
                        + " of jobs not in flight) against " + inFlight.size() + " in flight at the freeze");
            }
        }
    }

    private static void signal(Process p, String name) throws Exception {
        if (new ProcessBuilder("kill", "-" + name, Long.toString(p.pid())).inheritIO().start().waitFor() != 0) {
            throw new IllegalStateException("kill -" + name + " " + p.pid() + " failed");
        }
    }

    /**
     * A webhook receiver on 127.0.0.1 that takes {@code holdMs} per request and counts deliveries by the
     * Fairq-Job-Id header; {@link #open()} is the requests it is holding now (deliveries in flight).
     */
    static final class SlowReceiver implements AutoCloseable {
        private final HttpServer server;
        private final ExecutorService pool = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "bench-receiver");
            t.setDaemon(true);
            return t;
        });
        private final Map<Long, Integer> byJob = new ConcurrentHashMap<>();
        private final Set<Long> open = ConcurrentHashMap.newKeySet();
        private final java.util.concurrent.atomic.AtomicInteger openCount = new java.util.concurrent.atomic.AtomicInteger();

        SlowReceiver(long holdMs) throws java.io.IOException {
            server = HttpServer.create(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0), 100);
            server.setExecutor(pool);
            server.createContext("/", exchange -> {
                try (exchange) {
                    exchange.getRequestBody().readAllBytes();
                    long job = Long.parseLong(exchange.getRequestHeaders().getFirst("Fairq-Job-Id"));
                    byJob.merge(job, 1, Integer::sum);
                    open.add(job);
                    openCount.incrementAndGet();
                    try {
                        Thread.sleep(holdMs);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    } finally {
                        openCount.decrementAndGet();
                        open.remove(job);
                    }
                    exchange.sendResponseHeaders(200, -1);
                }
            });
            server.start();
        }

        String url() {
            return "http://127.0.0.1:" + server.getAddress().getPort() + "/hook";
        }

        int open() {
            return openCount.get();
        }

        /** The jobs being delivered now (read while only one worker delivers: no job twice at once). */
        Set<Long> openJobs() {
            return Set.copyOf(open);
        }

        Map<Long, Integer> deliveriesByJob() {
            return Map.copyOf(byJob);
        }

        @Override
        public void close() {
            server.stop(0);
            pool.shutdownNow();
        }
    }

    private long scenario(BenchDatabase db, boolean kill, Map<String, Object> out) throws Exception {
        db.truncate();
        db.dsl().execute(BenchWorker.RUNS_TABLE);
        db.dsl().execute("TRUNCATE bench_runs");
        for (int t = 0; t < 4; t++) db.createUnlimitedTenant("t" + t);
        List<JobRequest> jobs = new ArrayList<>(JOBS);
        for (int i = 0; i < JOBS; i++) jobs.add(JobRequest.builder("t" + (i % 4), "record").payload("{\"ms\": 5}").build());
        JobStore store = new JobStore();
        for (int i = 0; i < JOBS; i += 5_000) store.enqueueAll(db.dsl(), jobs.subList(i, i + 5_000));
        db.dsl().execute("VACUUM ANALYZE jobs");

        long start, end;
        try (BenchPlatform platform = new BenchPlatform(db)) {
            // both workers' JVMs up (registered) before the clock starts, as in ordering: their start-up is no part
            // of the drain, and counted in both runs it pulled time_ratio_vs_no_kill towards 1
            Process victim = platform.startWorkerProcess("crash-w0", 8);
            platform.startWorkerProcess("crash-w1", 8);
            platform.awaitWorkers(2, 60_000);
            start = System.nanoTime();
            platform.startScheduler(SchedulerConfig.defaults());
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

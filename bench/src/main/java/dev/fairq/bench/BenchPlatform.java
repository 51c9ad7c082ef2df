package dev.fairq.bench;

import dev.fairq.scheduler.Scheduler;
import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.scheduler.SchedulerService;
import dev.fairq.schema.Database;
import dev.fairq.schema.JobStore;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** The scheduler in this JVM and worker processes beside it, as a deployment would run them. */
final class BenchPlatform implements AutoCloseable {
    private final BenchDatabase db;
    private final List<Process> workers = new ArrayList<>();
    private SchedulerService scheduler;

    BenchPlatform(BenchDatabase db) {
        this.db = db;
    }

    SchedulerService startScheduler(SchedulerConfig config) {
        JobStore store = new JobStore();
        scheduler = new SchedulerService(new Scheduler(store, config), store, config,
                () -> Database.dedicated(db.jdbcUrl, db.user, db.password, "fairq-bench-scheduler")).start();
        return scheduler;
    }

    Process startWorkerProcess(String id, int threads) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(FairqServer.javaBinary(), "-Xmx512m", "-XX:+UseParallelGC",
                "-cp", System.getProperty("java.class.path"), BenchWorker.class.getName(),
                db.jdbcUrl, db.user, db.password == null ? "" : db.password, id, Integer.toString(threads));
        pb.redirectErrorStream(true);
        pb.redirectOutput(new File(System.getProperty("java.io.tmpdir"), "fairq-bench-" + id + ".log"));
        Process p = pb.start();
        workers.add(p);
        return p;
    }

    /** Waits until {@code n} workers have registered (a worker registers when its JVM is up and it starts). */
    void awaitWorkers(int n, long timeoutMillis) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        while (((Number) db.dsl().fetchValue("SELECT count(*) FROM workers")).intValue() < n) {
            if (System.nanoTime() > deadline) throw new IllegalStateException(n + " workers not registered within " + timeoutMillis + " ms");
            Thread.sleep(20);
        }
    }

    /**
     * CPU seconds used so far by: this JVM (the scheduler runs here), the worker processes, and the processes of the
     * benchmark's PostgreSQL server ({@link BenchDatabase#serverProcesses}; 0 for a server on another machine). Read
     * before and after a run, the differences say where a job's cost goes.
     */
    double[] cpuSeconds() {
        double self = cpu(ProcessHandle.current());
        double workerCpu = 0;
        for (Process p : workers) workerCpu += cpu(p.toHandle());
        double pg = db.serverProcesses().stream().mapToDouble(BenchPlatform::cpu).sum();
        return new double[]{self, workerCpu, pg};
    }

    static double cpu(ProcessHandle h) {
        return h.info().totalCpuDuration().map(d -> d.toNanos() / 1e9).orElse(0.0);
    }

    /** True while any job is pending, ready or running (four probes of small partial indexes). */
    boolean busy() {
        return Boolean.TRUE.equals(db.dsl().fetchValue("""
                SELECT EXISTS (SELECT 1 FROM jobs WHERE status = 'pending' AND (ordering_key IS NULL OR key_head)
                                                    AND concurrency_key IS NULL AND fairness_key IS NULL)
                    OR EXISTS (SELECT 1 FROM jobs WHERE status = 'pending' AND (ordering_key IS NULL OR key_head)
                                                    AND (concurrency_key IS NOT NULL OR fairness_key IS NOT NULL))
                    OR EXISTS (SELECT 1 FROM jobs WHERE status = 'ready')
                    OR EXISTS (SELECT 1 FROM jobs WHERE status = 'running')"""));
    }

    /** Waits (polling every 20 ms) until no job is left to run; returns the nanoTime when that was seen. */
    long awaitDrained(long timeoutMillis) throws InterruptedException {
        return awaitDrained(timeoutMillis, 20);
    }

    /** Polls every {@code pollMillis} (each poll costs the database three index probes) until nothing is left. */
    long awaitDrained(long timeoutMillis, long pollMillis) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        while (busy()) {
            if (System.nanoTime() > deadline) throw new IllegalStateException("not drained within " + timeoutMillis + " ms");
            Thread.sleep(pollMillis);
        }
        return System.nanoTime();
    }

    void stopWorkers() throws InterruptedException {
        for (Process p : workers) p.destroy();
        for (Process p : workers) {
            if (!p.waitFor(60, TimeUnit.SECONDS)) p.destroyForcibly().waitFor();
        }
        workers.clear();
    }

    @Override
    public void close() throws Exception {
        stopWorkers();
        if (scheduler != null) scheduler.close();
    }
}

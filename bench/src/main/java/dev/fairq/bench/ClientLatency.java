package dev.fairq.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.schema.ClaimedJob;
import dev.fairq.schema.Database;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.JobStore;
import dev.fairq.worker.HandlerRegistry;
import dev.fairq.worker.Worker;
import dev.fairq.worker.WorkerConfig;
import dev.fairq.worker.WorkerObserver;
import org.jooq.DSLContext;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

import java.sql.Connection;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Enqueue-to-start as the peers measure it (Graphile Worker's benchmark, issue 16): a Java app enqueues with
 * {@link JobStore#submit} (one autocommit statement, as the peers add a job; then also with {@link JobStore#enqueue}
 * in a transaction of its own), in the JVM of a worker (8 threads) and of the scheduler,
 * and the time runs on this JVM's clock from just before the enqueue call to the handler's first line. One
 * job at a time at 50 per second (1,000 warm-up, 1,000 measured; under load 200 warm-up), first on an otherwise idle platform, then
 * while ten other tenants enqueue noop jobs at half the drain rate measured just before (the same worker runs
 * them, so the measured job competes for its threads, its claims, the scheduler and the database).
 *
 * <p>Per step, unloaded (each job is alone in the system, so the worker's claim and this JVM's own LISTEN on
 * fairq_ready after the enqueue call belong to it): the enqueue call (BEGIN, the INSERT, COMMIT), the
 * notification's arrival, the claim sent and returned, the hand-off to a handler thread, the handler's first
 * line; all from just before the enqueue call.
 */
final class ClientLatency {
    static final int WARMUP = 1_000, LOADED_WARMUP = 200, JOBS = 1_000, MAX_DRAINS = 8, THREADS = 8, BACKGROUND_TENANTS = 10, DRAIN_JOBS = 20_000;
    static final long INTERVAL_NANOS = 20_000_000L; // 50 per second
    static final String TENANT = "client";

    private final BenchDatabase db;
    private final JobStore store = new JobStore();
    /** Handler first line and hand-off (observer.started) by job id, measured tenant only. */
    private final Map<Long, Long> firstLine = new ConcurrentHashMap<>(), handedOff = new ConcurrentHashMap<>();
    /** {nanoTime when the claim returned, its round trip} of every claim that took at least one job. */
    private final ConcurrentLinkedQueue<long[]> claims = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<Long> notifications = new ConcurrentLinkedQueue<>();
    private final AtomicLong backgroundDone = new AtomicLong();
    private static final java.lang.management.ThreadMXBean THREAD_CPU = java.lang.management.ManagementFactory.getThreadMXBean();

    ClientLatency(BenchDatabase db) {
        this.db = db;
    }

    /**
     * One measured enqueue: t0 just before the call, tIn inside the transaction (a pooled connection taken),
     * tStatement when the enqueue statement returned (both 0 for {@link JobStore#submit}), t1 when the call returned
     * (the commit; for submit its wait for the flush, after the job started); cpu the calling thread's CPU over the call.
     */
    private record Sent(long id, long t0, long tIn, long tStatement, long t1, long cpu) {}

    Map<String, Object> run() throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        db.truncate();
        db.createUnlimitedTenant(TENANT);
        for (int i = 0; i < BACKGROUND_TENANTS; i++) db.createUnlimitedTenant("bg" + i);
        HandlerRegistry registry = new HandlerRegistry();
        registry.register("noop", job -> {
            long t = System.nanoTime();
            if (TENANT.equals(job.tenantId())) firstLine.put(job.jobId(), t);
            else backgroundDone.incrementAndGet();
        });
        WorkerObserver observer = new WorkerObserver() {
            @Override public void claimed(int jobs, long nanos) {
                if (jobs > 0) claims.add(new long[]{System.nanoTime(), nanos});
            }
            @Override public void started(ClaimedJob job) {
                handedOff.put(job.id(), System.nanoTime());
            }
        };
        AtomicBoolean listening = new AtomicBoolean(true);
        try (BenchPlatform platform = new BenchPlatform(db);
             HikariDataSource workerPool = Database.queuePool(db.jdbcUrl, db.user, db.password, 4, "client-worker");
             HikariDataSource appPool = Database.pool(db.jdbcUrl, db.user, db.password, 4, "client-app");
             Connection listen = Database.dedicated(db.jdbcUrl, db.user, db.password, "client-listen")) {
            try (Statement s = listen.createStatement()) {
                s.execute("LISTEN fairq_ready");
            }
            Thread listener = new Thread(() -> {
                PGConnection pg;
                try {
                    pg = listen.unwrap(PGConnection.class);
                    while (listening.get()) {
                        PGNotification[] ns = pg.getNotifications(100);
                        if (ns != null && ns.length > 0) notifications.add(System.nanoTime());
                    }
                } catch (Exception e) {
                    if (listening.get()) throw new IllegalStateException(e);
                }
            }, "client-bench-listen");
            listener.start();
            platform.startScheduler(SchedulerConfig.defaults());
            Worker worker = new Worker(WorkerConfig.builder().workerId("client-bench").threads(THREADS).build(),
                    registry, store, Database.dsl(workerPool),
                    () -> Database.dedicated(db.jdbcUrl, db.user, db.password, "client-bench-worker-listen"),
                    observer, () -> ThreadLocalRandom.current().nextDouble());
            worker.start();
            DSLContext app = Database.dsl(appPool);
            try {
                // the drain rate of this platform (same scheduler, same worker), timed from the enqueue's commit;
                // drains until two in a row agree within 10% (at most 8): they warm the JVM up (on 2 cores the JIT
                // compilers took 16 s of CPU in the first 33 s), and the last one's rate, halved, is the background
                // load below
                double drainRate = 0;
                List<Double> drains = new ArrayList<>();
                for (int round = 0; round < MAX_DRAINS; round++) {
                    if (round >= 2 && Math.abs(drains.get(round - 1) - drains.get(round - 2)) <= 0.1 * drains.get(round - 2)) break;
                    List<JobRequest> drain = new ArrayList<>(DRAIN_JOBS);
                    for (int i = 0; i < DRAIN_JOBS; i++) drain.add(JobRequest.builder("bg" + (i % BACKGROUND_TENANTS), "noop").build());
                    long before = backgroundDone.get();
                    app.transaction(c -> store.enqueueAll(c.dsl(), drain));
                    long d0 = System.nanoTime();
                    awaitCount(before + DRAIN_JOBS, 120);
                    drainRate = DRAIN_JOBS / ((System.nanoTime() - d0) / 1e9);
                    drains.add((double) Math.round(drainRate));
                }
                out.put("drain_jobs_per_s", Math.round(drainRate));
                out.put("drain_rounds_jobs_per_s", drains);

                // unloaded
                List<Sent> sent = trickle(app, WARMUP + JOBS, false);
                List<Sent> measured = sent.subList(WARMUP, sent.size());
                awaitStarted(measured);
                List<Double> client = clientMs(measured);
                out.putAll(Stats.summary("client_", client));
                out.put("client_steps_p50_ms", steps(measured, 50));
                out.put("client_steps_p99_ms", steps(measured, 99));
                out.put("client_admitted_in_enqueue", inlineAdmitted(measured));
                out.put("client_started_in_enqueue", startedInEnqueue(measured));
                out.put("client_enqueue_cpu_p50_ms", cpuP50(measured));

                // the same, enqueued in the app's own transaction (BEGIN, the INSERT, COMMIT), as an app does that
                // commits the jobs with its own writes: the commit's round trip comes before the start
                List<Sent> inTx = trickle(app, LOADED_WARMUP + JOBS, true);
                List<Sent> inTxMeasured = inTx.subList(LOADED_WARMUP, inTx.size());
                awaitStarted(inTxMeasured);
                List<Double> inTxClient = clientMs(inTxMeasured);
                out.put("client_in_transaction_p50_ms", Stats.round(Stats.percentile(inTxClient, 50)));
                out.put("client_in_transaction_p99_ms", Stats.round(Stats.percentile(inTxClient, 99)));
                out.put("client_in_transaction_steps_p50_ms", steps(inTxMeasured, 50));
                out.put("client_in_transaction_steps_p99_ms", steps(inTxMeasured, 99));
                out.put("client_in_transaction_enqueue_cpu_p50_ms", cpuP50(inTxMeasured));
                out.putAll(pacedFloor(app));

                // FAIRQ_BENCH_BACKGROUND_PER_S fixes the load, so that two builds whose drains differ are compared
                // at the same load (at half of its own drain, a faster build is measured under more load)
                String fixedLoad = System.getenv("FAIRQ_BENCH_BACKGROUND_PER_S");
                double bgRate = fixedLoad == null ? drainRate / 2 : Double.parseDouble(fixedLoad);
                AtomicBoolean loading = new AtomicBoolean(true);
                AtomicLong bgSent = new AtomicLong();
                long bgBase = backgroundDone.get();
                LoadThread load = new LoadThread("client-bench-background", () -> background(app, bgRate, loading, bgSent));
                long l0 = System.nanoTime();
                load.start();
                List<Sent> loaded;
                try {
                    loaded = trickle(app, LOADED_WARMUP + JOBS, false);
                } finally {
                    loading.set(false);
                    load.join();
                }
                double loadSeconds = (System.nanoTime() - l0) / 1e9;
                List<Sent> loadedMeasured = loaded.subList(LOADED_WARMUP, loaded.size());
                awaitStarted(loadedMeasured);
                // whether the platform kept up with the load: what was still waiting when the trickle ended
                out.put("background_backlog_at_end", bgBase + bgSent.get() - backgroundDone.get());
                awaitCount(bgBase + bgSent.get(), 600);
                List<Double> clientLoaded = clientMs(loadedMeasured);
                out.putAll(Stats.summary("client_loaded_", clientLoaded));
                out.put("client_p99_ms_loaded", Stats.round(Stats.percentile(clientLoaded, 99)));
                out.put("client_loaded_db_steps_ms", dbSteps(loadedMeasured));
                out.put("client_loaded_slowest", slowest(loadedMeasured, JOBS / 100));
                out.put("background_jobs_per_s", Math.round(bgSent.get() / loadSeconds));
                out.put("background_jobs", bgSent.get());
            } finally {
                worker.close();
            }
            listening.set(false);
            listener.join(2_000);
        }
        return out;
    }

    /**
     * One job at a time at 50 per second: with {@link JobStore#submit} (its own autocommit statement, as the peers'
     * benchmarks add a job: Graphile Worker's addJob is one statement on a pool), or with {@code ownTransaction} by
     * {@link JobStore#enqueue} in a transaction of the app's.
     */
    private List<Sent> trickle(DSLContext app, int n, boolean ownTransaction) throws InterruptedException {
        List<Sent> sent = new ArrayList<>(n);
        long next = System.nanoTime();
        for (int i = 0; i < n; i++) {
            FairnessBench.sleepUntil(next);
            next += INTERVAL_NANOS;
            long[] in = new long[2];
            long c0 = THREAD_CPU.getCurrentThreadCpuTime();
            long t0 = System.nanoTime();
            long id = ownTransaction ? app.transactionResult(c -> {
                in[0] = System.nanoTime();
                long jobId = store.enqueue(c.dsl(), JobRequest.builder(TENANT, "noop").build()).job().getId();
                in[1] = System.nanoTime();
                return jobId;
            }) : store.submit(app, JobRequest.builder(TENANT, "noop").build()).job().getId();
            long t1 = System.nanoTime();
            sent.add(new Sent(id, t0, in[0], in[1], t1, THREAD_CPU.getCurrentThreadCpuTime() - c0));
        }
        return sent;
    }

    private static double cpuP50(List<Sent> jobs) {
        return Stats.round(Stats.percentile(jobs.stream().map(s -> s.cpu() / 1e6).toList(), 50));
    }

    /**
     * What this machine gives any client at the trickle's pace, measured in the same run from the same pool: a
     * {@code SELECT 1} round trip and a durable one-row INSERT in its own transaction (BEGIN, INSERT, COMMIT), 50 a
     * second, 200 each after 50 discarded. At 50 a second both processes sleep between calls, and waking them costs:
     * on the 2-core VM of stop 47 pgbench gave 0.32 and 0.75-0.82 ms at 50/s against 0.09 and 0.14-0.26 ms back to
     * back. The enqueue call's own cost is its figure less the insert's.
     */
    private Map<String, Object> pacedFloor(DSLContext app) throws InterruptedException {
        app.execute("CREATE TABLE IF NOT EXISTS bench_paced_floor (id bigserial PRIMARY KEY, v text)");
        List<Double> trip = new ArrayList<>(), insert = new ArrayList<>();
        long next = System.nanoTime();
        for (int i = 0; i < 250; i++) {
            FairnessBench.sleepUntil(next);
            next += INTERVAL_NANOS;
            long t0 = System.nanoTime();
            app.fetchValue("SELECT 1");
            if (i >= 50) trip.add((System.nanoTime() - t0) / 1e6);
        }
        for (int i = 0; i < 250; i++) {
            FairnessBench.sleepUntil(next);
            next += INTERVAL_NANOS;
            long t0 = System.nanoTime();
            app.transaction(c -> c.dsl().execute("INSERT INTO bench_paced_floor (v) VALUES ('x')"));
            if (i >= 50) insert.add((System.nanoTime() - t0) / 1e6);
        }
        app.execute("DROP TABLE bench_paced_floor");
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("baseline_paced_round_trip_p50_ms", Stats.round(Stats.percentile(trip, 50)));
        m.put("baseline_paced_durable_insert_p50_ms", Stats.round(Stats.percentile(insert, 50)));
        m.put("baseline_paced_durable_insert_p99_ms", Stats.round(Stats.percentile(insert, 99)));
        return m;
    }

    /** Other tenants' noop jobs at {@code rate} per second, a batch every 10 ms over the ten tenants. */
    private void background(DSLContext app, double rate, AtomicBoolean loading, AtomicLong sent) {
        long t0 = System.nanoTime(), next = t0;
        int k = 0;
        while (loading.get()) {
            try {
                FairnessBench.sleepUntil(next);
            } catch (InterruptedException e) {
                return;
            }
            next += 10_000_000L;
            long due = (long) ((System.nanoTime() - t0) / 1e9 * rate) - sent.get();
            if (due <= 0) continue;
            List<JobRequest> batch = new ArrayList<>((int) due);
            for (long i = 0; i < due; i++) batch.add(JobRequest.builder("bg" + (k++ % BACKGROUND_TENANTS), "noop").build());
            app.transaction(c -> store.enqueueAll(c.dsl(), batch));
            sent.addAndGet(due);
        }
    }

    private void awaitStarted(List<Sent> jobs) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        for (Sent s : jobs) {
            while (!firstLine.containsKey(s.id())) {
                if (System.nanoTime() > deadline) throw new IllegalStateException("job " + s.id() + " not started 60 s after the last enqueue");
                Thread.sleep(10);
            }
        }
    }

    private void awaitCount(long target, int seconds) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (backgroundDone.get() < target) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(backgroundDone.get() + " background jobs run, " + target + " expected, after " + seconds + " s");
            }
            Thread.sleep(5);
        }
    }

    private List<Double> clientMs(List<Sent> jobs) {
        List<Double> ms = new ArrayList<>(jobs.size());
        for (Sent s : jobs) ms.add((firstLine.get(s.id()) - s.t0()) / 1e6);
        return ms;
    }

    /**
     * The {@code n} slowest under load, each split where it waited: the enqueue call itself (JVM clock, to its return),
     * created -> admitted and admitted -> started (database clock; admitted 0 and {@code grant} true for a job an
     * admission grant inserted ready), so that the tail is named, not only sized.
     */
    private List<Map<String, Object>> slowest(List<Sent> jobs, int n) {
        List<Sent> sorted = new ArrayList<>(jobs);
        sorted.sort(java.util.Comparator.comparingLong((Sent s) -> firstLine.get(s.id()) - s.t0()).reversed());
        List<Map<String, Object>> out = new ArrayList<>();
        for (Sent s : sorted.subList(0, Math.min(n, sorted.size()))) {
            org.jooq.Record r = db.dsl().fetchOne("SELECT extract(epoch FROM admitted_at - created_at) * 1000, "
                    + "extract(epoch FROM started_at - admitted_at) * 1000, admitted_at = created_at FROM jobs WHERE id = ?", s.id());
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("client_ms", Stats.round((firstLine.get(s.id()) - s.t0()) / 1e6));
            m.put("enqueue_call_ms", Stats.round((s.t1() - s.t0()) / 1e6));
            m.put("created_to_admitted_ms", r == null ? null : Stats.round(r.get(0, Double.class)));
            m.put("admitted_to_started_ms", r == null ? null : Stats.round(r.get(1, Double.class)));
            m.put("grant", r == null ? null : r.get(2, Boolean.class));
            out.add(m);
        }
        return out;
    }

    /** Each step's p-th percentile, in ms from just before the enqueue call (unloaded: one job in the system). */
    private Map<String, Object> steps(List<Sent> jobs, double p) {
        List<Long> notes = new ArrayList<>(notifications);
        List<long[]> cs = new ArrayList<>(claims);
        List<Double> enq = new ArrayList<>(), note = new ArrayList<>(), sentClaim = new ArrayList<>(), claimed = new ArrayList<>(),
                hand = new ArrayList<>(), first = new ArrayList<>();
        for (Sent s : jobs) {
            long n = firstAfter(notes, s.t0());
            long[] c = cs.stream().filter(x -> x[0] >= s.t0()).findFirst().orElse(null);
            enq.add((s.t1() - s.t0()) / 1e6);
            if (n > 0) note.add((n - s.t0()) / 1e6);
            if (c != null) {
                claimed.add((c[0] - s.t0()) / 1e6);
                sentClaim.add((c[0] - c[1] - s.t0()) / 1e6);
            }
            hand.add((handedOff.get(s.id()) - s.t0()) / 1e6);
            first.add((firstLine.get(s.id()) - s.t0()) / 1e6);
        }
        Map<String, Object> m = new LinkedHashMap<>();
        if (jobs.get(0).tIn() != 0) { // an enqueue in the app's transaction: its steps inside the call
            m.put("in_transaction", Stats.round(Stats.percentile(jobs.stream().map(s -> (s.tIn() - s.t0()) / 1e6).toList(), p)));
            m.put("statement_returned", Stats.round(Stats.percentile(jobs.stream().map(s -> (s.tStatement() - s.t0()) / 1e6).toList(), p)));
        }
        m.put("enqueue_returned", Stats.round(Stats.percentile(enq, p)));
        m.put("notification_received", note.isEmpty() ? null : Stats.round(Stats.percentile(note, p)));
        m.put("claim_sent", sentClaim.isEmpty() ? null : Stats.round(Stats.percentile(sentClaim, p)));
        m.put("claim_returned", claimed.isEmpty() ? null : Stats.round(Stats.percentile(claimed, p)));
        m.put("handed_to_thread", Stats.round(Stats.percentile(hand, p)));
        m.put("handler_first_line", Stats.round(Stats.percentile(first, p)));
        return m;
    }

    /**
     * Under load, where the measured jobs waited, on the database clock (the JVM-side steps cannot be told apart
     * from the background's): created -> admitted (the scheduler; 0 for a job inserted ready through a grant),
     * admitted -> started (the ready buffer and the claim), p50 and p99.
     */
    private Map<String, Object> dbSteps(List<Sent> jobs) {
        long from = jobs.get(0).id(), to = jobs.get(jobs.size() - 1).id();
        List<Double> admitted = new ArrayList<>(), started = new ArrayList<>();
        for (org.jooq.Record r : db.dsl().fetch("SELECT extract(epoch FROM admitted_at - created_at) * 1000, "
                + "extract(epoch FROM started_at - admitted_at) * 1000 FROM jobs WHERE tenant_id = ? AND id BETWEEN ? AND ?",
                TENANT, from, to)) {
            admitted.add(r.get(0, Double.class));
            started.add(r.get(1, Double.class));
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("created_to_admitted_p50", Stats.round(Stats.percentile(admitted, 50)));
        m.put("created_to_admitted_p99", Stats.round(Stats.percentile(admitted, 99)));
        m.put("admitted_to_started_p50", Stats.round(Stats.percentile(started, 50)));
        m.put("admitted_to_started_p99", Stats.round(Stats.percentile(started, 99)));
        m.put("admitted_in_enqueue", inlineAdmitted(jobs));
        m.put("started_in_enqueue", startedInEnqueue(jobs));
        return m;
    }

    private static long firstAfter(List<Long> times, long t) {
        for (long x : times) if (x >= t) return x;
        return -1;
    }

    /**
     * Share of the jobs started inside their enqueue's own INSERT: inserted running on a free thread of this JVM's
     * worker (LocalStarts), so no notification and no claim came between their commit and their handler.
     */
    private double startedInEnqueue(List<Sent> jobs) {
        return share(jobs, "started_at = created_at");
    }

    /** Share of the jobs admitted inside their enqueue's own INSERT (an admission grant), not by a scheduler tick. */
    private double inlineAdmitted(List<Sent> jobs) {
        return share(jobs, "admitted_at = created_at");
    }

    /** Share of the measured tenant's jobs in this range that meet {@code condition} (a constant SQL predicate). */
    private double share(List<Sent> jobs, String condition) {
        long from = jobs.get(0).id(), to = jobs.get(jobs.size() - 1).id();
        Number n = (Number) db.dsl().fetchValue("SELECT count(*) FILTER (WHERE " + condition + ")::float8 / count(*) "
                + "FROM jobs WHERE tenant_id = ? AND id BETWEEN ? AND ?", TENANT, from, to);
        return Stats.round(n.doubleValue());
    }
}

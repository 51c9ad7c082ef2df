package dev.fairq.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.fairq.schema.Database;
import dev.fairq.schema.JobStore;
import dev.fairq.worker.HandlerRegistry;
import dev.fairq.worker.JobContext;
import dev.fairq.worker.RetryableJobException;
import dev.fairq.worker.ShutdownSignals;
import dev.fairq.worker.Worker;
import dev.fairq.worker.WorkerConfig;
import dev.fairq.worker.handlers.DemoHandlers;
import dev.fairq.worker.handlers.HttpJobHandler;
import org.jooq.DSLContext;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * A worker process for the benchmarks. Arguments: jdbcUrl user password workerId threads. Stops gracefully on
 * SIGTERM. Handlers: the demo ones (noop, sleep), the built-in {@code http} one (allow lists from the tenants
 * table) and two bench-only ones that record every run in the
 * {@code bench_runs} table (start and end on the database clock, clock_timestamp()), through a pool of
 * their own so that recording does not compete with the worker's claim and completion connections:
 * <ul>
 *   <li>{@code record} ({@code {"ms": n}}): records the run, sleeps n ms, records its end;</li>
 *   <li>{@code flaky} ({@code {"ms": n, "fail": true}}): like record, but when {@code fail} is set the
 *       first attempt throws a transient error (retried after 20 ms) after recording its run.</li>
 *   <li>{@code timed} ({@code {"ms": n}}): sleeps n ms and notes its own entry and exit on this JVM's wall clock;
 *       a flusher thread writes the notes to bench_runs in batches every {@value #FLUSH_MS} ms. Its whole run is
 *       the handler's time: {@code record}'s interval leaves out the commit of its closing UPDATE (a WAL flush,
 *       0.5-1 ms on this machine's PostgreSQL 15), a fifth of a 5 ms job.</li>
 * </ul>
 */
public final class BenchWorker {
    static final String RUNS_TABLE = """
            CREATE TABLE IF NOT EXISTS bench_runs (
                run_id       bigserial PRIMARY KEY,
                job_id       bigint NOT NULL,
                attempt      integer NOT NULL,
                worker       text NOT NULL,
                ordering_key text,
                started      timestamptz NOT NULL,
                finished     timestamptz,
                failed       boolean NOT NULL DEFAULT false
            )""";

    static final long FLUSH_MS = 20;

    private BenchWorker() {}

    /** One run of a {@code timed} job, on this JVM's wall clock (microseconds since the epoch). */
    private record Timed(long jobId, int attempt, String worker, String orderingKey, long startedMicros, long finishedMicros) {}

    private static final ConcurrentLinkedQueue<Timed> TIMED = new ConcurrentLinkedQueue<>();

    public static void main(String[] args) {
        String url = args[0], user = args[1], password = args[2].isEmpty() ? null : args[2], id = args[3];
        int threads = Integer.parseInt(args[4]);
        HikariDataSource pool = Database.queuePool(url, user, password, 4, id);
        HikariDataSource recordPool = Database.queuePool(url, user, password, threads, id + "-record");
        DSLContext rec = Database.dsl(recordPool);
        HandlerRegistry registry = DemoHandlers.register(new HandlerRegistry());
        registry.register(HttpJobHandler.TYPE, HttpJobHandler.forDatabase(Database.dsl(pool)), HttpJobHandler.TIME_LIMIT);
        registry.register("record", job -> recorded(rec, job, false));
        registry.register("flaky", job -> recorded(rec, job, job.attempt() == 1 && job.payload().path("fail").asBoolean(false)));
        registry.register("timed", BenchWorker::timed);
        ScheduledExecutorService flusher = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "bench-timed-flusher");
            t.setDaemon(true);
            return t;
        });
        flusher.scheduleWithFixedDelay(() -> flushTimed(rec), FLUSH_MS, FLUSH_MS, TimeUnit.MILLISECONDS);
        Worker worker = new Worker(WorkerConfig.builder().workerId(id).threads(threads).build(),
                registry, new JobStore(), Database.dsl(pool),
                () -> Database.dedicated(url, user, password, "listen-" + id));
        ShutdownSignals.onTerminate(() -> {
            worker.close();
            flusher.shutdown();
            flushTimed(rec);
            pool.close();
            recordPool.close();
        });
        worker.start();
    }

    private static void timed(JobContext job) throws InterruptedException {
        long started = micros(Instant.now());
        long ms = job.payload().path("ms").asLong(0);
        if (ms > 0) Thread.sleep(ms);
        TIMED.add(new Timed(job.jobId(), job.attempt(), job.workerId(), job.orderingKey(), started, micros(Instant.now())));
    }

    private static long micros(Instant t) {
        return t.getEpochSecond() * 1_000_000 + t.getNano() / 1_000;
    }

    /** Writes the noted runs in one statement; on a failure it prints it and keeps the runs for the next flush. */
    private static void flushTimed(DSLContext rec) {
        List<Timed> batch = new ArrayList<>();
        for (Timed t; (t = TIMED.poll()) != null; ) batch.add(t);
        if (batch.isEmpty()) return;
        try {
            rec.execute("""
                    INSERT INTO bench_runs (job_id, attempt, worker, ordering_key, started, finished)
                    SELECT j, a, w, k, timestamptz 'epoch' + s * interval '1 microsecond',
                           timestamptz 'epoch' + f * interval '1 microsecond'
                    FROM unnest(?::bigint[], ?::int[], ?::text[], ?::text[], ?::bigint[], ?::bigint[]) AS u(j, a, w, k, s, f)""",
                    batch.stream().map(Timed::jobId).toArray(Long[]::new),
                    batch.stream().map(Timed::attempt).toArray(Integer[]::new),
                    batch.stream().map(Timed::worker).toArray(String[]::new),
                    batch.stream().map(Timed::orderingKey).toArray(String[]::new),
                    batch.stream().map(Timed::startedMicros).toArray(Long[]::new),
                    batch.stream().map(Timed::finishedMicros).toArray(Long[]::new));
        } catch (RuntimeException e) {
            TIMED.addAll(batch);
            e.printStackTrace();
        }
    }

    private static void recorded(DSLContext rec, JobContext job, boolean fail) throws Exception {
        long runId = ((Number) rec.fetchValue("INSERT INTO bench_runs (job_id, attempt, worker, ordering_key, started) "
                + "VALUES (?, ?, ?, ?, clock_timestamp()) RETURNING run_id",
                job.jobId(), job.attempt(), job.workerId(), job.orderingKey())).longValue();
        long ms = job.payload().path("ms").asLong(0);
        if (ms > 0) Thread.sleep(ms);
        rec.execute("UPDATE bench_runs SET finished = clock_timestamp(), failed = ? WHERE run_id = ?", fail, runId);
        if (fail) throw new RetryableJobException("bench: planned failure of attempt 1", Duration.ofMillis(20));
    }
}

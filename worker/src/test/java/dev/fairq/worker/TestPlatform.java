package dev.fairq.worker;

import com.zaxxer.hikari.HikariDataSource;
import dev.fairq.scheduler.Scheduler;
import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.scheduler.SchedulerService;
import dev.fairq.schema.Database;
import dev.fairq.schema.JobStore;
import dev.fairq.testing.TestDatabase;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A scheduler and any number of in-process workers against the test database, each worker with its own
 * connection pool (so the engine runs over several connections, as separate processes would). Public for
 * the tests of other packages (the built-in handlers).
 */
public final class TestPlatform implements AutoCloseable {
    public final TestDatabase db;
    public final JobStore store;
    private final List<AutoCloseable> open = new ArrayList<>();

    public TestPlatform(TestDatabase db) {
        this(db, new JobStore());
    }

    /** With the store's clock (a SettableClock) driving the scheduler's and the workers' time. */
    public TestPlatform(TestDatabase db, JobStore store) {
        this.db = db;
        this.store = store;
    }

    /**
     * Quick polling and reaping; a lease long enough that a stall of a loaded machine never reaps a job that
     * is still running (no test using this is about reaping: those use their own short leases).
     */
    public static WorkerConfig fastConfig(String id, int threads) {
        return WorkerConfig.builder().workerId(id).threads(threads)
                .lease(Duration.ofSeconds(30), Duration.ofSeconds(1))
                .reapInterval(Duration.ofMillis(500))
                .pollInterval(Duration.ofMillis(200)).build();
    }

    public SchedulerService startScheduler(SchedulerConfig config) {
        SchedulerService service = new SchedulerService(new Scheduler(store, config), store, config,
                () -> Database.dedicated(db.jdbcUrl, db.user, db.password, "fairq-test-scheduler")).start();
        open.add(service);
        return service;
    }

    public Worker startWorker(WorkerConfig config, HandlerRegistry handlers) {
        return startWorker(config, handlers, () -> Database.dedicated(db.jdbcUrl, db.user, db.password,
                "listen-" + config.workerId()));
    }

    /** A worker whose LISTEN connections come from {@code listen} (a test may make it fail). */
    public Worker startWorker(WorkerConfig config, HandlerRegistry handlers, Worker.ConnectionFactory listen) {
        return startWorker(config, handlers, listen, WorkerObserver.NONE);
    }

    public Worker startWorker(WorkerConfig config, HandlerRegistry handlers, WorkerObserver observer) {
        return startWorker(config, handlers, () -> Database.dedicated(db.jdbcUrl, db.user, db.password,
                "listen-" + config.workerId()), observer);
    }

    public Worker startWorker(WorkerConfig config, HandlerRegistry handlers, Worker.ConnectionFactory listen,
                              WorkerObserver observer) {
        HikariDataSource pool = Database.queuePool(db.jdbcUrl, db.user, db.password, 4, "pool-" + config.workerId());
        Worker worker = new Worker(config, handlers, store, Database.dsl(pool), listen, observer,
                () -> java.util.concurrent.ThreadLocalRandom.current().nextDouble());
        open.add(pool);
        open.add(worker);
        return worker.start();
    }

    /** Closes workers before their pools, and the scheduler last-in-first-out. */
    @Override
    public void close() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) open.get(i).close();
    }
}

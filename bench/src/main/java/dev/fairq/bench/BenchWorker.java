package dev.fairq.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.fairq.schema.Database;
import dev.fairq.schema.JobStore;
import dev.fairq.worker.HandlerRegistry;
import dev.fairq.worker.ShutdownSignals;
import dev.fairq.worker.Worker;
import dev.fairq.worker.WorkerConfig;
import dev.fairq.worker.handlers.DemoHandlers;

/**
 * A worker process for the benchmarks (the demo handlers: noop and sleep). Arguments: jdbcUrl user password
 * workerId threads. Stops gracefully on SIGTERM.
 */
public final class BenchWorker {
    private BenchWorker() {}

    public static void main(String[] args) {
        String url = args[0], user = args[1], password = args[2].isEmpty() ? null : args[2], id = args[3];
        int threads = Integer.parseInt(args[4]);
        HikariDataSource pool = Database.queuePool(url, user, password, 4, id);
        Worker worker = new Worker(WorkerConfig.defaults().withWorkerId(id).withThreads(threads),
                DemoHandlers.register(new HandlerRegistry()), new JobStore(), Database.dsl(pool),
                () -> Database.dedicated(url, user, password, "listen-" + id));
        ShutdownSignals.onTerminate(() -> {
            worker.close();
            pool.close();
        });
        worker.start();
    }
}

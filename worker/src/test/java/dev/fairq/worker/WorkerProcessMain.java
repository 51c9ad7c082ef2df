package dev.fairq.worker;

import com.zaxxer.hikari.HikariDataSource;
import dev.fairq.schema.Database;
import dev.fairq.schema.JobStore;

import java.time.Duration;

/**
 * A worker as its own JVM, for the crash and shutdown tests: the test starts it, kills it (SIGKILL) or stops
 * it (SIGTERM), and reads what happened from the database.
 *
 * <p>Arguments: jdbcUrl user password workerId threads prefetch leaseMillis graceMillis [queues [reserved]]:
 * queues comma-separated ("" or absent: all), reserved as queue=threads pairs ("urgent=1").
 */
public final class WorkerProcessMain {
    private WorkerProcessMain() {}

    public static void main(String[] args) {
        String url = args[0], user = args[1], password = args[2].isEmpty() ? null : args[2], id = args[3];
        int threads = Integer.parseInt(args[4]);
        int prefetch = Integer.parseInt(args[5]);
        Duration lease = Duration.ofMillis(Long.parseLong(args[6]));
        Duration grace = Duration.ofMillis(Long.parseLong(args[7]));

        java.util.Set<String> queues = args.length > 8 && !args[8].isEmpty() ? java.util.Set.of(args[8].split(",")) : null;
        java.util.Map<String, Integer> reserved = new java.util.HashMap<>();
        if (args.length > 9 && !args[9].isEmpty()) {
            for (String pair : args[9].split(",")) reserved.put(pair.split("=")[0], Integer.parseInt(pair.split("=")[1]));
        }

        HikariDataSource pool = Database.queuePool(url, user, password, threads + 4, "child-" + id);
        WorkerConfig config = WorkerConfig.builder().workerId(id).threads(threads).prefetch(prefetch)
                .lease(lease, lease.dividedBy(4)).reapInterval(lease.dividedBy(4))
                .pollInterval(Duration.ofMillis(200)).shutdownGrace(grace).queues(queues).reserved(reserved).build();
        Worker worker = new Worker(config, RecordingHandlers.registry(pool), new JobStore(), Database.dsl(pool),
                () -> Database.dedicated(url, user, password, "listen-" + id));
        ShutdownSignals.onTerminate(() -> {
            worker.close();
            pool.close();
        });
        worker.start();
        System.out.println("WORKER STARTED " + id);
    }
}

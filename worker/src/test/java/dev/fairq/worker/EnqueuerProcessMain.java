package dev.fairq.worker;

import com.zaxxer.hikari.HikariDataSource;
import dev.fairq.schema.Database;
import dev.fairq.schema.EnqueueResult;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.JobStore;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;

/**
 * An application embedding fairq as its own JVM: a Worker on its JobStore, and one enqueue of tenant acme's "noop" job
 * in a transaction of the application's that never commits (the test SIGKILLs the process there). It prints
 * "ENQUEUED id status" once the insert has returned.
 *
 * <p>Arguments: jdbcUrl user password workerId
 */
public final class EnqueuerProcessMain {
    private EnqueuerProcessMain() {}

    public static void main(String[] args) throws Exception {
        String url = args[0], user = args[1], password = args[2].isEmpty() ? null : args[2], id = args[3];
        HikariDataSource pool = Database.queuePool(url, user, password, 6, "app-" + id);
        JobStore store = new JobStore();
        HandlerRegistry handlers = new HandlerRegistry();
        handlers.register("noop", job -> { });
        Worker worker = new Worker(WorkerConfig.builder().workerId(id).threads(2).lease(Duration.ofSeconds(30), Duration.ofSeconds(1))
                .pollInterval(Duration.ofMillis(200)).build(), handlers, store, Database.dsl(pool),
                () -> Database.dedicated(url, user, password, "listen-" + id)).start();
        while (!worker.takesStartsInEnqueue()) Thread.onSpinWait();
        Database.dsl(pool).transaction(c -> {
            EnqueueResult r = store.enqueue(c.dsl(), JobRequest.builder("acme", "noop").build());
            System.out.println("ENQUEUED " + r.job().getId() + " " + r.job().getStatus());
            System.out.flush();
            new CountDownLatch(1).await(); // the application's transaction goes on until the process is killed
        });
    }
}

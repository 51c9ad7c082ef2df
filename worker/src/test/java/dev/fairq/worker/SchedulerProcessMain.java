package dev.fairq.worker;

import dev.fairq.scheduler.Scheduler;
import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.scheduler.SchedulerService;
import dev.fairq.schema.Database;
import dev.fairq.schema.JobStore;

import java.util.concurrent.CountDownLatch;

/**
 * A scheduler as its own JVM, for the failover test: the test SIGKILLs it while it leads.
 * Arguments: jdbcUrl user password applicationName
 */
public final class SchedulerProcessMain {
    private SchedulerProcessMain() {}

    public static void main(String[] args) throws InterruptedException {
        String url = args[0], user = args[1], password = args[2].isEmpty() ? null : args[2], name = args[3];
        JobStore store = new JobStore();
        SchedulerConfig config = SchedulerConfig.defaults();
        new SchedulerService(new Scheduler(store, config), store, config,
                () -> Database.dedicated(url, user, password, name)).start();
        System.out.println("SCHEDULER STARTED " + name);
        new CountDownLatch(1).await(); // until killed
    }
}

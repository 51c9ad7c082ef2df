package dev.fairq.bench;

import dev.fairq.scheduler.ScheduleFirer;
import dev.fairq.scheduler.ScheduleObserver;
import dev.fairq.scheduler.Scheduler;
import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.scheduler.SchedulerService;
import dev.fairq.schema.Database;
import dev.fairq.schema.JobStore;
import dev.fairq.worker.ShutdownSignals;

import java.util.concurrent.CountDownLatch;

/**
 * A scheduler process for the benchmarks (active or standby, as {@code fairq.jar scheduler} runs it: leader
 * election, admission and the schedules' firer on the leader loop). Arguments: jdbcUrl user password
 * applicationName.
 */
public final class BenchScheduler {
    private BenchScheduler() {}

    public static void main(String[] args) throws InterruptedException {
        String url = args[0], user = args[1], password = args[2].isEmpty() ? null : args[2], name = args[3];
        JobStore store = new JobStore();
        SchedulerConfig config = SchedulerConfig.defaults();
        SchedulerService service = new SchedulerService(new Scheduler(store, config),
                new ScheduleFirer(store, ScheduleObserver.NONE), store, config,
                () -> Database.dedicated(url, user, password, name)).start();
        ShutdownSignals.onTerminate(service::close);
        System.out.println("BENCH SCHEDULER STARTED " + name);
        new CountDownLatch(1).await();
    }
}

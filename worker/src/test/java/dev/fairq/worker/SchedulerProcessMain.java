package dev.fairq.worker;

import dev.fairq.scheduler.Scheduler;
import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.scheduler.SchedulerService;
import dev.fairq.schema.Database;
import dev.fairq.schema.JobStore;
import dev.fairq.testing.TestDatabase;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;

/**
 * A scheduler as its own JVM, for the failover test: the test SIGKILLs it while it leads.
 * Arguments: jdbcUrl user password applicationName
 */
public final class SchedulerProcessMain {
    private SchedulerProcessMain() {}

    /** Starts this class as a child JVM on the test database, its output in a temporary file named after {@code logName}. */
    static Process start(TestDatabase db, String applicationName, String logName) throws IOException {
        String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        Path log = Files.createTempFile(logName, ".log");
        return new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m",
                "-cp", classpath, SchedulerProcessMain.class.getName(), db.jdbcUrl, db.user,
                db.password == null ? "" : db.password, applicationName)
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
    }

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

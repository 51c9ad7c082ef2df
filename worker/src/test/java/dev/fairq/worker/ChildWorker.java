package dev.fairq.worker;

import dev.fairq.testing.TestDatabase;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** Starts {@link WorkerProcessMain} in a separate JVM with the test class path. */
final class ChildWorker {
    final Process process;
    final Path log;

    private ChildWorker(Process process, Path log) {
        this.process = process;
        this.log = log;
    }

    static ChildWorker start(TestDatabase db, String id, int threads, int prefetch, long leaseMillis, long graceMillis)
            throws IOException {
        return start(db, id, threads, prefetch, leaseMillis, graceMillis, "", "");
    }

    /** A worker process serving only {@code queues} (comma-separated, "" for all), with reserved threads ("urgent=1"). */
    static ChildWorker start(TestDatabase db, String id, int threads, int prefetch, long leaseMillis, long graceMillis,
                             String queues, String reserved) throws IOException {
        String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Path log = Files.createTempFile("fairq-child-" + id.replace(':', '_'), ".log");
        ProcessBuilder pb = new ProcessBuilder(List.of(java, "-Xmx256m", "-cp", classpath,
                WorkerProcessMain.class.getName(), db.jdbcUrl, db.user, db.password == null ? "" : db.password, id,
                Integer.toString(threads), Integer.toString(prefetch), Long.toString(leaseMillis),
                Long.toString(graceMillis), queues, reserved));
        pb.redirectErrorStream(true);
        pb.redirectOutput(log.toFile());
        return new ChildWorker(pb.start(), log);
    }

    String output() {
        try {
            return Files.readString(log);
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    /** SIGSTOP: every thread of the process freezes at once, as in a long GC pause or a migrated VM. */
    void freeze() throws IOException, InterruptedException {
        signal("STOP");
        // the signal is delivered asynchronously: wait until the kernel reports the process stopped
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!stopped()) {
            if (System.nanoTime() > deadline) throw new IllegalStateException("process " + process.pid() + " did not stop");
            Thread.sleep(10);
        }
    }

    /** SIGCONT: the frozen process carries on where it was. */
    void resume() throws IOException, InterruptedException {
        signal("CONT");
    }

    private boolean stopped() throws IOException {
        // /proc/<pid>/stat: "pid (comm) state ..."; the state is the first field after the last ')'
        String stat = Files.readString(Path.of("/proc", Long.toString(process.pid()), "stat"));
        return stat.substring(stat.lastIndexOf(')') + 2).startsWith("T");
    }

    private void signal(String name) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
        if (kill.waitFor() != 0) throw new IllegalStateException("kill -" + name + " failed");
    }

    /** SIGTERM, and wait (up to a minute) until the process has shut down: its graceful stop. */
    void terminateAndAwaitExit() {
        process.destroy();
        org.awaitility.Awaitility.await("process exits").atMost(java.time.Duration.ofMinutes(1)).until(() -> !process.isAlive());
    }

    /** SIGKILL: no shutdown hook, no signal handler, no last words. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor();
    }

}

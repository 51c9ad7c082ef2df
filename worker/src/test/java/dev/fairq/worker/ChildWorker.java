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
        String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Path log = Files.createTempFile("fairq-child-" + id.replace(':', '_'), ".log");
        ProcessBuilder pb = new ProcessBuilder(List.of(java, "-Xmx256m", "-cp", classpath,
                WorkerProcessMain.class.getName(), db.jdbcUrl, db.user, db.password == null ? "" : db.password, id,
                Integer.toString(threads), Integer.toString(prefetch), Long.toString(leaseMillis),
                Long.toString(graceMillis)));
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

    /** SIGKILL: no shutdown hook, no signal handler, no last words. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor();
    }

}

package dev.fairq.worker;

import dev.fairq.schema.JobRequest;
import dev.fairq.schema.generated.enums.JobStatus;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An application process (its own JVM, {@link EnqueuerProcessMain}) whose worker took a job in its enqueue is
 * SIGKILLed between the insert and its transaction's commit: nothing of the job is left (no row, no lease), and the
 * tenant's grant it had taken is there for the next enqueue, which another process's worker starts.
 */
class EnqueuerCrashTest extends PlatformTest {
    private Process child;

    @AfterEach
    void killTheChild() throws Exception {
        if (child != null) child.destroyForcibly().waitFor();
    }

    @Test
    void anApplicationKilledBeforeItsCommitLeavesNoJobAndItsGrantToTheNextEnqueue() throws Exception {
        db.dsl().execute("INSERT INTO admission_grants (tenant_id) VALUES ('acme')");
        String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        Path log = Files.createTempFile("fairq-app", ".log");
        child = new ProcessBuilder(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m",
                "-cp", classpath, EnqueuerProcessMain.class.getName(), db.jdbcUrl, db.user, db.password == null ? "" : db.password,
                "app-1")).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        await().atMost(Duration.ofSeconds(60)).until(() -> Files.readString(log).contains("ENQUEUED") || !child.isAlive());
        assertTrue(Files.readString(log).contains(" running"), "taken in its enqueue by the application's worker: " + Files.readString(log));

        String openTransaction = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'app-app-1' "
                + "AND state LIKE 'idle in transaction%'";
        assertEquals(1, db.count(openTransaction), "the application's transaction is open");
        child.destroyForcibly().waitFor(); // SIGKILL: the transaction never commits
        await().atMost(Duration.ofSeconds(30)).until(() -> db.count(openTransaction) == 0); // PostgreSQL rolled it back
        assertEquals(0, db.count("SELECT count(*) FROM jobs"), "no job, and so no lease, left behind");
        assertEquals(1, db.count("SELECT count(*) FROM admission_grants WHERE used_at IS NULL"), "the grant was not used");

        HandlerRegistry handlers = new HandlerRegistry();
        handlers.register("noop", job -> { });
        Worker w = platform.startWorker(TestPlatform.fastConfig("w2", 2), handlers);
        await().atMost(Duration.ofSeconds(10)).until(w::takesStartsInEnqueue);
        var r = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "noop").build());
        assertEquals(JobStatus.running, r.job().getStatus(), "the next enqueue takes the grant");
        assertEquals("w2", r.job().getLockedBy());
        await().atMost(Duration.ofSeconds(20)).until(() -> db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded'") == 1);
        assertEquals(1, db.count("SELECT count(*) FROM jobs"));
    }
}

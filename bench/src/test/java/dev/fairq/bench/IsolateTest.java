package dev.fairq.bench;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The servers the benchmarks measure run with the bench's settings only, not the caller's shell or tenants.yml. */
class IsolateTest {
    @Test
    void theCallersFairqVariablesAndWorkingDirectoryStayOut() throws Exception {
        Path dir = Files.createTempDirectory("fairq-bench-isolate-test");
        ProcessBuilder pb = new ProcessBuilder("java", "-jar", "fairq.jar", "server");
        pb.environment().put("FAIRQ_WORKER_THREADS", "2");
        pb.environment().put("FAIRQ_SUBMIT_START", "false");
        pb.environment().put("PATH_KEPT", "yes");
        FairqServer.isolate(pb, dir);
        assertEquals(dir.toFile(), pb.directory(), "an empty directory: no ./tenants.yml");
        assertFalse(pb.environment().containsKey("FAIRQ_WORKER_THREADS"));
        assertFalse(pb.environment().containsKey("FAIRQ_SUBMIT_START"));
        assertTrue(pb.environment().containsKey("PATH_KEPT"), "only FAIRQ_* variables go");
        assertEquals(System.getenv("FAIRQ_FAIR_SHARE"), pb.environment().get("FAIRQ_FAIR_SHARE"), "the one setting a run may choose");
        Files.delete(dir);
    }
}

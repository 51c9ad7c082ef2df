package dev.fairq.bench;

import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** Whose CPU the benchmarks count as PostgreSQL's: the bench server's processes, not every postgres of the machine. */
class ServerProcessesTest {
    @Test
    void aPidThatIsNoLocalPostgresCountsNothing() {
        // a server on another machine: its backend's pid names some unrelated local process (here this JVM), whose
        // parent's tree (Maven's) was counted as the database's CPU
        assertEquals(List.of(), BenchDatabase.serverProcesses(ProcessHandle.current().pid()));
    }

    @Test
    void aLocalServerIsItsPostmasterAndTheProcessesUnderIt() throws Exception {
        String url = System.getenv("FAIRQ_TEST_DATABASE_URL");
        assumeTrue(url != null && !url.isBlank(), "FAIRQ_TEST_DATABASE_URL names a local server");
        String user = System.getenv().getOrDefault("FAIRQ_TEST_DATABASE_USER", "postgres");
        try (Connection c = DriverManager.getConnection(url, user, System.getenv("FAIRQ_TEST_DATABASE_PASSWORD"));
             Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT pg_backend_pid()")) {
            r.next();
            long backend = r.getLong(1);
            assumeTrue(ProcessHandle.of(backend).isPresent(), "the server runs on this machine");
            List<ProcessHandle> processes = BenchDatabase.serverProcesses(backend);
            ProcessHandle postmaster = ProcessHandle.of(backend).flatMap(ProcessHandle::parent).orElseThrow();
            assertEquals(postmaster.pid(), processes.get(0).pid());
            assertTrue(processes.stream().anyMatch(h -> h.pid() == backend), "the session's own backend counts");
            for (ProcessHandle h : processes.subList(1, processes.size())) {
                assertTrue(h.parent().map(p -> p.pid() == postmaster.pid()).orElse(false)
                        || postmaster.descendants().anyMatch(d -> d.pid() == h.pid()), h + " is not under the server");
            }
        }
    }
}

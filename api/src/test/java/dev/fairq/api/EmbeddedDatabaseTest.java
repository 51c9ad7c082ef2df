package dev.fairq.api;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The embedded database asks every connection for a generated password kept under the data directory: a data
 * directory from before (initdb's trust) is locked down at its next start, and a restart keeps working.
 */
class EmbeddedDatabaseTest {

    @Test
    void anOldTrustingDataDirectoryIsLockedDownAndRestartsKeepWorking(@TempDir Path root) throws Exception {
        // a data directory as earlier versions left it: initdb -A trust, no password file, one row of data
        try (EmbeddedPostgres old = EmbeddedPostgres.builder().setDataDirectory(root.resolve("postgres"))
                .setCleanDataDirectory(false).start();
             Connection c = DriverManager.getConnection(old.getJdbcUrl("postgres", "postgres"));
             Statement s = c.createStatement()) {
            s.execute("CREATE TABLE kept (v text)");
            s.execute("INSERT INTO kept VALUES ('before')");
        }
        assertFalse(Files.exists(root.resolve(EmbeddedDatabase.PASSWORD_FILE)));

        String password;
        EmbeddedDatabase first = EmbeddedDatabase.start(root);
        try {
            Path file = root.resolve(EmbeddedDatabase.PASSWORD_FILE);
            password = Files.readString(file).strip();
            assertTrue(password.length() >= 40, "256 random bits");
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
            DatabaseTarget t = first.target();
            assertEquals(password, t.password());
            assertRefusedWithoutPassword(t.url());
            assertRefused(t.url(), "wrong-password");
            assertEquals("before", read(t.url(), password));
            String hba = Files.readString(root.resolve("postgres").resolve("pg_hba.conf"));
            assertFalse(hba.contains("trust"), hba);
            assertTrue(hba.contains("local all all scram-sha-256"), "the unix socket too: " + hba);
        } finally {
            first.stop();
        }

        EmbeddedDatabase second = EmbeddedDatabase.start(root); // a restart: the same password, the same data
        try {
            assertEquals(password, second.target().password());
            assertEquals("before", read(second.target().url(), password));
            assertRefusedWithoutPassword(second.target().url());
        } finally {
            second.stop();
        }

        // a lost password file is reported as such, not as a failed connection
        Files.delete(root.resolve(EmbeddedDatabase.PASSWORD_FILE));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> EmbeddedDatabase.start(root));
        assertTrue(e.getMessage().contains("db-password is missing"), e.getMessage());
    }

    /**
     * A server killed with SIGKILL leaves its PostgreSQL running: the next start must stop that orphan and start
     * (it failed with "lock file postmaster.pid already exists"), while a second process on a data directory in use
     * is refused in one line naming FAIRQ_DATA_DIR (it had been zonky's bare "could not lock").
     */
    @Test
    void aStartAfterTheServerWasKilledStopsItsOrphanedPostgres(@TempDir Path root) throws Exception {
        String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        Process child = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx128m", "-cp", classpath, StartAndWait.class.getName(), root.toString()).redirectErrorStream(true).start();
        try {
            var out = new java.io.BufferedReader(new java.io.InputStreamReader(child.getInputStream()));
            for (String line; (line = out.readLine()) != null && !line.equals(StartAndWait.STARTED); ) {
                // the child's log, until it says its database is up
            }
            assertTrue(child.isAlive(), "the child started its embedded PostgreSQL");
            IllegalStateException inUse = assertThrows(IllegalStateException.class, () -> EmbeddedDatabase.start(root));
            assertTrue(inUse.getMessage().contains("in use by another fairq process (FAIRQ_DATA_DIR"), inUse.getMessage());
            assertTrue(StartupErrors.expected(inUse), "one line, no stack trace");
        } finally {
            child.destroyForcibly().waitFor(); // SIGKILL: its postmaster lives on
        }
        assertTrue(Files.exists(root.resolve("postgres").resolve("postmaster.pid")));

        EmbeddedDatabase restarted = EmbeddedDatabase.start(root);
        try {
            String password = Files.readString(root.resolve(EmbeddedDatabase.PASSWORD_FILE)).strip();
            assertEquals("after the kill", read(restarted.target().url(), password));
        } finally {
            restarted.stop();
        }
    }

    /** A server in miniature: starts the embedded database, writes a row, says so, and waits to be killed. */
    static final class StartAndWait {
        static final String STARTED = "embedded database started";

        public static void main(String[] args) throws Exception {
            EmbeddedDatabase db = EmbeddedDatabase.start(Path.of(args[0]));
            try (Connection c = DriverManager.getConnection(db.target().url(), "postgres", db.target().password());
                 Statement s = c.createStatement()) {
                s.execute("CREATE TABLE kept (v text)");
                s.execute("INSERT INTO kept VALUES ('after the kill')");
            }
            System.out.println(STARTED);
            System.out.flush();
            Thread.sleep(Long.MAX_VALUE);
        }
    }

    private static String read(String url, String password) throws SQLException {
        try (Connection c = DriverManager.getConnection(url, "postgres", password); Statement s = c.createStatement();
             var rs = s.executeQuery("SELECT v FROM kept")) {
            assertTrue(rs.next());
            return rs.getString(1);
        }
    }

    private static void assertRefusedWithoutPassword(String url) {
        SQLException e = assertThrows(SQLException.class, () -> DriverManager.getConnection(url).close());
        assertTrue(e.getMessage().contains("password"), e.getMessage());
    }

    private static void assertRefused(String url, String password) {
        SQLException e = assertThrows(SQLException.class, () -> DriverManager.getConnection(url, "postgres", password).close());
        assertTrue(e.getMessage().contains("password authentication failed"), e.getMessage());
    }
}

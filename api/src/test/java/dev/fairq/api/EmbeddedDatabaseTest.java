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

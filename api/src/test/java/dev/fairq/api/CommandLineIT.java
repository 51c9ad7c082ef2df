package dev.fairq.api;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The README's command line for real: {@code java -jar api/target/fairq.jar jobs ...} in its own process, with
 * FAIRQ_URL and FAIRQ_TOKEN from the environment, against the running server: exit status 0 and the API's JSON
 * with {@code --json}; on an error a non-zero status and one line on stderr, never a stack trace.
 */
class CommandLineIT extends AppTest {
    record Exit(int status, String out, String err) {}

    private static Exit fairq(Map<String, String> env, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx128m", "-jar", Path.of(System.getProperty("fairq.jar", "target/fairq.jar")).toAbsolutePath().toString()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().keySet().removeIf(k -> k.startsWith("FAIRQ_"));
        pb.environment().putAll(env);
        Process p = pb.start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "fairq " + String.join(" ", args) + " did not end");
        return new Exit(p.exitValue(), out, err);
    }

    @Test
    void theJarSubmitsReadsAndFailsClearly() throws Exception {
        String tenant = TestApp.uniqueTenant("jar");
        Map<String, String> admin = Map.of("FAIRQ_URL", "http://localhost:" + app.support.getLocalPort(), "FAIRQ_TOKEN", TestApp.ADMIN_TOKEN);
        Exit set = fairq(admin, "tenants", "set", tenant, "--json", "{\"max_running\": 3}");
        assertEquals(0, set.status(), set.err());
        Exit key = fairq(admin, "tenants", "keys", "create", tenant, "--json");
        assertEquals(0, key.status(), key.err());
        Map<String, String> env = Map.of("FAIRQ_URL", "http://localhost:" + app.support.getLocalPort(),
                "FAIRQ_TOKEN", TestApp.JSON.readTree(key.out()).get("key").asText());

        Exit submit = fairq(env, "jobs", "submit", "--type", "record", "--payload", "{\"n\": 1}", "--delay-ms", "3600000", "--json");
        assertEquals(0, submit.status(), submit.err());
        JsonNode job = TestApp.JSON.readTree(submit.out());
        assertEquals(tenant, job.get("tenant").asText());
        Exit get = fairq(env, "jobs", "get", job.get("id").asText());
        assertEquals(0, get.status(), get.err());
        assertTrue(get.out().startsWith("job " + job.get("id").asText() + ": pending"), get.out());

        Exit missing = fairq(env, "jobs", "cancel", "999999999");
        assertNotEquals(0, missing.status());
        assertEquals("fairq: no job 999999999 (HTTP 404)", missing.err().strip());
        Exit nowhere = fairq(Map.of("FAIRQ_URL", "http://127.0.0.1:1", "FAIRQ_TOKEN", "x"), "stats");
        assertNotEquals(0, nowhere.status());
        assertTrue(nowhere.err().startsWith("fairq: cannot reach fairq at http://127.0.0.1:1"), nowhere.err());
        for (Exit e : List.of(missing, nowhere)) assertFalse(e.err().contains("\tat "), "no stack trace: " + e.err());
    }

    /**
     * {@code migrate} is idempotent (a second run applies nothing and says the same), and refuses a database that a later
     * build migrated: one line naming both versions, exit 1, nothing applied. It had said "migrations applied", exit 0
     * (Flyway only logs a warning), to a deploy about to start an older build against a newer schema.
     */
    @Test
    void migrateIsIdempotentAndRefusesADatabaseAheadOfTheBuild() throws Exception {
        Map<String, String> env = new java.util.HashMap<>(Map.of("FAIRQ_DATABASE_URL", app.db.jdbcUrl, "FAIRQ_DATABASE_USER", app.db.user));
        if (app.db.password != null) env.put("FAIRQ_DATABASE_PASSWORD", app.db.password);
        for (int i = 0; i < 2; i++) {
            Exit again = fairq(env, "migrate");
            assertEquals(0, again.status(), again.err());
            assertTrue(again.out().contains("fairq: migrations applied"), again.out());
        }
        app.db.dsl().execute("INSERT INTO flyway_schema_history (installed_rank, version, description, type, script, checksum, "
                + "installed_by, execution_time, success) SELECT max(installed_rank) + 1, '9999', 'later release', 'SQL', "
                + "'V9999__later_release.sql', 1, current_user, 1, true FROM flyway_schema_history");
        try {
            Exit ahead = fairq(env, "migrate");
            assertEquals(1, ahead.status(), ahead.out() + ahead.err());
            assertFalse(ahead.err().contains("\tat "), "no stack trace: " + ahead.err());
            assertTrue(ahead.err().strip().startsWith("fairq: the database's schema is at version 9999, newer than this build's "
                    + "latest migration ("), ahead.err());
            assertFalse(ahead.out().contains("migrations applied"), ahead.out());
        } finally {
            app.db.dsl().execute("DELETE FROM flyway_schema_history WHERE version = '9999'");
        }
    }

    /** No command is a mistake in the arguments, not a success: the usage, a line saying what is missing, status 1. */
    @Test
    void theJarWithoutACommandFails() throws Exception {
        Exit none = fairq(Map.of());
        assertEquals(1, none.status(), none.out() + none.err());
        assertTrue(none.out().contains("usage: java -jar fairq.jar"), none.out());
        assertTrue(none.err().contains("a command is required"), none.err());
    }

    /** {@code --version} prints the build's version (the jar's Implementation-Version). */
    @Test
    void theJarKnowsItsVersion() throws Exception {
        Exit v = fairq(Map.of(), "--version");
        assertEquals(0, v.status(), v.err());
        assertTrue(v.out().strip().matches("\\d+\\.\\d+\\.\\d+.*"), v.out());
    }

    /**
     * A role command that cannot start says why in one line and exits 1: a setting out of range, no database for a
     * shared-database role, a database that does not answer, a missing file (each had printed 7-33 frames).
     */
    @Test
    void aProcessThatCannotStartSaysWhyInOneLine() throws Exception {
        String token = "t".repeat(40);
        List<Exit> exits = List.of(
                fairq(Map.of("FAIRQ_LEASE_MS", "abc"), "check"),
                fairq(Map.of(), "migrate"),
                fairq(Map.of("FAIRQ_DATABASE_URL", "jdbc:postgresql://127.0.0.1:1/nowhere", "FAIRQ_ADMIN_TOKEN", token), "worker"),
                fairq(Map.of(), "server", "/nonexistent/fairq.yml"),
                fairq(Map.of("FAIRQ_DATABASE_URL", "notajdbcurl"), "migrate"));
        List<String> expected = List.of("FAIRQ_LEASE_MS must be a whole number", "set FAIRQ_DATABASE_URL",
                "Connection to 127.0.0.1:1 refused", "/nonexistent/fairq.yml", "FAIRQ_DATABASE_URL (databaseUrl) is not a PostgreSQL JDBC URL");
        for (int i = 0; i < exits.size(); i++) {
            Exit e = exits.get(i);
            assertEquals(1, e.status(), e.err());
            assertFalse(e.err().contains("\tat "), "no stack trace: " + e.err());
            String last = e.err().strip().lines().reduce((a, b) -> b).orElse("");
            assertTrue(last.startsWith("fairq: ") && last.contains(expected.get(i)), e.err());
        }
    }
}

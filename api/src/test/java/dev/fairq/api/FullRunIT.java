package dev.fairq.api;

import dev.fairq.testing.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The README's run command for real: {@code java -jar api/target/fairq.jar server} in an empty directory
 * (embedded PostgreSQL under ./.fairq), the printed admin token, a tenant and a key over the admin API,
 * jobs submitted and picked up, a graceful stop (exit 0), a restart, and everything still there.
 */
class FullRunIT {
    private final List<Process> started = new ArrayList<>();

    @AfterEach
    void stop() {
        for (Process p : started) p.destroyForcibly();
    }

    record Running(Process process, List<String> lines, int port, int adminPort) {}

    private Running start(Path dir, int port, int adminPort) throws Exception {
        JarProcess jar = JarProcess.start(dir, "-Xmx384m", java.util.Map.of("FAIRQ_PORT", Integer.toString(port),
                "FAIRQ_ADMIN_PORT", Integer.toString(adminPort)), "server"); // noop: a demo handler, on with the embedded database
        Process p = jar.process();
        List<String> lines = jar.lines();
        started.add(p);
        Running running = new Running(p, lines, port, adminPort);
        await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(250)).until(() -> {
            if (!p.isAlive()) throw new AssertionError("fairq exited with " + p.exitValue() + ":\n" + String.join("\n", lines));
            return lines.stream().anyMatch(l -> l.contains("Started oejs.Server") || l.contains("Server: Started"));
        });
        return running;
    }

    private TestApp.Res call(Running r, String method, String path, String token, String body) {
        return TestApp.callPort(r.port(), method, path, token, body);
    }

    @Test
    void runFromAnEmptyDirectoryRestartAndKeepEverything() throws Exception {
        Path dir = Files.createTempDirectory("fairq-run");
        int port = freePort(), adminPort = freePort();
        Running first = start(dir, port, adminPort);
        String token = first.lines().stream().filter(l -> l.startsWith("fairq admin token: ")).findFirst()
                .orElseThrow(() -> new AssertionError("no admin token printed:\n" + String.join("\n", first.lines())))
                .substring("fairq admin token: ".length()).trim();

        assertEquals(401, call(first, "GET", "/v1/admin/tenants", "wrong", null).status());
        assertEquals(201, call(first, "PUT", "/v1/admin/tenants/acme", token, "{\"weight\": 2, \"max_running\": 4}").status());
        TestApp.Res key = call(first, "POST", "/v1/admin/tenants/acme/keys", token, null);
        assertEquals(201, key.status());
        String apiKey = key.body().get("key").asText();
        List<Long> ids = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            TestApp.Res job = call(first, "POST", "/v1/jobs", apiKey, "{\"type\": \"noop\", \"payload\": {\"i\": " + i + "}}");
            assertEquals(201, job.status(), job.toString());
            ids.add(job.body().get("id").asLong());
        }
        assertEquals(3, call(first, "GET", "/v1/jobs", apiKey, null).body().get("jobs").size());
        // the in-process scheduler admits them and the in-process worker runs them (demo handler noop)
        for (long id : ids) {
            await().atMost(Duration.ofSeconds(30)).until(() ->
                    call(first, "GET", "/v1/jobs/" + id, apiKey, null).body().get("status").asText().equals("succeeded"));
        }
        assertEquals(200, call(first, "PATCH", "/v1/admin/tenants/acme", token, "{\"max_running\": 8}").status());
        assertEquals(200, TestApp.callPort(adminPort, "GET", "/healthcheck", null, null).status());

        first.process().destroy(); // SIGTERM: graceful stop
        assertTrue(first.process().waitFor(60, TimeUnit.SECONDS), "stopped within a minute");
        assertEquals(0, first.process().exitValue(), String.join("\n", first.lines()));
        assertTrue(Files.isDirectory(dir.resolve(".fairq")));

        Running second = start(dir, port, adminPort);
        assertFalse(second.lines().stream().anyMatch(l -> l.startsWith("fairq admin token: ")), "the token is printed once");
        assertEquals(200, call(second, "GET", "/v1/admin/tenants/acme", token, null).status());
        assertEquals(8, call(second, "GET", "/v1/admin/tenants/acme", token, null).body().get("max_running").asInt());
        TestApp.Res list = call(second, "GET", "/v1/jobs", apiKey, null);
        assertEquals(200, list.status());
        assertEquals(3, list.body().get("jobs").size());
        // create, key_create, patch
        assertEquals(3, call(second, "GET", "/v1/admin/audit?tenant=acme", token, null).body().get("entries").size());
        second.process().destroy();
        assertTrue(second.process().waitFor(60, TimeUnit.SECONDS));
    }

    /** {@code migrate} against a shared database (FAIRQ_DATABASE_URL): an empty database gets the schema, twice is a no-op. */
    @Test
    void migrateCommandMigratesAnEmptyDatabase() throws Exception {
        TestDatabase db = TestDatabase.get();
        String name = "fairq_migrate_it_" + ProcessHandle.current().pid();
        db.dsl().execute("DROP DATABASE IF EXISTS " + name);
        db.dsl().execute("CREATE DATABASE " + name);
        try {
            String url = db.jdbcUrl.replaceFirst("(jdbc:postgresql://[^/]+/)[^?]*", "$1" + name);
            for (int run = 1; run <= 2; run++) {
                ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "-Xmx256m", "-jar", Path.of(System.getProperty("fairq.jar", "target/fairq.jar")).toAbsolutePath().toString(),
                        "migrate").redirectErrorStream(true);
                pb.environment().keySet().removeIf(k -> k.startsWith("FAIRQ_"));
                pb.environment().put("FAIRQ_DATABASE_URL", url);
                pb.environment().put("FAIRQ_DATABASE_USER", db.user);
                if (db.password != null) pb.environment().put("FAIRQ_DATABASE_PASSWORD", db.password);
                pb.environment().put("FAIRQ_ADMIN_TOKEN", "migrate-only-0123456789abcdef0123456789");
                Process p = pb.start();
                started.add(p);
                String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                assertTrue(p.waitFor(120, TimeUnit.SECONDS), "migrate did not end");
                assertEquals(0, p.exitValue(), "run " + run + ":\n" + out);
                assertTrue(out.contains("fairq: migrations applied"), out);
            }
            try (var c = java.sql.DriverManager.getConnection(url, db.user, db.password);
                 var rs = c.createStatement().executeQuery(
                         "SELECT count(*) FILTER (WHERE success), count(*) FROM flyway_schema_history WHERE version IS NOT NULL")) {
                assertTrue(rs.next());
                assertEquals(rs.getInt(2), rs.getInt(1), "every migration succeeded");
                assertTrue(rs.getInt(1) >= 3, "V1..V3 applied once each: " + rs.getInt(1));
            }
        } finally {
            db.dsl().execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
        }
    }

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}

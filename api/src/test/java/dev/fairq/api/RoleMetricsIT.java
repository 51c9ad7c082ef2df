package dev.fairq.api;

import dev.fairq.schema.JobRequest;
import dev.fairq.schema.JobStore;
import dev.fairq.testing.TestDatabase;
import org.jooq.DSLContext;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A deployment split into roles: {@code scheduler} and {@code worker} processes (their own JVMs, their own database)
 * serve /metrics on FAIRQ_METRICS_PORT, counting what they did themselves; they had none, so the jobs a worker
 * process ran were in no counter.
 */
class RoleMetricsIT {
    private static final Pattern SERVING = Pattern.compile("serving /metrics and /ping on ([^:]+):(\\d+)");
    private final List<Process> started = new ArrayList<>();
    private final HttpClient http = HttpClient.newHttpClient();

    @AfterEach
    void stop() {
        for (Process p : started) p.destroyForcibly();
    }

    private JarProcess start(String role, String url, TestDatabase db, Map<String, String> env) throws Exception {
        Map<String, String> all = new java.util.HashMap<>(env);
        all.put("FAIRQ_DATABASE_URL", url);
        all.put("FAIRQ_DATABASE_USER", db.user);
        if (db.password != null) all.put("FAIRQ_DATABASE_PASSWORD", db.password);
        all.put("FAIRQ_ADMIN_TOKEN", "role-metrics-0123456789abcdef0123456789");
        JarProcess p = JarProcess.start(null, "-Xmx256m", all, role);
        started.add(p.process());
        return p;
    }

    /** The port the process says it serves /metrics on, once it says so. */
    private static int metricsPort(JarProcess r) {
        int[] port = new int[1];
        await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(200)).until(() -> {
            if (!r.process().isAlive()) throw new AssertionError("exited " + r.process().exitValue() + ":\n" + String.join("\n", r.lines()));
            for (String l : r.lines()) {
                Matcher m = SERVING.matcher(l);
                if (m.find()) {
                    assertEquals("127.0.0.1", m.group(1), "the admin address by default: " + l);
                    port[0] = Integer.parseInt(m.group(2));
                    return true;
                }
            }
            return false;
        });
        return port[0];
    }

    private HttpResponse<String> get(int port, String method, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .method(method, HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
    }

    /** The value of the sample line starting with {@code series} (name and labels), or -1 when there is none. */
    private static double sample(String scrape, String series) {
        return scrape.lines().filter(l -> l.startsWith(series + " ")).findFirst()
                .map(l -> Double.parseDouble(l.substring(series.length() + 1).trim())).orElse(-1.0);
    }

    private static String status(DSLContext dsl, long id) {
        return dsl.resultQuery("SELECT status FROM jobs WHERE id = ?", id).fetchOne(0, String.class);
    }

    @Test
    void workerAndSchedulerProcessesServeTheirOwnCountersOnTheMetricsPort() throws Exception {
        TestDatabase db = TestDatabase.get();
        String name = "fairq_role_metrics_it_" + ProcessHandle.current().pid();
        db.dsl().execute("DROP DATABASE IF EXISTS " + name);
        db.dsl().execute("CREATE DATABASE " + name);
        try {
            String url = db.jdbcUrl.replaceFirst("(jdbc:postgresql://[^/]+/)[^?]*", "$1" + name);
            JarProcess scheduler = start("scheduler", url, db, Map.of("FAIRQ_METRICS_PORT", "0"));
            int schedulerPort = metricsPort(scheduler);
            JarProcess worker = start("worker", url, db, Map.of("FAIRQ_METRICS_PORT", "0", "FAIRQ_DEMO_HANDLERS", "true"));
            int workerPort = metricsPort(worker);

            try (Connection c = DriverManager.getConnection(url, db.user, db.password)) {
                DSLContext dsl = DSL.using(c);
                dsl.execute("INSERT INTO tenants (id) VALUES ('split')");
                List<JobRequest> jobs = new ArrayList<>();
                for (int i = 0; i < 7; i++) jobs.add(JobRequest.builder("split", "noop").build());
                new JobStore().enqueueAll(dsl, jobs);
                await().atMost(Duration.ofSeconds(60)).until(() ->
                        dsl.resultQuery("SELECT count(*) FROM jobs WHERE status = 'succeeded'").fetchOne(0, Long.class) == 7);
                // a job cancelled while it runs started, but did not succeed (it had been counted a success)
                long sleeping = new JobStore().enqueueAll(dsl, List.of(JobRequest.builder("split", "sleep")
                        .payload("{\"ms\": 120000}").build())).get(0).job().getId();
                await().atMost(Duration.ofSeconds(60)).until(() -> "running".equals(status(dsl, sleeping)));
                new JobStore().cancel(dsl, "split", sleeping);
                await().atMost(Duration.ofSeconds(60)).until(() -> "cancelled".equals(status(dsl, sleeping)));
            }

            // an attempt is counted once its outcome is recorded, just after the commit the test saw
            await().atMost(Duration.ofSeconds(10)).until(() -> sample(get(workerPort, "GET", "/metrics").body(),
                    "fairq_job_duration_seconds_count{tenant=\"split\"}") == 8.0);
            HttpResponse<String> w = get(workerPort, "GET", "/metrics");
            assertEquals(200, w.statusCode());
            assertTrue(w.headers().firstValue("Content-Type").orElse("").startsWith("text/plain"), w.headers().toString());
            assertEquals(8.0, sample(w.body(), "fairq_job_starts_total{tenant=\"split\"}"), w.body());
            assertEquals(7.0, sample(w.body(), "fairq_job_successes_total{tenant=\"split\"}"), "the cancelled job is no success: " + w.body());
            assertEquals(0.0, sample(w.body(), "fairq_job_retries_total{tenant=\"split\"}"), w.body());
            assertEquals(0.0, sample(w.body(), "fairq_job_dead_letters_total{tenant=\"split\"}"), w.body());
            assertEquals(8.0, sample(w.body(), "fairq_job_duration_seconds_count{tenant=\"split\"}"), w.body());
            assertFalse(w.body().contains("\nfairq_jobs{"), "the queue's depth is the server's to report: " + w.body());

            HttpResponse<String> s = get(schedulerPort, "GET", "/metrics");
            assertEquals(200, s.statusCode());
            assertTrue(sample(s.body(), "fairq_scheduler_tick_seconds_count") > 0, "the leader's ticks: " + s.body());

            assertEquals("pong", get(workerPort, "GET", "/ping").body().strip());
            HttpResponse<String> missing = get(workerPort, "GET", "/nope");
            assertEquals(404, missing.statusCode());
            assertEquals("{\"error\":\"HTTP 404 Not Found\"}", missing.body(), "the error body of every other answer");
            HttpResponse<String> post = get(workerPort, "POST", "/metrics");
            assertEquals(405, post.statusCode());
            assertEquals("GET, HEAD", post.headers().firstValue("Allow").orElse(""));

            // a port already taken: the process says so in one line and exits 1, before it claims anything
            try (ServerSocket taken = new ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
                JarProcess clash = start("worker", url, db, Map.of("FAIRQ_METRICS_PORT", Integer.toString(taken.getLocalPort())));
                assertTrue(clash.process().waitFor(120, TimeUnit.SECONDS), "a clash ends the process");
                assertEquals(1, clash.process().exitValue(), String.join("\n", clash.lines()));
                String said = "fairq: FAIRQ_METRICS_PORT " + taken.getLocalPort() + " on 127.0.0.1";
                await().atMost(Duration.ofSeconds(10)).until(() -> clash.lines().stream().anyMatch(l -> l.startsWith(said)));
                assertFalse(clash.lines().stream().anyMatch(l -> l.contains("\tat ")), "no stack trace: " + clash.lines());
            }
        } finally {
            for (Process p : started) p.destroyForcibly();
            for (Process p : started) p.waitFor(30, TimeUnit.SECONDS);
            db.dsl().execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
        }
    }
}

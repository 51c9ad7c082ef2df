package dev.fairq.bench;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.schema.Json;
import org.jooq.Record;

import java.io.File;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static dev.fairq.bench.OrderingBench.count;

/**
 * The platform as deployed: {@code java -jar api/target/fairq.jar server} (API, scheduler and an 8-thread
 * worker pool in one process) on the bench database. An admin creates a tenant and a key over the admin API;
 * then noop jobs are submitted one at a time over HTTP at 50 per second: 200 warm-up jobs (not counted),
 * then 1,000 measured ones. Enqueue-to-start is read from the jobs table, one clock (the database's):
 * started_at - created_at. Baseline in the same run: a JDBC round trip (SELECT 1) from this process.
 * Then, with the server stopped, the client phase ({@link ClientLatency}): the peers' way, a Java enqueue timed on
 * this JVM's clock to the handler's first line. {@code FAIRQ_BENCH_PHASES=http} or {@code =client} runs one.
 */
final class LatencyBench implements Bench.Benchmark {
    static final int WARMUP = 200, JOBS = 1_000, DIRECT = 500;
    static final long INTERVAL_NANOS = 20_000_000L; // 50 per second

    @Override
    public Map<String, Object> run(BenchDatabase db) throws Exception {
        // FAIRQ_BENCH_PHASES=client runs only the client-clock phase (issue 16), =http only the server's
        List<String> phases = phases(System.getenv().getOrDefault("FAIRQ_BENCH_PHASES", "http,client"));
        Map<String, Object> out = new LinkedHashMap<>();
        if (phases.contains("http")) out.putAll(http(db));
        if (phases.contains("client")) {
            // issue 16: the peers' way, on the client's clock, in the JVM of a worker (the server is stopped)
            out.putAll(new ClientLatency(db).run());
            out.put("client_targets", "client_p50_ms <= 1.0, client_p99_ms <= 3.0, client_p99_ms_loaded <= 10");
        }
        return out;
    }

    /**
     * The phases named in {@code FAIRQ_BENCH_PHASES} ("http", "client", comma-separated). Any other name throws: the
     * names were matched as substrings, so a misspelt list ran nothing and printed a JSON line without a figure.
     */
    static List<String> phases(String names) {
        List<String> phases = new ArrayList<>();
        for (String p : names.split(",")) {
            if (p.isBlank()) continue;
            if (!List.of("http", "client").contains(p.trim())) {
                throw new IllegalArgumentException("unknown latency phase '" + p.trim() + "' (phases: http, client)");
            }
            phases.add(p.trim());
        }
        if (phases.isEmpty()) throw new IllegalArgumentException("FAIRQ_BENCH_PHASES names no latency phase (http, client)");
        return phases;
    }

    private Map<String, Object> http(BenchDatabase db) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        Path jar = Path.of("api", "target", "fairq.jar");
        if (!Files.exists(jar)) throw new IllegalStateException(jar + " missing: build first (mvn -B package -DskipTests)");
        db.truncate();
        int port = FairqServer.freePort(), adminPort = FairqServer.freePort();
        String adminToken = FairqServer.newAdminToken();
        ProcessBuilder pb = new ProcessBuilder(FairqServer.javaBinary(), "-Xmx512m", "-jar", jar.toAbsolutePath().toString(), "server");
        // as the tenants bench runs it: the repository's own tenants.yml and the caller's FAIRQ_* stay out
        FairqServer.isolate(pb, Files.createTempDirectory("fairq-bench-latency"));
        FairqServer.serverEnvironment(pb.environment(), db.jdbcUrl, db.user, db.password, adminToken, port, adminPort);
        File log = new File(System.getProperty("java.io.tmpdir"), "fairq-bench-latency-server.log");
        pb.redirectErrorStream(true);
        pb.redirectOutput(log);
        Process server = pb.start();
        out.put("server", "java -jar api/target/fairq.jar server (log: " + log + ")");
        out.put("rate_per_s", 1_000_000_000L / INTERVAL_NANOS);
        out.put("warmup_jobs", WARMUP);
        out.put("jobs", JOBS);
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        String base = "http://127.0.0.1:" + port;
        try {
            FairqServer.awaitUp(http, base, adminToken, server, log, 90);
            send(http, "PUT", base + "/v1/admin/tenants/latency", adminToken,
                    "{\"weight\": 1, \"rate_per_second\": 1000, \"burst\": 1000, \"max_running\": 100, \"api_rate_per_second\": 1000, \"api_burst\": 1000}", 201);
            String key = Json.MAPPER.readTree(send(http, "POST", base + "/v1/admin/tenants/latency/keys", adminToken, "", 201))
                    .get("key").asText();

            List<Double> http_ms = new ArrayList<>();
            long firstMeasuredId = -1;
            long next = System.nanoTime();
            for (int i = 0; i < WARMUP + JOBS; i++) {
                FairnessBench.sleepUntil(next);
                next += INTERVAL_NANOS;
                long t0 = System.nanoTime();
                JsonNode job = Json.MAPPER.readTree(send(http, "POST", base + "/v1/jobs", key, "{\"type\": \"noop\", \"payload\": {}}", 201));
                if (i >= WARMUP) {
                    http_ms.add((System.nanoTime() - t0) / 1e6);
                    if (firstMeasuredId < 0) firstMeasuredId = job.get("id").asLong();
                }
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (count(db, "SELECT count(*) FROM jobs WHERE status <> 'succeeded'") > 0) {
                if (System.nanoTime() > deadline) throw new IllegalStateException("jobs not all succeeded 30 s after the last submit");
                Thread.sleep(50);
            }
            long total = count(db, "SELECT count(*) FROM jobs WHERE tenant_id = 'latency'");
            if (total != WARMUP + JOBS) throw new IllegalStateException(total + " jobs stored, " + (WARMUP + JOBS) + " submitted");
            List<Double> e2e = new ArrayList<>();
            for (Record r : db.dsl().fetch("SELECT extract(epoch FROM started_at - created_at) * 1000 FROM jobs "
                    + "WHERE tenant_id = 'latency' AND id >= ?", firstMeasuredId)) {
                e2e.add(r.get(0, Double.class));
            }
            if (e2e.size() != JOBS) throw new IllegalStateException(e2e.size() + " measured jobs, expected " + JOBS);
            List<Double> admitted = new ArrayList<>(), claimed = new ArrayList<>();
            for (Record r : db.dsl().fetch("SELECT extract(epoch FROM admitted_at - created_at) * 1000, "
                    + "extract(epoch FROM started_at - admitted_at) * 1000 FROM jobs WHERE tenant_id = 'latency' AND id >= ?",
                    firstMeasuredId)) {
                admitted.add(r.get(0, Double.class));
                claimed.add(r.get(1, Double.class));
            }
            out.putAll(Stats.summary("", e2e));
            // a job started in its enqueue (LocalStarts: the server's own worker had a free thread) has started_at =
            // created_at, so the figure above is 0 for it; to its finish on the database clock (the completer's
            // statement, which batches) is the bound that counts the hand-off too
            List<Double> toFinish = new ArrayList<>();
            for (Record r : db.dsl().fetch("SELECT extract(epoch FROM finished_at - created_at) * 1000 FROM jobs "
                    + "WHERE tenant_id = 'latency' AND id >= ?", firstMeasuredId)) {
                toFinish.add(r.get(0, Double.class));
            }
            out.put("created_to_finished_p50_ms", Stats.round(Stats.percentile(toFinish, 50)));
            out.put("created_to_finished_p99_ms", Stats.round(Stats.percentile(toFinish, 99)));
            out.put("started_in_enqueue", Stats.round(count(db, "SELECT count(*) FROM jobs WHERE tenant_id = 'latency' AND id >= "
                    + firstMeasuredId + " AND started_at = created_at") / (double) JOBS));
            out.put("created_to_admitted_p50_ms", Stats.round(Stats.percentile(admitted, 50)));
            out.put("created_to_admitted_p99_ms", Stats.round(Stats.percentile(admitted, 99)));
            out.put("admitted_to_started_p50_ms", Stats.round(Stats.percentile(claimed, 50)));
            out.put("admitted_to_started_p99_ms", Stats.round(Stats.percentile(claimed, 99)));
            out.put("http_submit_p50_ms", Stats.round(Stats.percentile(http_ms, 50)));
            out.put("http_submit_p99_ms", Stats.round(Stats.percentile(http_ms, 99)));
            // breakdown: the same jobs enqueued straight into the database from this JVM (JobStore.enqueue in
            // a transaction, as the API resource does), same rate, same server (its scheduler and workers):
            // the time of the enqueue transaction itself, and what the scheduler and worker add after it
            dev.fairq.schema.JobStore store = new dev.fairq.schema.JobStore();
            List<Double> txMs = new ArrayList<>();
            long firstDirect = -1;
            next = System.nanoTime();
            for (int i = 0; i < DIRECT; i++) {
                FairnessBench.sleepUntil(next);
                next += INTERVAL_NANOS;
                long t0 = System.nanoTime();
                long id = db.dsl().transactionResult(c -> store.enqueue(c.dsl(),
                        dev.fairq.schema.JobRequest.builder("latency", "noop").build()).job().getId());
                txMs.add((System.nanoTime() - t0) / 1e6);
                if (firstDirect < 0) firstDirect = id;
            }
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (count(db, "SELECT count(*) FROM jobs WHERE status <> 'succeeded'") > 0) {
                if (System.nanoTime() > deadline) throw new IllegalStateException("direct jobs not all succeeded in 30 s");
                Thread.sleep(50);
            }
            List<Double> dE2e = new ArrayList<>(), dAdm = new ArrayList<>();
            for (Record r : db.dsl().fetch("SELECT extract(epoch FROM started_at - created_at) * 1000, "
                    + "extract(epoch FROM admitted_at - created_at) * 1000 FROM jobs WHERE id >= ?", firstDirect)) {
                dE2e.add(r.get(0, Double.class));
                dAdm.add(r.get(1, Double.class));
            }
            if (dE2e.size() != DIRECT) throw new IllegalStateException(dE2e.size() + " direct jobs, expected " + DIRECT);
            out.put("direct_enqueue_jobs", DIRECT);
            out.put("direct_enqueue_tx_p50_ms", Stats.round(Stats.percentile(txMs, 50)));
            out.put("direct_enqueue_tx_p99_ms", Stats.round(Stats.percentile(txMs, 99)));
            out.putAll(Stats.summary("direct_", dE2e));
            out.put("direct_created_to_admitted_p50_ms", Stats.round(Stats.percentile(dAdm, 50)));
            out.put("direct_created_to_admitted_p99_ms", Stats.round(Stats.percentile(dAdm, 99)));
            List<Double> rt = roundTrips(db, 500);
            double rtP50 = Stats.percentile(rt, 50);
            out.put("baseline_db_round_trip_p50_ms", Math.round(rtP50 * 100) / 100.0);
            out.put("baseline_db_round_trip_p99_ms", Math.round(Stats.percentile(rt, 99) * 100) / 100.0);
            // what an accepted job costs at the least: one durable (synchronous_commit on) single-row commit
            List<Double> commits = commits(db, 200);
            out.put("baseline_durable_commit_p50_ms", Stats.round(Stats.percentile(commits, 50)));
            out.put("baseline_durable_commit_p99_ms", Stats.round(Stats.percentile(commits, 99)));
            out.put("p50_over_db_round_trip", Stats.ratio(Stats.percentile(e2e, 50), rtP50));
            out.put("targets", "p50_ms <= 3, p99_ms <= 15");
            out.put("note", "admitted_at and started_at are now() of their transactions (transaction start), created_at too");
        } finally {
            server.destroy();
            if (!server.waitFor(30, TimeUnit.SECONDS)) server.destroyForcibly().waitFor();
        }
        return out;
    }

    private static List<Double> roundTrips(BenchDatabase db, int n) throws Exception {
        List<Double> ms = new ArrayList<>(n);
        try (Connection c = db.pool().getConnection(); Statement s = c.createStatement()) {
            for (int i = 0; i < n; i++) {
                long t0 = System.nanoTime();
                s.execute("SELECT 1");
                ms.add((System.nanoTime() - t0) / 1e6);
            }
        }
        return ms;
    }

    private static List<Double> commits(BenchDatabase db, int n) throws Exception {
        List<Double> ms = new ArrayList<>(n);
        try (Connection c = db.pool().getConnection(); Statement s = c.createStatement()) {
            s.execute("SET synchronous_commit = on");
            s.execute("CREATE TABLE IF NOT EXISTS bench_commit (id bigserial PRIMARY KEY, at timestamptz DEFAULT now())");
            for (int i = 0; i < n; i++) {
                long t0 = System.nanoTime();
                s.execute("INSERT INTO bench_commit DEFAULT VALUES");
                ms.add((System.nanoTime() - t0) / 1e6);
            }
        }
        return ms;
    }

    private static String send(HttpClient http, String method, String url, String token, String body, int expect) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).header("Authorization", "Bearer " + token)
                .timeout(Duration.ofSeconds(10));
        if (!body.isEmpty()) b.header("Content-Type", "application/json");
        b.method(method, body.isEmpty() ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != expect) throw new IllegalStateException(method + " " + url + ": " + r.statusCode() + " " + r.body());
        return r.body();
    }
}

package dev.fairq.bench;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code java -jar api/target/fairq.jar server} on a phase database, as a user runs it: the API, the scheduler
 * and a worker pool in one process, configured by {@code FAIRQ_*} variables only (inherited ones are cleared),
 * started in an empty working directory (so no {@code ./tenants.yml} seeds extra tenants). The one addition:
 * a config file that turns on DEBUG for {@code dev.fairq.scheduler.SchedulerService}, whose
 * {@code tick: wanted W admitted A in U us} lines are the only outside view of the scheduler's tick time.
 * Output goes to {@code $TMPDIR/fairq-bench-tenants-<name>.log}.
 */
final class FairqServer implements AutoCloseable {
    static final String TICK_LOGGER = "dev.fairq.scheduler.SchedulerService";
    /** logback's ISO8601 ("2026-11-29 23:28:10,670", UTC here) and the tick line of SchedulerService. */
    private static final Pattern TICK = Pattern.compile(
            "\\[(\\d{4}-\\d\\d-\\d\\d[ T]\\d\\d:\\d\\d:\\d\\d[,.]\\d{3})\\].*tick: wanted (\\d+) admitted (\\d+) in (\\d+) us");
    private static final DateTimeFormatter LOG_TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss,SSS");

    final String base;
    final String adminBase;
    final String adminToken;
    final File log;
    final HttpClient http;
    private final Process process;

    /** One scheduler tick seen in the log: when it ended (epoch ms), how long it took, what it did. */
    record Tick(long atMillis, double ms, int wanted, int admitted) {}

    private FairqServer(String base, String adminBase, String adminToken, File log, Process process) {
        this.base = base;
        this.adminBase = adminBase;
        this.adminToken = adminToken;
        this.log = log;
        this.process = process;
        this.http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    }

    static FairqServer start(PhaseDatabase db, String name, int workerThreads) throws Exception {
        Path jar = Path.of("api", "target", "fairq.jar").toAbsolutePath();
        if (!Files.exists(jar)) throw new IllegalStateException(jar + " missing: build first (mvn -B package -DskipTests)");
        Path dir = Files.createTempDirectory("fairq-bench-" + name);
        Path config = dir.resolve("bench.yml");
        // discardingThreshold 0: Dropwizard's async appender otherwise drops DEBUG lines when its queue is
        // 80% full, and a tick log with holes would hide exactly the slow ticks
        Files.writeString(config, """
                logging:
                  level: INFO
                  loggers:
                    %s: DEBUG
                  appenders:
                    - type: console
                      discardingThreshold: 0
                """.formatted(TICK_LOGGER));
        int port = freePort(), adminPort = freePort();
        String adminToken = newAdminToken();
        ProcessBuilder pb = new ProcessBuilder(javaBinary(), "-jar", jar.toString(), "server", config.toString());
        isolate(pb, dir);
        serverEnvironment(pb.environment(), db.jdbcUrl, db.user, db.password, adminToken, port, adminPort);
        pb.environment().put("FAIRQ_WORKER_THREADS", Integer.toString(workerThreads));
        File log = new File(System.getProperty("java.io.tmpdir"), "fairq-bench-tenants-" + name + ".log");
        pb.redirectErrorStream(true);
        pb.redirectOutput(log);
        FairqServer server = new FairqServer("http://127.0.0.1:" + port, "http://127.0.0.1:" + adminPort, adminToken, log, pb.start());
        try {
            server.awaitUp();
        } catch (Exception e) {
            server.close();
            throw e;
        }
        return server;
    }

    /**
     * Runs the server as the bench configures it and nothing else: in {@code emptyDir} (so no {@code ./tenants.yml}
     * adds tenants) with no {@code FAIRQ_*} variable of the caller's shell (a FAIRQ_WORKER_THREADS or FAIRQ_SUBMIT_START
     * left exported would change what is measured), but for {@code FAIRQ_FAIR_SHARE}, the one server setting a run
     * may choose (FAIRQ_FAIR_SHARE=jobs measures shares by job count).
     */
    static void isolate(ProcessBuilder pb, Path emptyDir) {
        pb.directory(emptyDir.toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("FAIRQ_"));
        String fairShare = System.getenv("FAIRQ_FAIR_SHARE");
        if (fairShare != null) pb.environment().put("FAIRQ_FAIR_SHARE", fairShare);
    }

    /** An admin token for one run: the prefix and 32 hex characters (the server wants at least 32 characters). */
    static String newAdminToken() {
        return "fqa_bench" + HexFormat.of().formatHex(new SecureRandom().generateSeed(16));
    }

    /** This JVM's java binary, to start a child process on the same Java. */
    static String javaBinary() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /**
     * The variables that point {@code fairq.jar server} at a database, on the given ports, with the demo
     * handlers (noop, sleep) the benchmarks submit.
     */
    static void serverEnvironment(Map<String, String> env, String jdbcUrl, String user, String password,
                                  String adminToken, int port, int adminPort) {
        env.put("FAIRQ_DATABASE_URL", jdbcUrl);
        env.put("FAIRQ_DATABASE_USER", user);
        if (password != null) env.put("FAIRQ_DATABASE_PASSWORD", password);
        env.put("FAIRQ_ADMIN_TOKEN", adminToken);
        env.put("FAIRQ_PORT", Integer.toString(port));
        env.put("FAIRQ_ADMIN_PORT", Integer.toString(adminPort));
        env.put("FAIRQ_DEMO_HANDLERS", "true");
    }

    private void awaitUp() throws Exception {
        awaitUp(http, base, adminToken, process, log, 180);
    }

    /**
     * Until the server at {@code base} answers the admin API (a tenant that does not exist: 404 once the API is up
     * and takes the token); throws if the process exits or {@code seconds} pass.
     */
    static void awaitUp(HttpClient http, String base, String adminToken, Process process, Object log, int seconds)
            throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) throw new IllegalStateException("the server exited; see " + log);
            try {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(base + "/v1/admin/tenants/bench-not-a-tenant"))
                        .header("Authorization", "Bearer " + adminToken).timeout(Duration.ofSeconds(5)).GET().build(),
                        HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 404) return;
            } catch (IOException notYet) {
                // not listening yet
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException("the server did not come up within " + seconds + " s; see " + log);
    }

    /** A request that must answer {@code expect}; returns the body. */
    String send(String method, String path, String token, String body, int expect) throws Exception {
        HttpResponse<String> r = http.send(request(method, base + path, token, body, Duration.ofSeconds(60)).build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != expect) {
            throw new IllegalStateException(method + " " + path + ": " + r.statusCode() + " " + abbreviate(r.body()));
        }
        return r.body();
    }

    static HttpRequest.Builder request(String method, String url, String token, String body, Duration timeout) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(timeout);
        if (token != null) b.header("Authorization", "Bearer " + token);
        if (body != null && !body.isEmpty()) b.header("Content-Type", "application/json");
        return b.method(method, body == null || body.isEmpty() ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(body));
    }

    /** What a big GET returned: status, bytes read, time to the last byte, and whether the deadline cut it short. */
    record Fetch(int status, long bytes, double ms, boolean cutShort) {}

    /**
     * GETs a possibly huge body without keeping it: counts its bytes, gives up at {@code timeoutMillis}
     * (then {@code bytes} is what had arrived, a lower bound, and {@code cutShort} is set).
     */
    Fetch fetch(String url, String token, long timeoutMillis) throws Exception {
        long t0 = System.nanoTime();
        long deadline = t0 + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        HttpResponse<InputStream> r;
        try {
            r = http.send(request("GET", url, token, null, Duration.ofMillis(timeoutMillis)).build(),
                    HttpResponse.BodyHandlers.ofInputStream());
        } catch (java.net.http.HttpTimeoutException e) {
            return new Fetch(0, 0, (System.nanoTime() - t0) / 1e6, true);
        }
        long bytes = 0;
        boolean cut = false;
        byte[] buf = new byte[1 << 16];
        try (InputStream in = r.body()) {
            int n;
            while ((n = in.read(buf)) >= 0) {
                bytes += n;
                if (System.nanoTime() > deadline) {
                    cut = true;
                    break;
                }
            }
        }
        return new Fetch(r.statusCode(), bytes, (System.nanoTime() - t0) / 1e6, cut);
    }

    /** Every tick line in the log so far. */
    List<Tick> ticks() throws IOException {
        List<Tick> out = new ArrayList<>();
        try (var lines = Files.lines(log.toPath())) {
            lines.forEach(line -> {
                Matcher m = TICK.matcher(line);
                if (m.find()) {
                    long at = LocalDateTime.parse(m.group(1).replace('T', ' ').replace('.', ','), LOG_TIME)
                            .toInstant(ZoneOffset.UTC).toEpochMilli();
                    out.add(new Tick(at, Integer.parseInt(m.group(4)) / 1000.0, Integer.parseInt(m.group(2)),
                            Integer.parseInt(m.group(3))));
                }
            });
        }
        return out;
    }

    /**
     * The ticks logged between two instants (epoch seconds, the database's clock; same machine, same clock):
     * count, p50, p99 and max of the tick's own time, and the longest gap between two consecutive tick lines
     * (a gap is time the scheduler's loop spent outside tick(): publishing state, the rollup, retention, or
     * waiting for work). Null figures, with a note, when the log has no tick lines (logger renamed or silent).
     */
    Map<String, Object> tickSummary(double fromEpochS, double toEpochS) throws IOException {
        long from = Math.round(fromEpochS * 1000), to = Math.round(toEpochS * 1000);
        List<Tick> all = ticks();
        List<Double> ms = new ArrayList<>();
        long prev = -1, maxGap = 0;
        for (Tick t : all) {
            if (t.atMillis() < from || t.atMillis() > to) continue;
            ms.add(t.ms());
            if (prev >= 0) maxGap = Math.max(maxGap, t.atMillis() - prev);
            prev = t.atMillis();
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ticks", ms.size());
        if (ms.isEmpty()) {
            m.put("tick_p50_ms", null);
            m.put("tick_p99_ms", null);
            m.put("tick_max_ms", null);
            m.put("loop_gap_max_ms", null);
            m.put("tick_note", all.isEmpty() ? "no 'tick:' lines from " + TICK_LOGGER + " at DEBUG in " + log
                    : "no tick logged in the window");
            return m;
        }
        m.put("tick_p50_ms", Stats.round(Stats.percentile(ms, 50)));
        m.put("tick_p99_ms", Stats.round(Stats.percentile(ms, 99)));
        m.put("tick_max_ms", Stats.round(Stats.percentile(ms, 100)));
        m.put("loop_gap_max_ms", maxGap);
        return m;
    }

    /** CPU seconds the server's JIT compiler threads have used so far ({@link #jitCpuSeconds(long, Map)}). */
    double jitCpuSeconds() {
        return jitCpuSeconds(process.pid(), compilerTicks);
    }

    /**
     * CPU seconds the JIT compiler threads of process {@code pid} have used so far (Linux: the "C1/C2 CompilerThre"
     * threads in /proc/PID/task, at the usual 100 clock ticks a second), or -1 where that cannot be read.
     * {@code seen}: each compiler thread's last reading, kept by the caller across calls.
     */
    static double jitCpuSeconds(long pid, Map<String, Long> seen) {
        File[] tasks = new File("/proc/" + pid + "/task").listFiles();
        if (tasks == null) return -1;
        for (File task : tasks) {
            try {
                String comm = Files.readString(task.toPath().resolve("comm")).trim();
                if (!comm.contains("CompilerThre")) continue;
                String stat = Files.readString(task.toPath().resolve("stat"));
                String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                seen.merge(task.getName(), Long.parseLong(f[11]) + Long.parseLong(f[12]), Math::max); // utime, stime
            } catch (IOException | RuntimeException e) {
                // a compiler thread that ended between the listing and the read
            }
        }
        // a compiler thread that ended keeps what it used (the JVM starts and stops them with the load)
        return seen.values().stream().mapToLong(Long::longValue).sum() / 100.0;
    }

    private final Map<String, Long> compilerTicks = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * Waits, while the caller's load goes on, until the server's JIT compilers used under {@link #JIT_QUIET_SHARE}
     * of a core over the last {@link #JIT_QUIET_WINDOW_MS}, or {@code capMs} passed; returns the seconds waited (-1
     * where the compilers' CPU cannot be read). On 2 cores a freshly started server's compilers used 30-50% of a core
     * for the whole 2-minute trickle phase (single C2 compilations of 2-8 s), so its first minutes measured the JIT
     * competing with the jobs, not the scheduler.
     */
    double awaitJitQuiet(long capMs) throws InterruptedException {
        long start = System.nanoTime(), deadline = start + capMs * 1_000_000;
        double before = jitCpuSeconds();
        if (before < 0) return -1;
        while (System.nanoTime() < deadline) {
            Thread.sleep(JIT_QUIET_WINDOW_MS);
            if (!alive()) throw new IllegalStateException("the server exited; see " + log);
            double now = jitCpuSeconds();
            if (now - before < JIT_QUIET_SHARE * JIT_QUIET_WINDOW_MS / 1000.0) break;
            before = now;
        }
        return Math.round((System.nanoTime() - start) / 1e8) / 10.0;
    }

    static final double JIT_QUIET_SHARE = 0.05;
    static final long JIT_QUIET_WINDOW_MS = 5_000;

    boolean alive() {
        return process.isAlive();
    }

    @Override
    public void close() throws InterruptedException {
        process.destroy(); // SIGTERM: the server stops gracefully
        if (!process.waitFor(60, TimeUnit.SECONDS)) process.destroyForcibly().waitFor();
    }

    private static String abbreviate(String s) {
        return s.length() <= 300 ? s : s.substring(0, 300) + "...";
    }

    static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}

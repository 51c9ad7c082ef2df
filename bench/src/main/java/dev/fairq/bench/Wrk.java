package dev.fairq.bench;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.schema.Json;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * wrk (Debian package {@code wrk}), the closed-loop HTTP load generator behind issue 9's own figures ("16
 * connections"). Its C event loop costs microseconds a request; the bench's java.net.http callers took about
 * 0.6 ms of the same 2 cores a request (Stop 37: stats 1,211 requests/s at p99 45 ms with them, 2,000-4,200 at
 * p99 16-19 ms with wrk against the same server). One run: {@code connections} connections for a duration, each
 * sending the next request when the last one is answered, round-robin over {@code paths}; a Lua script prints the
 * latency percentiles (wrk's histogram, microseconds, from the request's write to its response's last byte) and
 * the responses counted by status as one JSON line.
 *
 * <p>wrk (since 4.0) corrects its histogram for coordinated omission before the script sees it: a response slower
 * than twice the mean interval between a connection's requests adds the samples a client sending at that constant
 * rate would have waited for meanwhile (at 4,400 requests/s over 16 connections, one per 3.6 ms of the slow
 * response). So a stall weighs more in these percentiles than in a closed loop's raw samples: 30 requests of 30-276 ms
 * among 45,000 barely move a raw p99, and can set this one. The script cannot read the raw histogram.
 */
final class Wrk {
    /** Two threads for two cores: wrk's own load stays a small part of one. */
    static final int THREADS = 2;

    /**
     * One run. {@code statuses}: responses by HTTP status. A request written but not answered when the duration
     * ended is in neither: for a POST, up to {@code connections} of them may have been accepted unseen.
     */
    record Result(long requests, double seconds, double p50Ms, double p99Ms, double maxMs, Map<Integer, Long> statuses,
                  long socketErrors) {
        double rps() {
            return requests / seconds;
        }

        long count(int status) {
            return statuses.getOrDefault(status, 0L);
        }
    }

    private Wrk() {}

    /** The wrk binary on PATH, if there is one. */
    static Optional<Path> binary() {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            Path p = Path.of(dir.isEmpty() ? "." : dir, "wrk");
            if (Files.isExecutable(p)) return Optional.of(p);
        }
        return Optional.empty();
    }

    /**
     * Runs wrk against {@code base} + each of {@code paths} in turn for {@code seconds}. Throws if wrk fails, a
     * socket error happens or any response has another status than {@code expect}.
     */
    static Result run(Path wrk, String base, List<String> paths, String method, String token, String body,
                      int connections, int seconds, int expect) throws IOException, InterruptedException {
        Path script = Files.createTempFile("fairq-bench-wrk", ".lua"), output = Files.createTempFile("fairq-bench-wrk", ".out");
        try {
            Files.writeString(script, script(paths, method, token, body), StandardCharsets.UTF_8);
            // to a file, so that a wrk that does not end cannot block the read; a 10 s timeout (any timeout fails the
            // run): wrk sizes its histogram by it, 60 s was a 480 MB array
            Process p = new ProcessBuilder(wrk.toString(), "-t" + THREADS, "-c" + connections, "-d" + seconds + "s",
                    "--timeout", "10s", "-s", script.toString(), base).redirectErrorStream(true).redirectOutput(output.toFile()).start();
            if (!p.waitFor(seconds + 120L, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException("wrk did not end: " + Files.readString(output));
            }
            String out = Files.readString(output);
            Result r = parse(out);
            if (p.exitValue() != 0 || r == null) throw new IllegalStateException("wrk failed (exit " + p.exitValue() + "): " + out);
            if (r.socketErrors() > 0 || r.statuses().keySet().stream().anyMatch(s -> s != expect)) {
                throw new IllegalStateException(method + " " + paths + ": expected only " + expect + ", wrk saw " + r.statuses()
                        + " and " + r.socketErrors() + " socket errors");
            }
            return r;
        } finally {
            Files.deleteIfExists(script);
            Files.deleteIfExists(output);
        }
    }

    static Result parse(String out) throws IOException {
        for (String line : out.split("\n")) {
            if (!line.startsWith("WRK_JSON ")) continue;
            JsonNode j = Json.MAPPER.readTree(line.substring("WRK_JSON ".length()));
            Map<Integer, Long> statuses = new LinkedHashMap<>();
            j.get("status").fields().forEachRemaining(e -> statuses.put(Integer.parseInt(e.getKey()), e.getValue().asLong()));
            long socket = 0;
            for (String k : List.of("connect", "read", "write", "timeout")) socket += j.get("errors").get(k).asLong();
            return new Result(j.get("requests").asLong(), j.get("duration_us").asDouble() / 1e6, j.get("p50_us").asDouble() / 1e3,
                    j.get("p99_us").asDouble() / 1e3, j.get("max_us").asDouble() / 1e3, statuses, socket);
        }
        return null;
    }

    /**
     * The Lua script: request method, headers and body; round-robin paths; responses counted per status in each
     * wrk thread and summed in {@code done}. Values go in Lua long brackets, which need no escaping (a body with
     * "]==]" in it is refused).
     */
    static String script(List<String> paths, String method, String token, String body) {
        List<String> quoted = new ArrayList<>();
        for (String path : paths) quoted.add(longString(path));
        StringBuilder s = new StringBuilder();
        s.append("local paths = {").append(String.join(", ", quoted)).append("}\n");
        s.append("wrk.method = ").append(longString(method)).append("\n");
        if (token != null) s.append("wrk.headers[\"Authorization\"] = ").append(longString("Bearer " + token)).append("\n");
        if (body != null && !body.isEmpty()) {
            s.append("wrk.headers[\"Content-Type\"] = \"application/json\"\n");
            s.append("wrk.body = ").append(longString(body)).append("\n");
        }
        s.append("""
                local n = 0
                local threads = {}
                function setup(thread) table.insert(threads, thread) end
                function init(args) counts = {} end
                function request()
                  n = n + 1
                  return wrk.format(nil, paths[(n % #paths) + 1])
                end
                function response(status, headers, body)
                  counts[status] = (counts[status] or 0) + 1
                end
                function done(summary, latency, requests)
                  local total = {}
                  for _, t in ipairs(threads) do
                    for k, v in pairs(t:get("counts")) do total[k] = (total[k] or 0) + v end
                  end
                  local s = {}
                  for k, v in pairs(total) do table.insert(s, string.format('"%d": %d', k, v)) end
                  local e = summary.errors
                  io.write(string.format('WRK_JSON {"requests": %d, "duration_us": %d, "p50_us": %.0f, "p99_us": %.0f, '
                    .. '"max_us": %.0f, "errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}, '
                    .. '"status": {%s}}\\n', summary.requests, summary.duration, latency:percentile(50),
                    latency:percentile(99), latency.max, e.connect, e.read, e.write, e.status, e.timeout, table.concat(s, ", ")))
                end
                """);
        return s.toString();
    }

    private static String longString(String v) {
        if (v.contains("]==]")) throw new IllegalArgumentException("cannot quote for Lua: " + v);
        return "[==[" + v + "]==]";
    }
}

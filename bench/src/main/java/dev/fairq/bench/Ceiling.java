package dev.fairq.bench;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.schema.Json;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The baseline: bench/pg-ceiling.sh (the bare SQL a queue needs, batched, through pgbench) on the same
 * server the benchmark uses, in the same run.
 */
final class Ceiling {
    /** The rows pg-ceiling.sh fills its table with: in {@code seconds} it can count at most this many. */
    static final long TABLE_ROWS = 1_500_000;

    private Ceiling() {}

    /**
     * Whether the script's table ran dry before its time was up: then its rate is the table over the time, a floor
     * of the ceiling (150,000 jobs/s in 10 s), and a ratio to it overstates the platform.
     */
    static boolean exhausted(long jobsPerSecond, int seconds) {
        return jobsPerSecond * seconds >= TABLE_ROWS;
    }

    /**
     * @param sessionOptions PGOPTIONS for pgbench's sessions ("" for the server defaults)
     * @return jobs per second, or -1 when pgbench is not available
     */
    static long jobsPerSecond(BenchDatabase db, int seconds, String sessionOptions) throws Exception {
        Path script = Path.of("bench", "pg-ceiling.sh");
        if (!Files.exists(script)) return -1;
        ProcessBuilder pb = new ProcessBuilder("bash", script.toString(), Integer.toString(seconds), "4");
        pb.environment().put("PGHOST", db.host);
        pb.environment().put("PGPORT", Integer.toString(db.port));
        pb.environment().put("PGUSER", db.user);
        if (db.password != null) pb.environment().put("PGPASSWORD", db.password);
        if (!sessionOptions.isEmpty()) pb.environment().put("PGOPTIONS", sessionOptions);
        pb.redirectErrorStream(true);
        Process p = pb.start();
        String last = null;
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream()))) {
            for (String line; (line = r.readLine()) != null; ) last = line;
        }
        p.waitFor();
        if (last == null || !last.startsWith("{")) return -1;
        JsonNode n = Json.MAPPER.readTree(last);
        return n.has("jobs_per_s") ? n.get("jobs_per_s").asLong() : -1;
    }
}

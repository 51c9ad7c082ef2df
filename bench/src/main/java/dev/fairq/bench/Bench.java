package dev.fairq.bench;

import dev.fairq.schema.Json;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

/** {@code ./bench/run NAME}: runs one benchmark and prints its result as one JSON line, last. */
public final class Bench {
    /** One benchmark: returns its figures (printed as JSON with the common fields). */
    public interface Benchmark {
        Map<String, Object> run(BenchDatabase db) throws Exception;
    }

    private static final Map<String, Benchmark> BENCHMARKS = new TreeMap<>(Map.ofEntries(
            Map.entry("throughput", new ThroughputBench()),
            Map.entry("latency", new LatencyBench()),
            Map.entry("fairness", new FairnessBench()),
            Map.entry("starvation", new StarvationBench()),
            Map.entry("ordering", new OrderingBench()),
            Map.entry("crash", new CrashBench()),
            Map.entry("longtx", new LongTxBench()),
            Map.entry("tenants", new TenantsBench()),
            Map.entry("schedules", new SchedulesBench()),
            Map.entry("costfair", new KeysBench.CostFair()),
            Map.entry("subkeys", new KeysBench.SubKeys()),
            Map.entry("concurrency_keys", new KeysBench.ConcurrencyKeys())));

    private Bench() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 1 || !BENCHMARKS.containsKey(args[0])) {
            if (args.length == 1) System.err.println("./bench/run: no benchmark named '" + args[0] + "'");
            System.err.println("usage: ./bench/run NAME   (NAME: " + String.join(", ", BENCHMARKS.keySet()) + ")");
            System.exit(2);
        }
        String name = args[0];
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("bench", name);
        try (BenchDatabase db = BenchDatabase.open()) {
            out.put("database", db.description());
            out.put("started_at", java.time.Instant.now().toString());
            out.putAll(BENCHMARKS.get(name).run(db));
        }
        out.put("machine", Machine.describe());
        System.out.println(Json.MAPPER.writeValueAsString(out));
        System.exit(0);
    }
}

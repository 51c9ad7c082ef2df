package dev.fairq.bench;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Keeps the benchmarks from rotting: a small ordering run (500 flaky jobs over 20 keys, a real worker child
 * process, the recording handler, the inversion and overlap checks) on an embedded PostgreSQL, a few seconds.
 */
class BenchSmokeTest {
    @Test
    void smallOrderingRunHasNoInversionsOrOverlaps() throws Exception {
        Map<String, Object> out;
        try (BenchDatabase db = BenchDatabase.open()) {
            out = new OrderingBench(500, 20).run(db);
        }
        assertEquals(0L, out.get("inversions"));
        assertEquals(0L, out.get("overlaps"));
        assertTrue(((Number) out.get("throughput_jobs_per_s")).longValue() > 0);
    }

    @Test
    void percentilesAreNearestRank() {
        List<Double> v = List.of(5.0, 1.0, 4.0, 2.0, 3.0);
        assertEquals(3.0, Stats.percentile(v, 50));
        assertEquals(5.0, Stats.percentile(v, 99));
        assertEquals(1.0, Stats.percentile(v, 1));
    }
}

package dev.fairq.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Percentiles (nearest rank) of a sample, in milliseconds, rounded to 0.1 ms. */
final class Stats {
    private Stats() {}

    static double percentile(List<Double> values, double p) {
        if (values.isEmpty()) throw new IllegalStateException("no samples");
        List<Double> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        int rank = (int) Math.ceil(p / 100.0 * sorted.size());
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, rank - 1)));
    }

    static double round(double v) {
        return Math.round(v * 10) / 10.0;
    }

    static double ratio(double a, double b) {
        return b == 0 ? Double.NaN : Math.round(a / b * 1000) / 1000.0;
    }

    /** p50, p99 and max of the sample, with the given key prefix ("" or "b_alone_" ...). */
    static Map<String, Object> summary(String prefix, List<Double> ms) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put(prefix + "p50_ms", round(percentile(ms, 50)));
        m.put(prefix + "p99_ms", round(percentile(ms, 99)));
        m.put(prefix + "max_ms", round(Collections.max(ms)));
        return m;
    }
}

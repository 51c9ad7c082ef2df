package dev.fairq.bench;

import java.util.LinkedHashMap;
import java.util.Map;

/** What the figures were measured on. */
final class Machine {
    private Machine() {}

    static Map<String, Object> describe() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("cores", Runtime.getRuntime().availableProcessors());
        m.put("java", System.getProperty("java.version"));
        m.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version"));
        try {
            m.put("load_average_1m", java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
        } catch (RuntimeException ignored) {
            // not every platform reports it
        }
        return m;
    }
}

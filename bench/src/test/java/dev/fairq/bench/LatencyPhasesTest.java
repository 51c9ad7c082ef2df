package dev.fairq.bench;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** FAIRQ_BENCH_PHASES for the latency bench: a misspelt phase fails, it does not run nothing and print a JSON line. */
class LatencyPhasesTest {
    @Test
    void theTwoPhasesAreNamedExactly() {
        assertEquals(List.of("http", "client"), LatencyBench.phases("http,client"));
        assertEquals(List.of("client"), LatencyBench.phases(" client "));
        assertThrows(IllegalArgumentException.class, () -> LatencyBench.phases("clinet"));
        assertThrows(IllegalArgumentException.class, () -> LatencyBench.phases("http,clients"));
        assertThrows(IllegalArgumentException.class, () -> LatencyBench.phases(","));
    }
}

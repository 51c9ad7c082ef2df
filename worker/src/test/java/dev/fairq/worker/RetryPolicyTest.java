package dev.fairq.worker;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RetryPolicyTest {
    private final RetryPolicy policy = RetryPolicy.DEFAULT;

    @Test
    void ceilingDoublesFromOneSecondUpToAnHour() {
        assertEquals(1_000, policy.ceilingMillis(1));
        assertEquals(2_000, policy.ceilingMillis(2));
        assertEquals(16_000, policy.ceilingMillis(5));
        assertEquals(2_048_000, policy.ceilingMillis(12));
        assertEquals(3_600_000, policy.ceilingMillis(13));
        assertEquals(3_600_000, policy.ceilingMillis(1000));
    }

    @Test
    void jitterStaysWithinTheLowerHalfAndTheCeiling() {
        for (int attempt = 1; attempt <= 20; attempt++) {
            long ceiling = policy.ceilingMillis(attempt);
            assertEquals(ceiling, policy.delayMillis(attempt, () -> 0.0), "random 0 gives the ceiling");
            long lowest = policy.delayMillis(attempt, () -> Math.nextDown(1.0));
            assertTrue(lowest >= ceiling / 2 && lowest <= ceiling / 2 + 1, "random ~1 gives half: " + lowest);
            long mid = policy.delayMillis(attempt, () -> 0.5);
            assertEquals(ceiling - ceiling / 4, mid, 1);
        }
    }

    @Test
    void noJitterMeansExactlyTheCeiling() {
        RetryPolicy exact = new RetryPolicy(Duration.ofMillis(100), 3.0, Duration.ofSeconds(10), 0.0);
        assertEquals(100, exact.delayMillis(1, () -> 0.7));
        assertEquals(300, exact.delayMillis(2, () -> 0.7));
        assertEquals(900, exact.delayMillis(3, () -> 0.7));
        assertEquals(10_000, exact.delayMillis(10, () -> 0.7));
    }

    @Test
    void rejectsNonsense() {
        assertThrows(IllegalArgumentException.class, () -> new RetryPolicy(Duration.ZERO, 2, Duration.ofSeconds(1), 0.5));
        assertThrows(IllegalArgumentException.class, () -> new RetryPolicy(Duration.ofSeconds(1), 0.5, Duration.ofSeconds(2), 0.5));
        assertThrows(IllegalArgumentException.class, () -> new RetryPolicy(Duration.ofSeconds(1), 2, Duration.ofSeconds(2), 1.5));
    }
}

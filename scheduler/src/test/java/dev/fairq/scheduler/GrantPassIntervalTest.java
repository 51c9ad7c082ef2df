package dev.fairq.scheduler;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The grant pass walks every cached tenant: its interval grows with the cache, so its cost per second does not. */
class GrantPassIntervalTest {
    @Test
    void everyTickUpToAThousandTenantsThenTwentyMillisecondsPerThousandUpToHalfASecond() {
        assertEquals(0, Scheduler.grantPassIntervalNanos(0));
        assertEquals(0, Scheduler.grantPassIntervalNanos(1_000));
        assertEquals(20_000_000L, Scheduler.grantPassIntervalNanos(1_001));
        assertEquals(20_000_000L, Scheduler.grantPassIntervalNanos(1_999));
        assertEquals(200_000_000L, Scheduler.grantPassIntervalNanos(10_000));
        assertEquals(500_000_000L, Scheduler.grantPassIntervalNanos(25_000));
        assertEquals(500_000_000L, Scheduler.grantPassIntervalNanos(1_000_000));
    }
}

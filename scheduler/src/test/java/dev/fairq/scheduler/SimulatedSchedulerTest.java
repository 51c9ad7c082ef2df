package dev.fairq.scheduler;

import dev.fairq.testing.TestDatabase;
import org.junit.jupiter.api.BeforeEach;

import java.time.Duration;

/**
 * What the admission tests on a {@link SimulatedScheduler} share: the test database, emptied before each test,
 * and the lease and tenant reload they claim and move the clock by.
 */
abstract class SimulatedSchedulerTest {
    /** Longer than these tests ever move the clock (60 s at most): no lease runs out unless a test means it to. */
    static final Duration LEASE = Duration.ofMinutes(5);
    /** Moving the clock by this much makes the scheduler re-read changed tenant limits. */
    static final Duration RELOAD = SchedulerConfig.defaults().tenantReload();

    final TestDatabase db = TestDatabase.get();

    @BeforeEach
    void resetDatabase() {
        db.reset();
    }
}

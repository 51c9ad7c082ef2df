package dev.fairq.worker;

import dev.fairq.testing.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * A clean database with the test's tenants and a {@link TestPlatform} on it for every test, closed after it. A
 * test class's own {@code @AfterEach} (stopping a child process, releasing a stuck handler) runs before the
 * platform closes (JUnit runs a subclass's after-each methods first).
 */
abstract class PlatformTest {
    final TestDatabase db = TestDatabase.get();
    TestPlatform platform;

    /** What each test starts with after the reset: tenant acme, limits out of the way (a test may add tables). */
    void prepareDatabase() {
        db.createTenant("acme");
    }

    TestPlatform newPlatform() {
        return new TestPlatform(db);
    }

    @BeforeEach
    final void startPlatform() {
        db.reset();
        prepareDatabase();
        platform = newPlatform();
    }

    @AfterEach
    final void closePlatform() throws Exception {
        platform.close();
    }
}

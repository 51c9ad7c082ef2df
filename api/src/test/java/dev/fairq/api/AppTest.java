package dev.fairq.api;

import org.junit.jupiter.api.BeforeAll;

/**
 * A test against the one running application of this test JVM ({@link TestApp#get()}: started by the first
 * test that asks, shared by the rest). A subclass's own {@code @BeforeAll} runs after this one, with
 * {@code app} set.
 */
abstract class AppTest {
    static TestApp app;

    @BeforeAll
    static void startApp() throws Exception {
        app = TestApp.get();
    }
}

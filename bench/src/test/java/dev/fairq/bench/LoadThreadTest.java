package dev.fairq.bench;

import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A load thread that dies fails the run at its join, instead of leaving "loaded" figures measured without load. */
class LoadThreadTest {
    @Test
    void aLoadThatThrowsFailsItsJoin() {
        LoadThread load = new LoadThread("bench-producer", () -> {
            throw new IllegalStateException("enqueue failed: connection refused");
        }).start();
        IllegalStateException e = assertThrows(IllegalStateException.class, load::join);
        assertTrue(e.getMessage().contains("bench-producer"), e.getMessage());
        assertEquals("enqueue failed: connection refused", e.getCause().getMessage());
    }

    @Test
    void aLoadThatEndsNormallyJoinsQuietly() throws Exception {
        AtomicInteger ran = new AtomicInteger();
        new LoadThread("bench-producer", ran::incrementAndGet).start().join();
        assertEquals(1, ran.get());
    }
}

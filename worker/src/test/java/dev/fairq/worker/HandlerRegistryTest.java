package dev.fairq.worker;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** An embedder's mistake at registration is named there, not met later as a bare NullPointerException or a type never claimed. */
class HandlerRegistryTest {

    @Test
    void aTypeNoJobCanHaveOrAMissingHandlerIsRefusedWithItsName() {
        HandlerRegistry registry = new HandlerRegistry();
        assertEquals("a handler's type must be 1-100 letters, digits, '_', '.', ':' or '-', not null",
                assertThrows(IllegalArgumentException.class, () -> registry.register(null, job -> {})).getMessage());
        assertEquals("a handler's type must be 1-100 letters, digits, '_', '.', ':' or '-', not 'send email'",
                assertThrows(IllegalArgumentException.class, () -> registry.register("send email", job -> {})).getMessage());
        assertEquals("the handler for type 'email' is null",
                assertThrows(IllegalArgumentException.class, () -> registry.register("email", null)).getMessage());
        assertEquals("the retry policy for type 'email' is null",
                assertThrows(IllegalArgumentException.class, () -> registry.register("email", job -> {}, (RetryPolicy) null)).getMessage());
        assertEquals(java.util.Set.of(), registry.types(), "nothing refused was registered");
        registry.register("email", job -> {});
        assertEquals(java.util.Set.of("email"), registry.types());
    }
}

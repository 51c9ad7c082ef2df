package dev.fairq.worker.handlers;

import dev.fairq.worker.HandlerRegistry;
import dev.fairq.worker.JobContext;
import dev.fairq.worker.PermanentJobException;
import org.junit.jupiter.api.Test;

import java.time.OffsetDateTime;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DemoHandlersTest {
    private final HandlerRegistry registry = DemoHandlers.register(new HandlerRegistry());

    static JobContext job(String type, String payload) {
        return new JobContext(7, "acme", "default", type, payload, 1, 25, null, null, OffsetDateTime.now(), "w1");
    }

    private void run(String type, String payload) throws Exception {
        registry.find(type).orElseThrow().handler().handle(job(type, payload));
    }

    @Test
    void registersNoopAndSleep() {
        assertEquals(Set.of("noop", "sleep"), registry.types());
        assertDoesNotThrow(() -> run("noop", "{}"));
        assertDoesNotThrow(() -> run("sleep", "{\"ms\": 0}"));
    }

    @Test
    void sleepRejectsABadPayloadNamingTheField() {
        for (String payload : new String[]{"{}", "{\"ms\": null}", "{\"ms\": \"5\"}", "{\"ms\": 1.5}", "{\"ms\": -1}",
                "{\"ms\": 600001}", "{\"ms\": 99999999999999999999}"}) {
            PermanentJobException e = assertThrows(PermanentJobException.class, () -> run("sleep", payload), payload);
            assertTrue(e.getMessage().startsWith("ms:"), payload + " -> " + e.getMessage());
        }
        assertThrows(PermanentJobException.class, () -> run("sleep", "not json"));
    }

    @Test
    void sleepAcceptsTheBounds() throws Exception {
        assertEquals(0, DemoHandlers.sleepMillis(job("sleep", "{\"ms\": 0}")));
        assertEquals(600_000, DemoHandlers.sleepMillis(job("sleep", "{\"ms\": 600000}")));
    }
}

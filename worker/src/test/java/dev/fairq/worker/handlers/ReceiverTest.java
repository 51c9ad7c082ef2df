package dev.fairq.worker.handlers;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * The http handler against a local {@link Receiver} on 127.0.0.1, without a database: a fresh receiver for each
 * test, and every handler the test made closed after it. A subclass's own {@code @AfterEach} runs first.
 */
abstract class ReceiverTest {
    Receiver receiver;
    private final List<HttpJobHandler> handlers = new ArrayList<>();

    @BeforeEach
    void startReceiver() throws Exception {
        receiver = new Receiver();
    }

    @AfterEach
    void closeHandlersAndReceiver() {
        handlers.forEach(HttpJobHandler::close);
        receiver.close();
    }

    /** A handler with this allow list (for every tenant), DNS and clock, closed after the test. */
    HttpJobHandler handler(List<String> allow, HttpJobHandler.Resolver resolver, Supplier<Instant> clock) {
        HttpJobHandler h = new HttpJobHandler(t -> allow, resolver, clock);
        handlers.add(h);
        return h;
    }
}

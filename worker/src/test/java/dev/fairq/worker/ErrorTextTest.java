package dev.fairq.worker;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * last_error's text: a handler's own verdict is its message (as the READMEs show it: "unknown payload_version 3 for
 * type ...", "HTTP 403 from POST ..."); any other exception, and every cause, keeps its class, which is the news.
 */
class ErrorTextTest {

    @Test
    void aVerdictIsItsMessageAnythingElseKeepsItsClass() {
        assertEquals("unknown payload_version 3 for type 'send-email'",
                Worker.errorText(new PermanentJobException("unknown payload_version 3 for type 'send-email'")));
        assertEquals("upstream busy", Worker.errorText(new RetryableJobException("upstream busy", Duration.ofSeconds(5))));
        assertEquals("HTTP 502 from POST https://hooks.example/x <- caused by java.io.IOException: reset",
                Worker.errorText(new PermanentJobException("HTTP 502 from POST https://hooks.example/x", new IOException("reset"))));
        assertEquals("java.lang.IllegalStateException: boom", Worker.errorText(new IllegalStateException("boom")));
        assertEquals("java.lang.NullPointerException", Worker.errorText(new NullPointerException()));
        assertEquals("dev.fairq.worker.PermanentJobException", Worker.errorText(new PermanentJobException(null)),
                "a verdict without a message says at least which one");
    }
}

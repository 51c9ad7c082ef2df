package dev.fairq.worker.handlers;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.worker.HandlerRegistry;
import dev.fairq.worker.JobContext;
import dev.fairq.worker.PermanentJobException;

/**
 * Two handlers for demos, load tests and smoke checks: {@code noop} succeeds at once; {@code sleep} (payload
 * {@code {"ms": n}}, {@code 0 <= n <= 600000}) sleeps that long and then succeeds.
 */
public final class DemoHandlers {
    public static final long MAX_SLEEP_MS = 600_000;

    private DemoHandlers() {}

    public static HandlerRegistry register(HandlerRegistry registry) {
        registry.register("noop", job -> {});
        registry.register("sleep", job -> Thread.sleep(sleepMillis(job)));
        return registry;
    }

    static long sleepMillis(JobContext job) throws PermanentJobException {
        JsonNode payload;
        try {
            payload = job.payload();
        } catch (RuntimeException e) {
            throw new PermanentJobException("payload: not valid JSON");
        }
        JsonNode ms = payload.path("ms");
        if (ms.isMissingNode() || ms.isNull()) throw new PermanentJobException("ms: required (milliseconds to sleep)");
        if (!ms.isIntegralNumber() || !ms.canConvertToLong()) {
            throw new PermanentJobException("ms: must be an integer, got " + ms);
        }
        long n = ms.asLong();
        if (n < 0 || n > MAX_SLEEP_MS) {
            throw new PermanentJobException("ms: must be between 0 and " + MAX_SLEEP_MS + ", got " + n);
        }
        return n;
    }
}

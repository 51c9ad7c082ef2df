package dev.fairq.worker;

import dev.fairq.schema.JobRequest;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Job type -> handler, its retry policy and its time limit. The handler SPI: register what this process can
 * run.
 */
public final class HandlerRegistry {
    /**
     * @param timeout the time limit of an attempt of this type when the job sets none ({@code timeout_ms});
     *                null means the worker's default ({@link WorkerConfig#defaultTimeout()})
     */
    public record Registration(JobHandler handler, RetryPolicy retryPolicy, Duration timeout) {
        public Registration {
            if (timeout != null && (timeout.compareTo(JobRequest.MIN_TIMEOUT) < 0 || timeout.compareTo(JobRequest.MAX_TIMEOUT) > 0)) {
                throw new IllegalArgumentException("a type's time limit must be between " + JobRequest.MIN_TIMEOUT
                        + " and " + JobRequest.MAX_TIMEOUT + ", not " + timeout);
            }
        }
    }

    private final Map<String, Registration> byType = new ConcurrentHashMap<>();

    public HandlerRegistry register(String type, JobHandler handler) {
        return register(type, handler, RetryPolicy.DEFAULT, null);
    }

    public HandlerRegistry register(String type, JobHandler handler, RetryPolicy retryPolicy) {
        return register(type, handler, retryPolicy, null);
    }

    /** A type whose attempts get {@code timeout} unless the job sets its own {@code timeout_ms}. */
    public HandlerRegistry register(String type, JobHandler handler, Duration timeout) {
        return register(type, handler, RetryPolicy.DEFAULT, timeout);
    }

    public HandlerRegistry register(String type, JobHandler handler, RetryPolicy retryPolicy, Duration timeout) {
        if (byType.putIfAbsent(type, new Registration(handler, retryPolicy, timeout)) != null) {
            throw new IllegalArgumentException("a handler for type '" + type + "' is already registered");
        }
        return this;
    }

    public Optional<Registration> find(String type) {
        return Optional.ofNullable(byType.get(type));
    }

    public Set<String> types() {
        return Set.copyOf(byType.keySet());
    }
}

package dev.fairq.worker;

import dev.fairq.schema.JobRequest;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Job type -> handler, its retry policy, its time limit and the payload versions it reads. The handler SPI:
 * register what this process can run, before the worker starts (the worker registers these types as its
 * route, and claims only jobs of them).
 */
public final class HandlerRegistry {
    /**
     * @param timeout  the time limit of an attempt of this type when the job sets none ({@code timeout_ms});
     *                 null means the worker's default ({@link WorkerConfig#defaultTimeout()})
     * @param versions the payload versions the handler reads and the upcasters of older ones
     */
    public record Registration(JobHandler handler, RetryPolicy retryPolicy, Duration timeout, PayloadVersions versions) {
        public Registration(JobHandler handler, RetryPolicy retryPolicy, Duration timeout) {
            this(handler, retryPolicy, timeout, PayloadVersions.V1);
        }

        public Registration {
            if (versions == null) versions = PayloadVersions.V1;
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
        return register(type, handler, retryPolicy, timeout, PayloadVersions.V1);
    }

    /** A type whose handler reads the given payload versions (and upcasts older ones: {@link PayloadVersions}). */
    public HandlerRegistry register(String type, JobHandler handler, PayloadVersions versions) {
        return register(type, handler, RetryPolicy.DEFAULT, null, versions);
    }

    public HandlerRegistry register(String type, JobHandler handler, RetryPolicy retryPolicy, Duration timeout,
                                    PayloadVersions versions) {
        // the worker registers these types as its route: one no job can have would never be claimed
        if (type == null || !type.matches(JobRequest.NAME_REGEX)) {
            throw new IllegalArgumentException("a handler's type " + JobRequest.NAME_RULE + ", not " + (type == null ? "null" : "'" + type + "'"));
        }
        if (handler == null) throw new IllegalArgumentException("the handler for type '" + type + "' is null");
        if (retryPolicy == null) throw new IllegalArgumentException("the retry policy for type '" + type + "' is null");
        if (byType.putIfAbsent(type, new Registration(handler, retryPolicy, timeout, versions)) != null) {
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

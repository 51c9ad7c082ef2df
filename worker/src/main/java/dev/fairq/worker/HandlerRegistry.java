package dev.fairq.worker;

import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/** Job type -> handler and its retry policy. The handler SPI: register what this process can run. */
public final class HandlerRegistry {
    public record Registration(JobHandler handler, RetryPolicy retryPolicy) {}

    private final Map<String, Registration> byType = new ConcurrentHashMap<>();

    public HandlerRegistry register(String type, JobHandler handler) {
        return register(type, handler, RetryPolicy.DEFAULT);
    }

    public HandlerRegistry register(String type, JobHandler handler, RetryPolicy retryPolicy) {
        if (byType.putIfAbsent(type, new Registration(handler, retryPolicy)) != null) {
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

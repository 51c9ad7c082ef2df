package dev.fairq.api;

import dev.fairq.worker.HandlerRegistry;

/**
 * THE place where the built-in job types are registered for every process that runs a worker
 * ({@code server} and {@code worker}): the {@code http} webhook handler always, and {@code noop} and
 * {@code sleep} when {@code FAIRQ_DEMO_HANDLERS=true} ({@link FairqConfiguration#demoHandlers}).
 * The handlers themselves live in the worker module (package dev.fairq.worker.handlers).
 */
public final class BuiltInHandlers {
    private BuiltInHandlers() {}

    public static void register(HandlerRegistry registry, FairqConfiguration config) {
        // The built-in handlers (http; noop and sleep when config.demoHandlers) are registered here once
        // dev.fairq.worker.handlers is merged. Nothing is registered yet.
    }
}

package dev.fairq.api;

import dev.fairq.worker.HandlerRegistry;
import dev.fairq.worker.handlers.DemoHandlers;
import dev.fairq.worker.handlers.HttpJobHandler;
import org.jooq.DSLContext;

/**
 * THE place where the built-in job types are registered for every process that runs a worker
 * ({@code server} and {@code worker}): the {@code http} webhook handler always, and {@code noop} and
 * {@code sleep} when {@code FAIRQ_DEMO_HANDLERS=true}, or left out with the embedded database ({@link FairqConfiguration#demoHandlersOn}).
 * The handlers themselves live in the worker module (package dev.fairq.worker.handlers).
 */
public final class BuiltInHandlers {
    private BuiltInHandlers() {}

    /**
     * What is wrong with a schedule template's payload for its built-in type (ScheduleService's templateCheck), as
     * the API checks a schedule and tenants.yml's: the http type's payload rules; other types are not checked.
     */
    public static java.util.Optional<dev.fairq.schema.FieldError> templateError(String type, String payloadJson) {
        return HttpJobHandler.TYPE.equals(type) ? HttpJobHandler.payloadError(payloadJson) : java.util.Optional.empty();
    }

    /** @param db where the http handler reads each tenant's webhook allow-list (cached for a second) */
    public static void register(HandlerRegistry registry, FairqConfiguration config, DSLContext db) {
        registry.register(HttpJobHandler.TYPE, HttpJobHandler.forDatabase(db), HttpJobHandler.TIME_LIMIT);
        if (config.demoHandlersOn()) DemoHandlers.register(registry);
    }
}

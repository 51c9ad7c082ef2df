package dev.fairq.scheduler;

import java.time.Duration;

/**
 * What the firer reports, for metrics (the API process implements it; a scheduler-only process reports to
 * nobody). Called after the firing transaction committed, once per fire; per-tenant at most, never per
 * schedule (a tenant may have thousands).
 */
public interface ScheduleObserver {
    /** A fire enqueued its job; {@code lag}: from the fire instant to the enqueue, zero when created ahead. */
    default void fired(String tenantId, Duration lag) {}

    /**
     * Fires that enqueued nothing, by reason: {@code missed} (no scheduler ran at the time and missed_runs said
     * skip), {@code overlap} (overlap: skip), {@code queue_full} (max_queued), {@code invalid}.
     */
    default void skipped(String tenantId, String reason, long fires) {}

    ScheduleObserver NONE = new ScheduleObserver() {};
}

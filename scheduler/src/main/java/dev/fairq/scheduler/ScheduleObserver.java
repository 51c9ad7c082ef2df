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

    /** Every reason {@link #skipped} reports, so that a counter by reason can start each at 0. */
    java.util.List<String> SKIP_REASONS = java.util.List.of("missed", "overlap", ScheduleFirer.QUEUE_FULL, ScheduleFirer.INVALID);

    ScheduleObserver NONE = new ScheduleObserver() {};
}

package dev.fairq.scheduler;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;

import java.time.Instant;
import java.util.List;

/**
 * A schedule as the API answers it (and {@link ScheduleService} returns it): the definition with its defaults,
 * the next five fire instants (UTC; empty when paused or past end_at), and the last fire that is due with its
 * job's id and status.
 *
 * @param nextFires five instants, the first of which may already have its job (created up to 30 s ahead:
 *                  {@code next_job_id})
 * @param lastFire  null before the first fire
 * @param fired     fires that enqueued a job, ever
 * @param skipped   fires that did not (missed, overlap, queue_full, invalid), ever
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
@JsonInclude(JsonInclude.Include.ALWAYS)
public record ScheduleInfo(String tenant, String name, String cron, String timeZone, ScheduleDefinition.JobTemplate job,
                           String missedRuns, int backfillLimit, String overlap, boolean paused, Instant startAt,
                           Instant endAt, List<Instant> nextFires, Long nextJobId, Fire lastFire, long fired,
                           long skipped, Instant createdAt, Instant updatedAt) {

    /**
     * One fire: its instant, what happened ({@code enqueued}, {@code skipped_overlap}, {@code queue_full},
     * {@code invalid}), its job and the job's status now (null when the job left the table after retention).
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    @JsonInclude(JsonInclude.Include.ALWAYS)
    public record Fire(Instant fireAt, String outcome, Long jobId, String jobStatus) {}
}

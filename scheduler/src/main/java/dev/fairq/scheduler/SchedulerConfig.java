package dev.fairq.scheduler;

import java.time.Duration;

/**
 * How the scheduler runs.
 *
 * @param fair             weighted fair queueing across tenants (false: plain FIFO, the benchmark baseline)
 * @param minBuffer        ready jobs kept beyond free worker threads, at the least
 * @param lookahead        plus what the workers consume in this long (measured), so fast jobs never wait
 *                         for the next tick while a newcomer still waits behind one buffer at most
 * @param maxBatch         most jobs one admission statement moves
 * @param fixedCapacity    worker threads to assume; 0 reads the live workers from the registry
 * @param busyInterval     next tick when the last one had work to do
 * @param idleInterval     next tick when idle, unless an enqueue notification comes first (due scheduled
 *                         jobs and retries are noticed within this)
 * @param standbyPoll      how often a standby tries to become the active scheduler
 * @param tenantReload     how often limits are re-read from the tenants table (live reconfiguration)
 * @param workerLiveness   a worker whose heartbeat is older does not count as capacity
 * @param maintenanceEvery how often the active scheduler deletes finished jobs past retention
 * @param retention        finished (succeeded, cancelled) jobs are kept this long (it is also how long a
 *                         job_key keeps deduplicating after its job finished)
 * @param deadRetention    dead jobs (the dead-letter queue) are kept this long
 * @param grants           admit one job in advance for each quiet, recently active tenant (admission_grants),
 *                         so that its next job starts without a scheduler round trip
 */
public record SchedulerConfig(boolean fair, int minBuffer, Duration lookahead, int maxBatch, int fixedCapacity,
                              Duration busyInterval, Duration idleInterval, Duration standbyPoll,
                              Duration tenantReload, Duration workerLiveness, Duration maintenanceEvery,
                              Duration retention, Duration deadRetention, boolean grants) {

    public static SchedulerConfig defaults() {
        return new SchedulerConfig(true, 8, Duration.ofMillis(100), 2000, 0, Duration.ofMillis(2),
                Duration.ofMillis(250), Duration.ofSeconds(1), Duration.ofMillis(500), Duration.ofSeconds(30),
                Duration.ofSeconds(30), Duration.ofDays(1), Duration.ofDays(7), true);
    }

    public SchedulerConfig withFair(boolean f) {
        return new SchedulerConfig(f, minBuffer, lookahead, maxBatch, fixedCapacity, busyInterval, idleInterval,
                standbyPoll, tenantReload, workerLiveness, maintenanceEvery, retention, deadRetention, grants);
    }

    /** A fixed buffer: exactly {@code capacity + minBuffer} ready at most, no measured lookahead (tests). */
    public SchedulerConfig withFixedBuffer(int capacity, int minBuffer) {
        return new SchedulerConfig(fair, minBuffer, Duration.ZERO, maxBatch, capacity, busyInterval, idleInterval,
                standbyPoll, tenantReload, workerLiveness, maintenanceEvery, retention, deadRetention, grants);
    }

    public SchedulerConfig withStandbyPoll(Duration d) {
        return new SchedulerConfig(fair, minBuffer, lookahead, maxBatch, fixedCapacity, busyInterval, idleInterval,
                d, tenantReload, workerLiveness, maintenanceEvery, retention, deadRetention, grants);
    }

    public SchedulerConfig withRetention(Duration finished, Duration dead) {
        return new SchedulerConfig(fair, minBuffer, lookahead, maxBatch, fixedCapacity, busyInterval, idleInterval,
                standbyPoll, tenantReload, workerLiveness, maintenanceEvery, finished, dead, grants);
    }

    public SchedulerConfig withGrants(boolean g) {
        return new SchedulerConfig(fair, minBuffer, lookahead, maxBatch, fixedCapacity, busyInterval, idleInterval,
                standbyPoll, tenantReload, workerLiveness, maintenanceEvery, retention, deadRetention, g);
    }
}

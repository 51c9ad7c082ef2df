package dev.fairq.scheduler;

import java.time.Duration;

/**
 * How the scheduler runs. Build with {@link #builder()}: every setting has a named default below, with the
 * reason for its value.
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
 * @param activeRescan     how often the tenants with work are re-read from the jobs table, a safety net
 *                         beside the wake-ups that keep the scheduler's active set current
 * @param maintenanceStatementTimeout  the most one background statement (retention, rollup, publishing)
 *                         may run; past it the duty gives up and tries again at its next run
 * @param maxGrants        most admission grants outstanding at once (at least the buffer's worth)
 * @param effectRetention  rows of the side-effect store ({@code JobContext.once}) not written for this long are
 *                         deleted (a re-run later than that would run the effect again)
 * @param fairShare        what weighted fair queueing shares: estimated worker time ({@link FairShare#TIME},
 *                         the default, for the builder and the deployment through FAIRQ_FAIR_SHARE) or job
 *                         starts ({@link FairShare#JOBS}, FAIRQ_FAIR_SHARE=jobs)
 */
public record SchedulerConfig(boolean fair, int minBuffer, Duration lookahead, int maxBatch, int fixedCapacity,
                              Duration busyInterval, Duration idleInterval, Duration standbyPoll,
                              Duration tenantReload, Duration workerLiveness, Duration maintenanceEvery,
                              Duration retention, Duration deadRetention, boolean grants, Duration activeRescan,
                              Duration maintenanceStatementTimeout, int maxGrants, Duration effectRetention,
                              FairShare fairShare) {

    /** What a tenant's share is a share of. */
    public enum FairShare {
        /** Job starts: a tenant of weight 2 starts two jobs for each of a tenant of weight 1. */
        JOBS,
        /** Worker time: a tenant of weight 2 gets twice the worker seconds, whatever its jobs' lengths. */
        TIME;

        /** {@code time} or {@code jobs} (FAIRQ_FAIR_SHARE). */
        public static FairShare parse(String s) {
            return switch (s.trim().toLowerCase(java.util.Locale.ROOT)) {
                case "time" -> TIME;
                case "jobs" -> JOBS;
                default -> throw new IllegalArgumentException("FAIRQ_FAIR_SHARE must be time or jobs, not '" + s + "'");
            };
        }
    }

    /**
     * One grant for each of up to this many quiet, recently active tenants. A grant is a row in
     * admission_grants and a line of each tick's LOAD, so this bounds what they cost. With a buffer's worth (8)
     * and 1,000 tenants each submitting every 10 s, the grants went to the tenants that had just submitted
     * (most recent first) and almost no job found one: their p99 under a flood was 2.1 times their p99 alone.
     */
    public static final int DEFAULT_MAX_GRANTS = 1_024;
    /** A few jobs beyond the free threads, so a worker finishing a job finds the next one already admitted. */
    public static final int DEFAULT_MIN_BUFFER = 8;
    /**
     * 100 ms of measured consumption: at a 25,000 jobs/s drain that is 2,500 jobs, enough that the workers
     * never wait for a tick, while a tenant that becomes active waits behind at most 100 ms of others' work.
     */
    public static final Duration DEFAULT_LOOKAHEAD = Duration.ofMillis(100);
    /** One admission statement moves at most this many jobs (a few ms of database time). */
    public static final int DEFAULT_MAX_BATCH = 2000;
    /** 2 ms between busy ticks: a tick takes about 0.5 ms, so the scheduler keeps up without spinning. */
    public static final Duration DEFAULT_BUSY_INTERVAL = Duration.ofMillis(2);
    /** When idle, scheduled jobs and retries that became due are noticed within 250 ms. */
    public static final Duration DEFAULT_IDLE_INTERVAL = Duration.ofMillis(250);
    /** A standby tries the lock every second: a failover takes a few seconds at most. */
    public static final Duration DEFAULT_STANDBY_POLL = Duration.ofSeconds(1);
    /** A limit changed through the admin API applies within half a second. */
    public static final Duration DEFAULT_TENANT_RELOAD = Duration.ofMillis(500);
    /** Three missed 10 s worker heartbeats: the worker's threads no longer count as capacity. */
    public static final Duration DEFAULT_WORKER_LIVENESS = Duration.ofSeconds(30);
    /** Retention runs twice a minute: finished jobs leave in small batches, never in one big delete. */
    public static final Duration DEFAULT_MAINTENANCE_EVERY = Duration.ofSeconds(30);
    /** A day of finished jobs: enough to look a job up, and job_key deduplicates for as long. */
    public static final Duration DEFAULT_RETENTION = Duration.ofDays(1);
    /** A week of dead jobs: the dead-letter queue waits for someone to act on it over a weekend. */
    public static final Duration DEFAULT_DEAD_RETENTION = Duration.ofDays(7);
    /**
     * A minute: wake-ups keep the active set current, so the re-read only covers what could slip past them
     * (nothing known); it costs one index probe per tenant with work (10,000 tenants: about 30 ms).
     */
    public static final Duration DEFAULT_ACTIVE_RESCAN = Duration.ofMinutes(1);
    /** A background statement normally takes milliseconds; 10 s means something holds it up. */
    public static final Duration DEFAULT_MAINTENANCE_STATEMENT_TIMEOUT = Duration.ofSeconds(10);

    /**
     * A week, the dead-job retention: a dead job replayed within it still finds the effects its attempts
     * completed, and no attempt of a live job comes later than that (25 attempts back off for about 12 hours).
     */
    public static final Duration DEFAULT_EFFECT_RETENTION = Duration.ofDays(7);

    public static SchedulerConfig defaults() {
        return builder().build();
    }

    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        Builder b = new Builder();
        b.fair = fair;
        b.minBuffer = minBuffer;
        b.lookahead = lookahead;
        b.maxBatch = maxBatch;
        b.fixedCapacity = fixedCapacity;
        b.busyInterval = busyInterval;
        b.idleInterval = idleInterval;
        b.standbyPoll = standbyPoll;
        b.tenantReload = tenantReload;
        b.workerLiveness = workerLiveness;
        b.maintenanceEvery = maintenanceEvery;
        b.retention = retention;
        b.deadRetention = deadRetention;
        b.grants = grants;
        b.activeRescan = activeRescan;
        b.maintenanceStatementTimeout = maintenanceStatementTimeout;
        b.maxGrants = maxGrants;
        b.effectRetention = effectRetention;
        b.fairShare = fairShare;
        return b;
    }

    public static final class Builder {
        private boolean fair = true;
        private int minBuffer = DEFAULT_MIN_BUFFER;
        private Duration lookahead = DEFAULT_LOOKAHEAD;
        private int maxBatch = DEFAULT_MAX_BATCH;
        private int fixedCapacity;
        private Duration busyInterval = DEFAULT_BUSY_INTERVAL;
        private Duration idleInterval = DEFAULT_IDLE_INTERVAL;
        private Duration standbyPoll = DEFAULT_STANDBY_POLL;
        private Duration tenantReload = DEFAULT_TENANT_RELOAD;
        private Duration workerLiveness = DEFAULT_WORKER_LIVENESS;
        private Duration maintenanceEvery = DEFAULT_MAINTENANCE_EVERY;
        private Duration retention = DEFAULT_RETENTION;
        private Duration deadRetention = DEFAULT_DEAD_RETENTION;
        private boolean grants = true;
        private Duration activeRescan = DEFAULT_ACTIVE_RESCAN;
        private Duration maintenanceStatementTimeout = DEFAULT_MAINTENANCE_STATEMENT_TIMEOUT;
        private int maxGrants = DEFAULT_MAX_GRANTS;
        private Duration effectRetention = DEFAULT_EFFECT_RETENTION;
        private FairShare fairShare = FairShare.TIME;

        private Builder() {}

        public Builder fair(boolean fair) { this.fair = fair; return this; }
        public Builder minBuffer(int n) { this.minBuffer = n; return this; }
        public Builder lookahead(Duration d) { this.lookahead = d; return this; }
        public Builder maxBatch(int n) { this.maxBatch = n; return this; }
        public Builder busyInterval(Duration d) { this.busyInterval = d; return this; }
        public Builder idleInterval(Duration d) { this.idleInterval = d; return this; }
        public Builder standbyPoll(Duration d) { this.standbyPoll = d; return this; }
        public Builder tenantReload(Duration d) { this.tenantReload = d; return this; }
        public Builder workerLiveness(Duration d) { this.workerLiveness = d; return this; }
        public Builder maintenanceEvery(Duration d) { this.maintenanceEvery = d; return this; }
        public Builder retention(Duration finished, Duration dead) { this.retention = finished; this.deadRetention = dead; return this; }
        public Builder grants(boolean on) { this.grants = on; return this; }
        public Builder activeRescan(Duration d) { this.activeRescan = d; return this; }
        public Builder maintenanceStatementTimeout(Duration d) { this.maintenanceStatementTimeout = d; return this; }
        public Builder maxGrants(int n) { this.maxGrants = n; return this; }
        public Builder effectRetention(Duration d) { this.effectRetention = d; return this; }
        public Builder fairShare(FairShare share) { this.fairShare = share; return this; }

        /** A fixed buffer: exactly {@code capacity + minBuffer} ready at most, no measured lookahead (tests). */
        public Builder fixedBuffer(int capacity, int minBuffer) {
            this.fixedCapacity = capacity;
            this.minBuffer = minBuffer;
            this.lookahead = Duration.ZERO;
            return this;
        }

        public SchedulerConfig build() {
            if (minBuffer < 0 || maxBatch < 1 || fixedCapacity < 0 || maxGrants < 0) {
                throw new IllegalArgumentException("minBuffer >= 0, maxBatch >= 1, fixedCapacity >= 0 and maxGrants >= 0");
            }
            return new SchedulerConfig(fair, minBuffer, lookahead, maxBatch, fixedCapacity, busyInterval, idleInterval,
                    standbyPoll, tenantReload, workerLiveness, maintenanceEvery, retention, deadRetention, grants,
                    activeRescan, maintenanceStatementTimeout, maxGrants, effectRetention, fairShare);
        }
    }
}

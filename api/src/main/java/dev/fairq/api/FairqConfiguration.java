package dev.fairq.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.dropwizard.core.Configuration;

/**
 * fairq's settings. Every field has a built-in default, so {@code server} runs with no file at all; the
 * {@code FAIRQ_*} environment variables override the defaults and the file ({@link EnvironmentOverrides}).
 */
public class FairqConfiguration extends Configuration {
    /** JDBC URL of the shared PostgreSQL; null starts the embedded one under {@link #dataDirectory}. */
    @JsonProperty public String databaseUrl;
    @JsonProperty public String databaseUser;
    @JsonProperty public String databasePassword;
    /** Where the embedded PostgreSQL keeps its data (it survives restarts). */
    @JsonProperty public String dataDirectory = ".fairq";
    /** The admin bearer token; required unless the database is the embedded default. */
    @JsonProperty public String adminToken;
    @JsonProperty public String tenantsFile = "./tenants.yml";
    /** True when the tenants file was named explicitly (then it must exist; the default may be missing). */
    @JsonProperty public boolean tenantsFileRequired;
    @JsonProperty public int workerThreads = 8;
    /**
     * What a tenant's weight shares (FAIRQ_FAIR_SHARE): {@code time}, estimated worker time (the deployment's
     * default: a tenant of 1 s jobs and one of 10 ms jobs get equal worker time), or {@code jobs}, job starts.
     */
    @JsonProperty public String fairShare = "time";
    /** A claim's lease (FAIRQ_LEASE_MS); see {@link dev.fairq.worker.WorkerConfig#lease()}. */
    @JsonProperty public long leaseMs = dev.fairq.worker.WorkerConfig.DEFAULT_LEASE.toMillis();
    /** How often leases are renewed (FAIRQ_HEARTBEAT_MS); null: a third of the lease. Under half the lease. */
    @JsonProperty public Long heartbeatMs;
    /** The whole stop's bound on SIGTERM (FAIRQ_SHUTDOWN_GRACE_MS); see WorkerConfig#shutdownGrace(). */
    @JsonProperty public long shutdownGraceMs = dev.fairq.worker.WorkerConfig.DEFAULT_SHUTDOWN_GRACE.toMillis();
    /** The time limit of a job whose type declares none (FAIRQ_JOB_TIMEOUT_MS). */
    @JsonProperty public long jobTimeoutMs = dev.fairq.worker.WorkerConfig.DEFAULT_TIMEOUT.toMillis();
    /** Finished (succeeded, cancelled) jobs are kept this long; it is also how long a job_key deduplicates. */
    @JsonProperty public int retentionHours = 24;
    /** Dead jobs (the dead-letter queue) are kept this long. */
    @JsonProperty public int deadRetentionHours = 24 * 7;
    @JsonProperty public boolean demoHandlers;
    /** Largest accepted job payload, serialized, in bytes (413 beyond it). */
    @JsonProperty public int maxPayloadBytes = 64 * 1024;
    /** Connections of the API's pool (the worker and scheduler have their own). */
    @JsonProperty public int apiPoolSize = 10;
    /**
     * Tenants with series of their own in /metrics (the others are summed as tenant="_other"): 100 keeps a
     * scrape near 700 KB whatever the number of tenants (about 7 KB of series per tenant).
     */
    @JsonProperty public int metricsTenants = 100;
    /** Run the scheduler (leader election) and a worker pool inside {@code server}. */
    @JsonProperty public boolean runScheduler = true;
    @JsonProperty public boolean runWorker = true;

    public boolean embeddedDatabase() {
        return databaseUrl == null || databaseUrl.isBlank();
    }
}

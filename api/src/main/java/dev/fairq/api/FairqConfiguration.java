package dev.fairq.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.dropwizard.core.Configuration;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;

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
    // the @Min/@Max below are the FAIRQ_* variables' ranges (EnvironmentOverrides), held for a config file too: check
    // had said OK to a file's apiPoolSize: 0, maxPayloadBytes: 0 or workerThreads: 5000
    @JsonProperty @Min(1) @Max(1000) public int workerThreads = 8;
    /**
     * What a tenant's weight shares (FAIRQ_FAIR_SHARE): {@code time}, estimated worker time (the default: a
     * tenant of 1 s jobs and one of 10 ms jobs get equal worker time), or {@code jobs}, job starts. Issue 14 made
     * {@code time} the default once its benchmark passed: costfair's shares, and its utilisation at 0.950-0.951 of
     * jobs mode on a quiet machine (0.86-0.90 on a slower one, bench/RESULTS.md); 10,000 busy tenants drain at 0.932
     * of 10 in time mode.
     */
    @JsonProperty public String fairShare = "time";
    /**
     * When a job submitted over the API may start (FAIRQ_SUBMIT_START): {@code commit} (the default), at the
     * enqueue's commit, which does not wait for the WAL flush, the answer waiting for it; or {@code flush}, only once
     * the commit is flushed, as an application's own enqueue. With {@code commit} a database crash in between can
     * lose a job that had already started (its submitter was not answered and submits it again, as a new job: a new
     * id, so a new JobContext#idempotencyKey); {@code flush} rules that out and pays for it when a bulk write fills
     * the WAL: the tenants bench's trickle under a flood (bench/RESULTS.md, stop 28; README, "Wake-ups").
     */
    @JsonProperty public String submitStart = "commit";

    /** {@link #submitStart} as a flag; any other value (from the YAML file too) stops start-up naming the setting. */
    public boolean submitStartsAtCommit() {
        String v = submitStart == null ? "" : submitStart.trim().toLowerCase(java.util.Locale.ROOT);
        if (v.equals("commit")) return true;
        if (v.equals("flush")) return false;
        throw new IllegalArgumentException("FAIRQ_SUBMIT_START (submitStart) must be commit or flush, not '" + submitStart + "'");
    }
    /** A claim's lease (FAIRQ_LEASE_MS); see {@link dev.fairq.worker.WorkerConfig#lease()}. */
    @JsonProperty @Min(1000) @Max(3600000) public long leaseMs = dev.fairq.worker.WorkerConfig.DEFAULT_LEASE.toMillis();
    /**
     * How often leases are renewed (FAIRQ_HEARTBEAT_MS); null: a third of the lease. Under half the lease, and in the
     * variable's range (check had said OK to a file's heartbeatMs: 5, a heartbeat every 5 ms).
     */
    @JsonProperty @Min(100) @Max(1800000) public Long heartbeatMs;
    /** The whole stop's bound on SIGTERM (FAIRQ_SHUTDOWN_GRACE_MS); see WorkerConfig#shutdownGrace(). */
    @JsonProperty @Min(0) @Max(3600000) public long shutdownGraceMs = dev.fairq.worker.WorkerConfig.DEFAULT_SHUTDOWN_GRACE.toMillis();
    /** The time limit of a job whose type declares none (FAIRQ_JOB_TIMEOUT_MS). */
    @JsonProperty @Min(1) @Max(86400000) public long jobTimeoutMs = dev.fairq.worker.WorkerConfig.DEFAULT_TIMEOUT.toMillis();
    /** Finished (succeeded, cancelled) jobs are kept this long; it is also how long a job_key deduplicates. */
    @JsonProperty @Min(1) @Max(87600) public int retentionHours = 24;
    /** Dead jobs (the dead-letter queue) are kept this long. */
    @JsonProperty @Min(1) @Max(87600) public int deadRetentionHours = 24 * 7;
    /**
     * The demo job types noop and sleep (FAIRQ_DEMO_HANDLERS); null: on with the embedded database (a trial on one
     * machine, where api/README's first walk submits a noop job: it had waited forever, no_worker), off with
     * FAIRQ_DATABASE_URL.
     */
    @JsonProperty public Boolean demoHandlers;

    public boolean demoHandlersOn() {
        return demoHandlers != null ? demoHandlers : embeddedDatabase();
    }
    /** The queues this process's worker serves (FAIRQ_WORKER_QUEUES, comma-separated); null: every queue. */
    @JsonProperty public java.util.Set<String> workerQueues;
    /** Worker threads kept for a queue's jobs (FAIRQ_WORKER_RESERVED, "urgent=2,emails=1"). */
    @JsonProperty public java.util.Map<String, Integer> workerReserved = java.util.Map.of();
    /** The most snoozes of one job (FAIRQ_MAX_SNOOZES); past it a snooze fails the attempt. */
    @JsonProperty @Min(0) @Max(1000000) public int maxSnoozes = dev.fairq.worker.WorkerConfig.DEFAULT_MAX_SNOOZES;
    /** Side-effect keys (JobContext.once) not written for this long are deleted (FAIRQ_EFFECT_RETENTION_HOURS). */
    @JsonProperty @Min(1) @Max(87600) public int effectRetentionHours = 24 * 7;
    /** Largest accepted job payload, serialized, in bytes (413 beyond it). */
    @JsonProperty @Min(1) @Max(16777216) public int maxPayloadBytes = 64 * 1024;
    /**
     * Connections of the API's pool (FAIRQ_API_POOL_SIZE; the worker and scheduler have their own). 20, not
     * HikariCP's usual "a few per core": with fewer connections than requests in flight, a request waits on
     * the pool's hand-off, which is not first come first served. 16 callers of GET /v1/dashboard (two
     * statements a request) on 2 cores: p99 15-27 ms with occasional 100-176 ms runs at 10 connections, 10-14 ms
     * at 20, same throughput (Stop 37, bench/RESULTS.md). Idle, the pool keeps 2 (Database.pool's minimum).
     */
    @JsonProperty @Min(1) @Max(1000) public int apiPoolSize = 20;
    /**
     * Tenants with series of their own in /metrics (the others are summed as tenant="_other"): 100 keeps a
     * scrape near 700 KB whatever the number of tenants (about 7 KB of series per tenant).
     */
    @JsonProperty @Min(0) @Max(10000) public int metricsTenants = 100;
    /**
     * The port on which a {@code worker} or {@code scheduler} process serves {@code /metrics} (its own counters)
     * and {@code /ping}, on FAIRQ_ADMIN_BIND's address; null (the default): none. Opt-in because those roles run
     * several to a host, where one default port would make all but the first fail to start.
     */
    @JsonProperty @Min(0) @Max(65535) public Integer metricsPort;
    /**
     * Dropwizard's admin tasks that change the running process ({@code POST /tasks/log-level}, {@code /tasks/gc})
     * and the CPU profiler ({@code /pprof}) on the admin port: off unless enabled (FAIRQ_ADMIN_TASKS=true).
     */
    @JsonProperty public boolean adminTasks;
    /** Run the scheduler (leader election) and a worker pool inside {@code server}. */
    @JsonProperty public boolean runScheduler = true;
    @JsonProperty public boolean runWorker = true;

    /**
     * Where the admin connector (metrics, health checks) listens unless a config file or FAIRQ_ADMIN_BIND says
     * otherwise: this machine only. It has no authentication; Prometheus scrapes it from the same host (or a
     * sidecar), or FAIRQ_ADMIN_BIND opens it to a network the operator controls.
     */
    public static final String DEFAULT_ADMIN_BIND = "127.0.0.1";

    public FairqConfiguration() {
        if (getServerFactory() instanceof io.dropwizard.core.server.DefaultServerFactory server
                && !server.getAdminConnectors().isEmpty()
                && server.getAdminConnectors().get(0) instanceof io.dropwizard.jetty.HttpConnectorFactory http) {
            http.setBindHost(DEFAULT_ADMIN_BIND);
        }
    }

    public boolean embeddedDatabase() {
        return databaseUrl == null || databaseUrl.isBlank();
    }
}

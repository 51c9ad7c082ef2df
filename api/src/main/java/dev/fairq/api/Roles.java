package dev.fairq.api;

import com.zaxxer.hikari.HikariDataSource;
import dev.fairq.scheduler.ScheduleFirer;
import dev.fairq.scheduler.ScheduleObserver;
import dev.fairq.scheduler.Scheduler;
import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.scheduler.SchedulerService;
import dev.fairq.scheduler.TenantsFile;
import dev.fairq.schema.Database;
import dev.fairq.schema.JobStore;
import dev.fairq.worker.HandlerRegistry;
import dev.fairq.worker.Worker;
import dev.fairq.worker.WorkerConfig;
import dev.fairq.worker.WorkerObserver;
import org.jooq.DSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Starting the roles, shared by {@code server} and the single-role commands. */
final class Roles {
    private static final Logger log = LoggerFactory.getLogger(Roles.class);

    private Roles() {}

    static HikariDataSource pool(DatabaseTarget db, int size, String name) {
        return Database.pool(db.url(), db.user(), db.password(), size, name);
    }

    /**
     * Applies the migrations on a pool of their own: two connections, as Flyway holds its lock on one while it
     * migrates on another (with one it waits forever). Never on a role's pool, which may have a single connection
     * (FAIRQ_API_POOL_SIZE=1 had stopped the server's start-up after 10 s with "Connection is not available").
     */
    static void migrate(DatabaseTarget db) {
        try (HikariDataSource pool = pool(db, 2, "fairq-migrate")) {
            Database.migrate(pool);
        }
    }

    /**
     * The migrate command's: refuses a database that a later build migrated, before applying anything. Flyway
     * tolerates it with a warning (so that a process of the earlier build still starts), and migrate had said
     * "migrations applied", exit 0, to a deploy that was about to start an older build against a newer schema.
     */
    static void migrateNotAhead(DatabaseTarget db) {
        try (HikariDataSource pool = pool(db, 2, "fairq-migrate")) {
            org.flywaydb.core.api.MigrationInfoService info = org.flywaydb.core.Flyway.configure().dataSource(pool)
                    .locations("classpath:db/migration").load().info();
            String latest = null;
            for (org.flywaydb.core.api.MigrationInfo m : info.all()) {
                boolean future = m.getState() == org.flywaydb.core.api.MigrationState.FUTURE_SUCCESS
                        || m.getState() == org.flywaydb.core.api.MigrationState.FUTURE_FAILED;
                if (!future && m.getVersion() != null) latest = m.getVersion().getVersion();
            }
            org.flywaydb.core.api.MigrationInfo current = info.current();
            if (current != null && (current.getState() == org.flywaydb.core.api.MigrationState.FUTURE_SUCCESS
                    || current.getState() == org.flywaydb.core.api.MigrationState.FUTURE_FAILED)) {
                throw new IllegalStateException("the database's schema is at version " + current.getVersion()
                        + ", newer than this build's latest migration (" + latest + "): a later release migrated it. "
                        + "Nothing was applied; run that release (this build's processes may not work against it)");
            }
            Database.migrate(pool);
        }
    }

    /** For the queue's own transitions (claim, finish, heartbeat): see {@link Database#queuePool}. */
    static HikariDataSource queuePool(DatabaseTarget db, int size, String name) {
        return Database.queuePool(db.url(), db.user(), db.password(), size, name);
    }

    /** The scheduler, leader or standby; {@code schedules} hears of each schedule fire (metrics). */
    static SchedulerService startScheduler(FairqConfiguration fairq, JobStore store, DatabaseTarget db,
                                           ScheduleObserver schedules) {
        SchedulerConfig config = schedulerConfig(fairq);
        return new SchedulerService(new Scheduler(store, config), new ScheduleFirer(store, schedules), store, config,
                () -> db.dedicated("fairq-scheduler")).start();
    }

    /** The scheduler's settings from the configuration (FAIRQ_RETENTION_HOURS, _FAIR_SHARE, ...). */
    static SchedulerConfig schedulerConfig(FairqConfiguration fairq) {
        try {
            return SchedulerConfig.builder().retention(
                    java.time.Duration.ofHours(fairq.retentionHours), java.time.Duration.ofHours(fairq.deadRetentionHours))
                    .effectRetention(java.time.Duration.ofHours(fairq.effectRetentionHours))
                    .fairShare(SchedulerConfig.FairShare.parse(fairq.fairShare)).build();
        } catch (IllegalArgumentException e) {
            // thrown by the scheduler module (fairShare: seconds in a config file): a setting, one line (StartupErrors)
            throw new IllegalArgumentException(e.getMessage(), e);
        }
    }

    /** A worker with its own small pool (claim, completion, heartbeat), as its engine expects. */
    static Worker startWorker(FairqConfiguration config, HandlerRegistry handlers, JobStore store, DatabaseTarget db,
                              HikariDataSource workerPool, WorkerObserver observer) {
        WorkerConfig wc = workerConfig(config);
        Worker worker = new Worker(wc, handlers, store, Database.dsl(workerPool), () -> db.dedicated("fairq-listen"),
                observer, () -> java.util.concurrent.ThreadLocalRandom.current().nextDouble());
        log.info("worker job types: {}", handlers.types().isEmpty() ? "(none registered)" : handlers.types());
        return worker.start();
    }

    private static void checkQueueName(String setting, String queue) {
        if (queue == null || !queue.matches(dev.fairq.schema.JobRequest.NAME_REGEX)) {
            throw new IllegalArgumentException(setting + ": '" + queue + "' " + dev.fairq.schema.JobRequest.NAME_RULE);
        }
    }

    /** The worker's settings from the configuration (FAIRQ_WORKER_THREADS, _LEASE_MS, _HEARTBEAT_MS, ...). */
    static WorkerConfig workerConfig(FairqConfiguration config) {
        // a file's queue names hold to FAIRQ_WORKER_QUEUES's rule: workerQueues: ["bad queue"] had started a worker
        // serving a queue no job can name (every job then waited, no_worker), and check had said OK to it
        if (config.workerQueues != null) for (String q : config.workerQueues) checkQueueName("workerQueues (FAIRQ_WORKER_QUEUES)", q);
        if (config.workerReserved != null) {
            for (String q : config.workerReserved.keySet()) checkQueueName("workerReserved (FAIRQ_WORKER_RESERVED)", q);
        }
        java.time.Duration lease = java.time.Duration.ofMillis(config.leaseMs);
        try {
            return WorkerConfig.builder().threads(config.workerThreads)
                    .lease(lease, config.heartbeatMs != null ? java.time.Duration.ofMillis(config.heartbeatMs) : lease.dividedBy(3))
                    .shutdownGrace(java.time.Duration.ofMillis(config.shutdownGraceMs))
                    .defaultTimeout(java.time.Duration.ofMillis(config.jobTimeoutMs))
                    .queues(config.workerQueues).reserved(config.workerReserved).maxSnoozes(config.maxSnoozes).build();
        } catch (IllegalArgumentException e) {
            // the checks across settings (a reserved queue not served, more reserved than threads) are the builder's:
            // a user's setting all the same, so one line naming them (StartupErrors), not the worker module's trace
            throw new IllegalArgumentException("the worker's settings (FAIRQ_WORKER_THREADS, FAIRQ_WORKER_QUEUES, "
                    + "FAIRQ_WORKER_RESERVED, ...): " + e.getMessage(), e);
        }
    }

    /**
     * Seeds tenants from the tenants file. The default file may be missing; a file named with FAIRQ_TENANTS
     * must exist; an invalid file stops start-up with its line and field.
     */
    static void seedTenants(FairqConfiguration config, DSLContext db) throws IOException {
        TenantsFile tenants = readTenants(config);
        if (tenants == null) {
            log.info("no tenants file at {}; create tenants with PUT /v1/admin/tenants/{{id}}", config.tenantsFile);
            return;
        }
        int inserted = tenants.seed(db);
        log.info("tenants file {}: {} tenants, {} new", config.tenantsFile, tenants.tenants().size(), inserted);
    }

    /**
     * The tenants file, read and validated (no database needed); null when the default file is missing. A file named
     * with FAIRQ_TENANTS must exist; an invalid file throws naming its line and field.
     */
    static TenantsFile readTenants(FairqConfiguration config) throws IOException {
        Path file = Path.of(config.tenantsFile);
        if (!Files.exists(file)) {
            if (config.tenantsFileRequired) throw new IllegalStateException("tenants file " + file + " (FAIRQ_TENANTS) does not exist");
            return null;
        }
        // its schedules checked as the API checks a PUT: the same largest payload, the http type's payload rules
        return TenantsFile.load(file, config.maxPayloadBytes, BuiltInHandlers::templateError);
    }

    /**
     * What {@code check} reads besides the configuration's own fields: the checks across the worker's and the
     * scheduler's settings, and the tenants file, each of which a {@code server} would refuse at start-up.
     */
    static void checkSettings(FairqConfiguration config) throws IOException {
        AdminCredentials.checkLength(config);
        config.submitStartsAtCommit(); // server refuses any other value at start-up; check had said OK to submitStart: later
        if (config.runWorker) workerConfig(config);
        if (config.runScheduler) schedulerConfig(config);
        readTenants(config);
    }
}

package dev.fairq.api;

import com.zaxxer.hikari.HikariDataSource;
import dev.fairq.scheduler.ScheduleObserver;
import dev.fairq.scheduler.SchedulerService;
import dev.fairq.schema.Database;
import dev.fairq.schema.JobStore;
import dev.fairq.worker.HandlerRegistry;
import dev.fairq.worker.ShutdownSignals;
import dev.fairq.worker.Worker;
import dev.fairq.worker.WorkerObserver;
import io.dropwizard.core.cli.Cli;
import io.dropwizard.core.cli.ConfiguredCommand;
import io.dropwizard.core.setup.Bootstrap;
import net.sourceforge.argparse4j.inf.Namespace;

import io.dropwizard.core.server.DefaultServerFactory;
import io.dropwizard.jetty.ConnectorFactory;
import io.dropwizard.jetty.HttpConnectorFactory;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

/** The single-role commands: each runs against FAIRQ_DATABASE_URL, so many processes can share one database. */
final class RoleCommands {
    private RoleCommands() {}

    /** {@code worker}: a worker pool only; SIGTERM finishes running jobs and exits 0. */
    static final class WorkerCommand extends ConfiguredCommand<FairqConfiguration> {
        private final FairqApplication application;

        WorkerCommand(FairqApplication application) {
            super("worker", "Runs a worker pool against FAIRQ_DATABASE_URL (FAIRQ_WORKER_THREADS threads)");
            this.application = application;
        }

        @Override
        public void onError(Cli cli, Namespace namespace, Throwable e) {
            StartupErrors.report(cli, e);
        }

        @Override
        protected void run(Bootstrap<FairqConfiguration> bootstrap, Namespace namespace, FairqConfiguration config) throws Exception {
            DatabaseTarget target = DatabaseTarget.required(config, "worker");
            HikariDataSource pool = Roles.queuePool(target, 4, "fairq-worker");
            Database.migrate(pool);
            HandlerRegistry handlers = new HandlerRegistry();
            application.registerHandlers(handlers, config, Database.dsl(pool));
            FairqMetrics metrics = config.metricsPort == null ? null : new FairqMetrics(null, config.metricsTenants, () -> null);
            ProcessMetricsServer http = metrics == null ? null : startMetrics(config, metrics);
            Worker worker = Roles.startWorker(config, handlers, new JobStore(), target, pool,
                    metrics == null ? WorkerObserver.NONE : metrics);
            ShutdownSignals.onTerminate(() -> {
                worker.close();
                pool.close();
                if (http != null) http.close();
            });
            new CountDownLatch(1).await(); // until a signal ends the process
        }
    }

    /** {@code scheduler}: leader election and admission only; a standby takes over when the leader dies. */
    static final class SchedulerCommand extends ConfiguredCommand<FairqConfiguration> {
        SchedulerCommand() {
            super("scheduler", "Runs the scheduler (active or standby) against FAIRQ_DATABASE_URL");
        }

        @Override
        public void onError(Cli cli, Namespace namespace, Throwable e) {
            StartupErrors.report(cli, e);
        }

        @Override
        protected void run(Bootstrap<FairqConfiguration> bootstrap, Namespace namespace, FairqConfiguration config) throws Exception {
            DatabaseTarget target = DatabaseTarget.required(config, "scheduler");
            HikariDataSource pool = Roles.pool(target, 2, "fairq-scheduler-setup");
            Database.migrate(pool);
            Roles.seedTenants(config, Database.dsl(pool));
            pool.close();
            // with FAIRQ_METRICS_PORT its fires and (while it leads) its tick times are served there
            AtomicReference<SchedulerService> running = new AtomicReference<>();
            FairqMetrics metrics = config.metricsPort == null ? null : new FairqMetrics(null, config.metricsTenants, () -> {
                SchedulerService s = running.get();
                return s == null || !s.isLeader() ? null : s.scheduler();
            });
            ProcessMetricsServer http = metrics == null ? null : startMetrics(config, metrics);
            SchedulerService scheduler = Roles.startScheduler(config, new JobStore(), target,
                    metrics == null ? ScheduleObserver.NONE : metrics);
            running.set(scheduler);
            ShutdownSignals.onTerminate(() -> {
                scheduler.close();
                if (http != null) http.close();
            });
            new CountDownLatch(1).await();
        }
    }

    /** /metrics and /ping on FAIRQ_METRICS_PORT, at the admin connector's address (FAIRQ_ADMIN_BIND, 127.0.0.1). */
    private static ProcessMetricsServer startMetrics(FairqConfiguration config, FairqMetrics metrics) throws java.io.IOException {
        String host = FairqConfiguration.DEFAULT_ADMIN_BIND;
        if (config.getServerFactory() instanceof DefaultServerFactory server) {
            for (ConnectorFactory f : server.getAdminConnectors()) {
                if (f instanceof HttpConnectorFactory h && h.getBindHost() != null) host = h.getBindHost();
            }
        }
        ProcessMetricsServer http = ProcessMetricsServer.start(host, config.metricsPort, metrics);
        org.slf4j.LoggerFactory.getLogger(RoleCommands.class).info("serving /metrics and /ping on {}:{}", host, http.port());
        return http;
    }

    /** {@code migrate}: applies the database migrations and exits. */
    static final class MigrateCommand extends ConfiguredCommand<FairqConfiguration> {
        MigrateCommand() {
            super("migrate", "Applies the database migrations to FAIRQ_DATABASE_URL and exits");
        }

        @Override
        public void onError(Cli cli, Namespace namespace, Throwable e) {
            StartupErrors.report(cli, e);
        }

        @Override
        protected void run(Bootstrap<FairqConfiguration> bootstrap, Namespace namespace, FairqConfiguration config) {
            DatabaseTarget target = DatabaseTarget.required(config, "migrate");
            Roles.migrateNotAhead(target);
            System.out.println("fairq: migrations applied");
        }
    }
}

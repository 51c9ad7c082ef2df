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

import java.util.concurrent.CountDownLatch;

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
            Worker worker = Roles.startWorker(config, handlers, new JobStore(), target, pool, WorkerObserver.NONE);
            ShutdownSignals.onTerminate(() -> {
                worker.close();
                pool.close();
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
            // a scheduler-only process has no metrics endpoint: fires are counted where /metrics is served
            SchedulerService scheduler = Roles.startScheduler(config, new JobStore(), target, ScheduleObserver.NONE);
            ShutdownSignals.onTerminate(scheduler::close);
            new CountDownLatch(1).await();
        }
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
            Roles.migrate(target);
            System.out.println("fairq: migrations applied");
        }
    }
}

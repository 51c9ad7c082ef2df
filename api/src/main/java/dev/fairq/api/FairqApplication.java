package dev.fairq.api;

import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.zaxxer.hikari.HikariDataSource;
import dev.fairq.scheduler.ScheduleService;
import dev.fairq.scheduler.SchedulerService;
import dev.fairq.schema.Database;
import dev.fairq.schema.JobStore;
import dev.fairq.schema.Waker;
import dev.fairq.worker.HandlerRegistry;
import dev.fairq.worker.ShutdownSignals;
import dev.fairq.worker.Worker;
import io.dropwizard.configuration.EnvironmentVariableSubstitutor;
import io.dropwizard.configuration.SubstitutingSourceProvider;
import io.dropwizard.core.Application;
import io.dropwizard.core.cli.CheckCommand;
import io.dropwizard.core.cli.Cli;
import io.dropwizard.core.cli.ServerCommand;
import io.dropwizard.core.setup.Bootstrap;
import io.dropwizard.core.setup.Environment;
import io.dropwizard.lifecycle.Managed;
import net.sourceforge.argparse4j.inf.Namespace;
import org.jooq.DSLContext;

import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicReference;

/**
 * fairq in one process: {@code server [config.yml]} runs the API, the scheduler (leader election: one
 * active among all processes) and a worker pool. {@code worker}, {@code scheduler} and {@code migrate} run
 * one role against a shared database. Settings: built-in defaults, then the optional file, then the
 * {@code FAIRQ_*} environment variables ({@link EnvironmentOverrides}).
 */
public class FairqApplication extends Application<FairqConfiguration> {
    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            // Dropwizard prints the usage and exits 0 for no command: a script that lost its command read success.
            // Status 1, as for an unknown command or any other mistake in the arguments (api/README.md).
            new FairqApplication().run("-h");
            System.err.println("fairq: a command is required (server, worker, scheduler, migrate, jobs, ...): see above");
            System.exit(1);
        }
        new FairqApplication().run(args);
    }

    @Override
    public String getName() {
        return "fairq";
    }

    /** Dropwizard's server and check commands, with a failure to start said in one line ({@link StartupErrors}). */
    @Override
    protected void addDefaultCommands(Bootstrap<FairqConfiguration> bootstrap) {
        bootstrap.addCommand(new ServerCommand<>(this) {
            @Override
            public void onError(Cli cli, Namespace namespace, Throwable e) {
                StartupErrors.report(cli, e);
            }
        });
        bootstrap.addCommand(new CheckCommand<>(this) {
            // Dropwizard's check reads the configuration's fields only: the worker's settings read together and the
            // tenants file (FAIRQ_TENANTS) were checked by server alone, so check said OK to a start that then failed
            @Override
            protected void run(Bootstrap<FairqConfiguration> bootstrap, Namespace namespace, FairqConfiguration config) throws Exception {
                Roles.checkSettings(config);
                super.run(bootstrap, namespace, config);
            }

            @Override
            public void onError(Cli cli, Namespace namespace, Throwable e) {
                StartupErrors.report(cli, e);
            }
        });
    }

    @Override
    public void initialize(Bootstrap<FairqConfiguration> bootstrap) {
        bootstrap.setConfigurationSourceProvider(new SubstitutingSourceProvider(
                bootstrap.getConfigurationSourceProvider(), new EnvironmentVariableSubstitutor(false)));
        bootstrap.setConfigurationFactoryFactory(new EnvironmentConfigurationFactoryFactory<>(System.getenv()));
        bootstrap.addCommand(new RoleCommands.WorkerCommand(this));
        bootstrap.addCommand(new RoleCommands.SchedulerCommand());
        bootstrap.addCommand(new RoleCommands.MigrateCommand());
        ClientCommands.addTo(bootstrap, System.getenv(), System.out); // jobs, stats, tenants: a server's client
    }

    /**
     * The job types this process's workers run. Built-in handlers are registered in
     * {@link BuiltInHandlers#register}; tests override this to add their own.
     */
    protected void registerHandlers(HandlerRegistry registry, FairqConfiguration config, DSLContext db) {
        BuiltInHandlers.register(registry, config, db);
    }

    /** Whether SIGTERM / SIGINT stop the process gracefully with exit code 0 (off in in-JVM tests). */
    protected boolean handleSignals() {
        return true;
    }

    @Override
    public void run(FairqConfiguration config, Environment env) throws Exception {
        // checked before anything starts: refused later, in a Managed's start, Jetty's start failure logs its trace
        if (config.runWorker) Roles.workerConfig(config);
        if (config.runScheduler) Roles.schedulerConfig(config);
        DatabaseTarget target;
        if (config.embeddedDatabase()) {
            EmbeddedDatabase embedded = EmbeddedDatabase.start(Path.of(config.dataDirectory));
            env.lifecycle().manage(embedded); // managed first, so it stops last
            target = embedded.target();
        } else {
            target = new DatabaseTarget(config.databaseUrl, config.databaseUser, config.databasePassword, false);
        }
        Roles.migrate(target);
        HikariDataSource apiPool = Roles.pool(target, config.apiPoolSize, "fairq-api");
        env.lifecycle().manage(closing(apiPool::close));
        DSLContext db = Database.dsl(apiPool);
        Roles.seedTenants(config, db);
        String adminHash = AdminCredentials.resolveHash(config, target.embedded(), db, System.out);

        JobStore store = new JobStore();
        boolean submitStartsAtCommit = config.submitStartsAtCommit();
        if (submitStartsAtCommit) checkAwaitDurable(store, db);
        AtomicReference<SchedulerService> scheduler = new AtomicReference<>();
        // the worker of this process, woken directly by the scheduler and the API beside it when they make jobs
        // ready, ahead of their NOTIFY (which may queue on PostgreSQL's notification lock: Waker)
        AtomicReference<Worker> localWorker = new AtomicReference<>();
        Runnable wakeLocalWorker = () -> {
            Worker w = localWorker.get();
            if (w != null) w.wakeClaimer();
        };
        FairqMetrics metrics = new FairqMetrics(db, config.metricsTenants,
                () -> scheduler.get() == null || !scheduler.get().isLeader() ? null : scheduler.get().scheduler());
        if (config.runScheduler) {
            env.lifecycle().manage(new Managed() {
                @Override public void start() {
                    scheduler.set(Roles.startScheduler(config, store, target, metrics).wakeLocalWorkersWith(wakeLocalWorker));
                }
                @Override public void stop() { if (scheduler.get() != null) scheduler.get().close(); }
            });
        }
        if (config.runWorker) {
            HandlerRegistry handlers = new HandlerRegistry();
            registerHandlers(handlers, config, db);
            HikariDataSource workerPool = Roles.queuePool(target, 4, "fairq-worker");
            env.lifecycle().manage(new Managed() {
                @Override public void start() {
                    localWorker.set(Roles.startWorker(config, handlers, store, target, workerPool, metrics));
                }
                @Override public void stop() {
                    if (localWorker.get() != null) localWorker.get().close();
                    workerPool.close();
                }
            });
            env.healthChecks().register("worker-pool", HealthChecks.lazy(() -> localWorker.get() == null ? null
                    : HealthChecks.workerPool(db, localWorker.get())));
        }

        env.getObjectMapper().setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE);
        env.getObjectMapper().disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS);
        ApiKeyStore keys = new ApiKeyStore(db);
        // remembered keys are trusted for a minute while this hears of every key change (V14), a second otherwise
        KeyChangeListener keyChanges = new KeyChangeListener(keys, () -> target.dedicated("fairq-keys"));
        env.lifecycle().manage(new Managed() {
            @Override public void start() { keyChanges.start(); }
            @Override public void stop() { keyChanges.close(); }
        });
        TenantAdminStore tenants = new TenantAdminStore(db);
        AdminTokenStore adminTokens = new AdminTokenStore(db);
        env.jersey().register(new BearerAuthFilter(adminHash, keys, adminTokens, new ApiRateLimiter(System::nanoTime)));
        env.jersey().register(new RolesFeature());
        env.jersey().register(new ParameterGuard());
        env.jersey().register(new UnreadBodyFilter());
        env.jersey().register(new ApiExceptionMappers.Api());
        env.jersey().register(new ApiExceptionMappers.InvalidJob());
        env.jersey().register(new ApiExceptionMappers.QueueFull());
        env.jersey().register(new ApiExceptionMappers.JerseyRefusal());
        env.jersey().register(new JsonBodyReader(env.getObjectMapper(), env.getValidator(), config.maxPayloadBytes));
        // the workers' wake-up after an API enqueue that a grant admitted, sent once it committed (Waker.wakeNow)
        Waker workersWaker = new Waker("fairq-api-waker", wakeLocalWorker, () -> store.leases().wakeWorkers(db));
        env.lifecycle().manage(closing(workersWaker::close));
        env.jersey().register(new JobsResource(store, db, workersWaker, submitStartsAtCommit, new Explainer(store, db, scheduler::get)));
        env.jersey().register(new StatsResource(db));
        env.jersey().register(new AdminTenantsResource(tenants, keys));
        env.jersey().register(new AdminJobsResource(store, db, tenants));
        env.jersey().register(new AdminTokensResource(adminTokens));
        ScheduleService schedules = new ScheduleService(store, config.maxPayloadBytes, BuiltInHandlers::templateError);
        DashboardFigures dashboards = new DashboardFigures(db, schedules);
        env.jersey().register(new DashboardResource(dashboards));
        env.jersey().register(new AdminOverviewResource(dashboards));
        env.jersey().register(new AdminWorkersResource(store, db));
        env.jersey().register(new DashboardPages());
        env.jersey().register(new SchedulesResource(schedules, db, config.maxPayloadBytes));
        env.jersey().register(new SchedulesResource.Admin(schedules, db));
        env.jersey().register(new OpenApiDocument(() -> resourceClasses(env), env.getObjectMapper()));

        env.admin().addServlet("prometheus", new PrometheusServlet(metrics)).addMapping("/metrics");
        // Jetty's own errors (a malformed URI, oversized headers, the admin port's 404) in the error body, not HTML
        env.getApplicationContext().setErrorHandler(new JsonErrorHandlers.ContextLevel());
        env.getAdminContext().setErrorHandler(new JsonErrorHandlers.ContextLevel());
        env.lifecycle().addEventListener(new org.eclipse.jetty.util.component.LifeCycle.Listener() {
            @Override
            public void lifeCycleStarting(org.eclipse.jetty.util.component.LifeCycle event) {
                if (event instanceof org.eclipse.jetty.server.Server server) server.setErrorHandler(new JsonErrorHandlers.ServerLevel());
            }
        });
        AdminTasksGuard.install(env, config.adminTasks);
        env.healthChecks().register("database", HealthChecks.database(db));
        env.healthChecks().register("scheduler", HealthChecks.lazy(() -> HealthChecks.scheduler(db, scheduler.get())));

        if (handleSignals()) {
            env.lifecycle().addServerLifecycleListener(server -> ShutdownSignals.onTerminate(() -> {
                try {
                    server.stop();
                } catch (Exception e) {
                    throw new IllegalStateException("stopping the server failed", e);
                }
            }));
        }
    }

    /** Every resource class Jersey serves: what /openapi.json documents (and what OpenApiContractTest compares). */
    static java.util.Set<Class<?>> resourceClasses(Environment env) {
        java.util.Set<Class<?>> out = new java.util.LinkedHashSet<>();
        for (Object o : env.jersey().getResourceConfig().getSingletons()) out.add(o.getClass());
        out.addAll(env.jersey().getResourceConfig().getClasses());
        out.removeIf(c -> !c.isAnnotationPresent(jakarta.ws.rs.Path.class));
        return out;
    }

    private static Managed closing(Runnable close) {
        return new Managed() {
            @Override public void stop() { close.run(); }
        };
    }

    /**
     * FAIRQ_SUBMIT_START=commit answers a submit only after JobStore#awaitDurable, which calls
     * pg_logical_emit_message: a database that refuses it to fairq's role would have every submit committed and then
     * answered 500 (and retried into duplicates), so start-up tries it once and stops with what to do instead.
     */
    private static void checkAwaitDurable(JobStore store, DSLContext db) {
        try {
            store.awaitDurable(db);
        } catch (org.jooq.exception.DataAccessException e) {
            throw new IllegalStateException("FAIRQ_SUBMIT_START=commit needs EXECUTE on pg_logical_emit_message for the "
                    + "database user (GRANT EXECUTE on pg_logical_emit_message(boolean, text, text), with a last boolean on "
                    + "PostgreSQL 17 and later), or set "
                    + "FAIRQ_SUBMIT_START=flush: " + e.getMessage(), e);
        }
    }
}

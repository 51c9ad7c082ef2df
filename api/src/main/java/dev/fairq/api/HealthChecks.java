package dev.fairq.api;

import com.codahale.metrics.health.HealthCheck;
import com.codahale.metrics.health.HealthCheck.Result;
import dev.fairq.scheduler.SchedulerService;
import dev.fairq.schema.JobStore;
import dev.fairq.worker.Worker;
import org.jooq.DSLContext;

import java.time.Duration;
import java.util.function.Supplier;

/** Dropwizard health checks (admin port, /healthcheck): database, scheduler leadership, worker pool. */
final class HealthChecks {
    private HealthChecks() {}

    /** A health check that is just its body: the checks below differ only in what they look at. */
    private static final class Check extends HealthCheck {
        private final Supplier<Result> body;

        Check(Supplier<Result> body) {
            this.body = body;
        }

        @Override
        protected Result check() {
            return body.get();
        }
    }

    static HealthCheck database(DSLContext db) {
        return new Check(() -> {
            db.resultQuery("SELECT 1").fetchOne();
            return Result.healthy();
        });
    }

    /**
     * Healthy when some process holds the scheduler lock: this one (leader) or another (this one stands by).
     * No leader at all means nothing is being admitted.
     */
    static HealthCheck scheduler(DSLContext db, SchedulerService local) {
        return new Check(() -> {
            if (local != null && local.isLeader()) return Result.healthy("this process is the active scheduler");
            if (SchedulerService.leaderExists(db)) return Result.healthy(local == null ? "another process is the active scheduler"
                    : "standing by; another process is the active scheduler");
            return Result.unhealthy("no active scheduler: no jobs are being admitted");
        });
    }

    /** Healthy while this process's worker is registered with a recent heartbeat. */
    static HealthCheck workerPool(DSLContext db, Worker worker) {
        return new Check(() -> {
            // two missed heartbeats (10 s apart) and a slow third: the worker is not heart-beating any more
            Integer capacity = new JobStore().leases().liveCapacity(db, worker.id(), Duration.ofSeconds(60)).orElse(null);
            if (capacity == null) return Result.unhealthy("worker " + worker.id() + " is not registered (stopped, or heartbeats fail)");
            if (worker.abandonedCapReached()) {
                return Result.unhealthy("worker " + worker.id() + ": " + worker.abandonedThreads() + " handler threads ignored "
                        + "an interruption and are abandoned; the pool runs short (restart to recover)");
            }
            return Result.healthy("worker " + worker.id() + ": " + capacity + " threads, " + worker.heldCount() + " jobs held, "
                    + worker.abandonedThreads() + " abandoned threads");
        });
    }

    /** A check whose target exists only once the server started: unhealthy ("not started") until {@code target} gives one. */
    static HealthCheck lazy(Supplier<HealthCheck> target) {
        return new Check(() -> {
            HealthCheck t = target.get();
            return t == null ? Result.unhealthy("not started") : t.execute();
        });
    }
}

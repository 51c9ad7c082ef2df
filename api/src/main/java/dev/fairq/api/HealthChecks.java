package dev.fairq.api;

import dev.fairq.schema.JobStore;
import java.time.Duration;

import com.codahale.metrics.health.HealthCheck;
import dev.fairq.scheduler.SchedulerService;
import dev.fairq.worker.Worker;
import org.jooq.DSLContext;

/** Dropwizard health checks (admin port, /healthcheck): database, scheduler leadership, worker pool. */
final class HealthChecks {
    private HealthChecks() {}

    static final class DatabaseCheck extends HealthCheck {
        private final DSLContext db;

        DatabaseCheck(DSLContext db) {
            this.db = db;
        }

        @Override
        protected Result check() {
            db.resultQuery("SELECT 1").fetchOne();
            return Result.healthy();
        }
    }

    /**
     * Healthy when some process holds the scheduler lock: this one (leader) or another (this one stands by).
     * No leader at all means nothing is being admitted.
     */
    static final class SchedulerCheck extends HealthCheck {
        private final DSLContext db;
        private final SchedulerService local;

        SchedulerCheck(DSLContext db, SchedulerService local) {
            this.db = db;
            this.local = local;
        }

        @Override
        protected Result check() {
            if (local != null && local.isLeader()) return Result.healthy("this process is the active scheduler");
            if (SchedulerService.leaderExists(db)) return Result.healthy(local == null ? "another process is the active scheduler"
                    : "standing by; another process is the active scheduler");
            return Result.unhealthy("no active scheduler: no jobs are being admitted");
        }
    }

    /** Healthy while this process's worker is registered with a recent heartbeat. */
    static final class WorkerPoolCheck extends HealthCheck {
        private final DSLContext db;
        private final Worker worker;

        WorkerPoolCheck(DSLContext db, Worker worker) {
            this.db = db;
            this.worker = worker;
        }

        @Override
        protected Result check() {
            // two missed heartbeats (10 s apart) and a slow third: the worker is not heart-beating any more
            Integer capacity = new JobStore().leases().liveCapacity(db, worker.id(), Duration.ofSeconds(60)).orElse(null);
            if (capacity == null) return Result.unhealthy("worker " + worker.id() + " is not registered (stopped, or heartbeats fail)");
            if (worker.abandonedCapReached()) {
                return Result.unhealthy("worker " + worker.id() + ": " + worker.abandonedThreads() + " handler threads ignored "
                        + "an interruption and are abandoned; the pool runs short (restart to recover)");
            }
            return Result.healthy("worker " + worker.id() + ": " + capacity + " threads, " + worker.heldCount() + " jobs held, "
                    + worker.abandonedThreads() + " abandoned threads");
        }
    }
}

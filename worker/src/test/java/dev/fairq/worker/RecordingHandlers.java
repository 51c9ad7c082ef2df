package dev.fairq.worker;

import dev.fairq.schema.Database;
import org.jooq.DSLContext;

import javax.sql.DataSource;

/**
 * Handlers that leave evidence: each attempt inserts a row into test_runs (job, attempt, worker, ordering
 * key, start and end), so tests can count runs, re-runs, overlaps and order from the database.
 */
final class RecordingHandlers {
    private RecordingHandlers() {}

    /** Registers {@code record} (succeeds) and {@code sleep} (payload {"ms": n}, then succeeds). */
    static HandlerRegistry registry(DataSource runsDb) {
        DSLContext db = Database.dsl(runsDb);
        HandlerRegistry registry = new HandlerRegistry();
        registry.register("record", job -> recordRun(db, job, 0));
        registry.register("sleep", job -> recordRun(db, job, job.payload().path("ms").asLong(0)));
        return registry;
    }

    static void recordRun(DSLContext db, JobContext job, long sleepMillis) throws InterruptedException {
        long runId = db.resultQuery("INSERT INTO test_runs (job_id, attempt, worker, ordering_key) VALUES (?, ?, ?, ?) "
                + "RETURNING run_id", job.jobId(), job.attempt(), job.workerId(), job.orderingKey()).fetchOne(0, Long.class);
        if (sleepMillis > 0) Thread.sleep(sleepMillis); // the job's simulated work, not a test waiting
        db.execute("UPDATE test_runs SET ended_at = clock_timestamp() WHERE run_id = ?", runId);
    }
}

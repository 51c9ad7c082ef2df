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

    /**
     * Registers {@code record} (succeeds), {@code sleep} (payload {"ms": n}, then succeeds) and {@code effect}
     * (see {@link #effect}).
     */
    static HandlerRegistry registry(DataSource runsDb) {
        DSLContext db = Database.dsl(runsDb);
        HandlerRegistry registry = new HandlerRegistry();
        registry.register("record", job -> recordRun(db, job, 0));
        registry.register("sleep", job -> recordRun(db, job, job.payload().path("ms").asLong(0)));
        registry.register("effect", job -> effect(db, job));
        return registry;
    }

    /** The tables {@link #effect} writes to (a test creates them before it runs such jobs). */
    static void createEffectTables(DSLContext db) {
        db.execute("DROP TABLE IF EXISTS test_effects, test_effect_results");
        db.execute("CREATE TABLE test_effects (job_id bigint NOT NULL, attempt integer NOT NULL, worker text NOT NULL)");
        db.execute("CREATE TABLE test_effect_results (job_id bigint NOT NULL, attempt integer NOT NULL, "
                + "worker text NOT NULL, result text)");
    }

    /**
     * A side effect guarded by {@link JobContext#once}: the effect inserts into test_effects (so a test counts
     * how often it really ran) and returns a receipt naming the attempt that ran it; the handler then records
     * what once answered in test_effect_results. With {"hang": true} its first attempt then blocks until the
     * process is killed: the crash lands between the effect and the job's completion.
     */
    static void effect(DSLContext db, JobContext job) throws Exception {
        String result = job.once("effect:" + job.jobId(), java.time.Duration.ofMinutes(5), () -> {
            db.execute("INSERT INTO test_effects (job_id, attempt, worker) VALUES (?, ?, ?)", job.jobId(), job.attempt(),
                    job.workerId());
            return "receipt of attempt " + job.attempt();
        });
        db.execute("INSERT INTO test_effect_results (job_id, attempt, worker, result) VALUES (?, ?, ?, ?)", job.jobId(),
                job.attempt(), job.workerId(), result);
        if (job.payload().path("hang").asBoolean() && job.attempt() == 1) {
            new java.util.concurrent.CountDownLatch(1).await(); // until SIGKILL: the job is never completed
        }
    }

    static void recordRun(DSLContext db, JobContext job, long sleepMillis) throws InterruptedException {
        long runId = db.resultQuery("INSERT INTO test_runs (job_id, attempt, worker, ordering_key) VALUES (?, ?, ?, ?) "
                + "RETURNING run_id", job.jobId(), job.attempt(), job.workerId(), job.orderingKey()).fetchOne(0, Long.class);
        if (sleepMillis > 0) Thread.sleep(sleepMillis); // the job's simulated work, not a test waiting
        db.execute("UPDATE test_runs SET ended_at = clock_timestamp() WHERE run_id = ?", runId);
    }
}

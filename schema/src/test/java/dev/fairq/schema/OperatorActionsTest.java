package dev.fairq.schema;

import dev.fairq.schema.OperatorActions.ActionResult;
import dev.fairq.schema.generated.enums.JobStatus;
import dev.fairq.schema.generated.tables.records.JobsRecord;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Set;

import static dev.fairq.schema.generated.Tables.JOBS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** cancel, replay, discard, look-ups by tenant, and retention (deleteFinished). */
class OperatorActionsTest extends StoreTestSupport {

    private long deadJob(String tenant, String orderingKey) {
        long id = enqueue(job(tenant).orderingKey(orderingKey));
        ClaimedJob c = admitAndClaim("w1", id);
        assertEquals(Set.of(id), store.finish(dsl, "w1", List.of(new JobOutcome.Failed(id, c.attempt(), true, 0, "fatal"))));
        assertEquals(JobStatus.dead, status(id));
        return id;
    }

    private long succeededJob(String tenant) {
        long id = enqueue(job(tenant));
        ClaimedJob c = admitAndClaim("w1", id);
        assertEquals(Set.of(id), store.finish(dsl, "w1", List.of(new JobOutcome.Succeeded(id, c.attempt()))));
        return id;
    }

    private void finishedDaysAgo(long id, int days) {
        assertEquals(1, dsl.execute("UPDATE jobs SET finished_at = now() - ? * interval '1 day' WHERE id = ?", days, id));
    }

    @Test
    void cancelPendingJob() {
        long id = enqueue(job(T1));
        assertEquals(ActionResult.DONE, store.cancel(dsl, T1, id).result());
        JobsRecord r = row(id);
        assertEquals(JobStatus.cancelled, r.getStatus());
        assertNotNull(r.getFinishedAt());
        assertEquals(List.of(), candidates(T1));
        // cancelling again changes nothing: the job had already ended
        clock.advance(java.time.Duration.ofSeconds(1));
        OperatorActions.ActionOutcome again = store.cancel(dsl, T1, id);
        assertEquals(ActionResult.ALREADY_ENDED, again.result());
        assertEquals(r.getFinishedAt(), again.job().getFinishedAt());
    }

    @Test
    void cancelReadyJobTakesItOutOfTheReadyBuffer() {
        long id = enqueue(job(T1));
        store.admit(dsl, List.of(id));
        assertEquals(ActionResult.DONE, store.cancel(dsl, T1, id).result());
        assertEquals(JobStatus.cancelled, status(id));
        assertNull(row(id).getReadyRank());
        assertEquals(List.of(), store.claim(dsl, "w1", 10, LEASE));
    }

    /**
     * A cancelled admitted job frees a place under max_running: the scheduler hears it at once (fairq_jobs, "t:"
     * and the tenant), as it hears a completion, where it had found the place at its next idle tick (250 ms).
     */
    @Test
    void cancellingAnAdmittedJobWakesTheSchedulerWithItsTenant() throws Exception {
        long ready = enqueue(job(T1)), pending = enqueue(job(T1).delay(Duration.ofHours(1)));
        store.admit(dsl, List.of(ready));
        assertEquals(List.of("t:" + T1), schedulerWakesOf(() -> assertEquals(ActionResult.DONE, store.cancel(dsl, T1, ready).result())));
        assertEquals(List.of(), schedulerWakesOf(() -> assertEquals(ActionResult.DONE, store.cancel(dsl, T1, pending).result())));
        long readyToo = enqueue(job(T2));
        store.admit(dsl, List.of(readyToo));
        assertEquals(List.of("t:" + T2), schedulerWakesOf(() -> assertEquals(ActionResult.DONE, store.cancelWaiting(dsl, T2, readyToo).result())));
    }

    /** The fairq_jobs payloads {@code action} sent (a marker after it, delivered in commit order, ends the list). */
    private List<String> schedulerWakesOf(Runnable action) throws Exception {
        List<String> got = new java.util.ArrayList<>();
        try (java.sql.Connection listen = Database.dedicated(db.jdbcUrl, db.user, db.password, "wake-listener")) {
            try (java.sql.Statement s = listen.createStatement()) {
                s.execute("LISTEN fairq_jobs");
            }
            action.run();
            dsl.execute("SELECT pg_notify('fairq_jobs', 'marker')");
            org.postgresql.PGConnection pg = listen.unwrap(org.postgresql.PGConnection.class);
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (System.nanoTime() < deadline) {
                org.postgresql.PGNotification[] ns = pg.getNotifications(500);
                if (ns == null) continue;
                for (org.postgresql.PGNotification n : ns) {
                    if (n.getParameter().equals("marker")) return got;
                    got.add(n.getParameter());
                }
            }
        }
        throw new AssertionError("the marker notification never arrived; before it: " + got);
    }

    @Test
    void cancelRunningJobRequestsItAndLeavesTheLeaseToTheWorker() {
        long id = enqueue(job(T1));
        admitAndClaim("w1", id);
        OperatorActions.ActionOutcome outcome = store.cancel(dsl, T1, id);
        assertEquals(ActionResult.STOPPING, outcome.result());
        assertEquals(JobStatus.running, outcome.job().getStatus());
        assertEquals(dbNow().toInstant(), outcome.job().getCancelRequestedAt().toInstant());
        assertEquals(JobStatus.running, status(id));
        assertEquals("w1", row(id).getLockedBy());
    }

    @Test
    void cancelOfASucceededJobLeavesItAsItIs() {
        long id = succeededJob(T1);
        OperatorActions.ActionOutcome outcome = store.cancel(dsl, T1, id);
        assertEquals(ActionResult.ALREADY_ENDED, outcome.result());
        assertEquals(JobStatus.succeeded, outcome.job().getStatus());
        assertNull(row(id).getCancelRequestedAt());
    }

    @Test
    void anotherTenantsJobIsNotFound() {
        long id = enqueue(job(T1));
        assertEquals(ActionResult.NOT_FOUND, store.cancel(dsl, T2, id).result());
        assertEquals(ActionResult.NOT_FOUND, store.replay(dsl, T2, id).result());
        assertEquals(ActionResult.NOT_FOUND, store.discard(dsl, T2, id).result());
        assertEquals(ActionResult.NOT_FOUND, store.cancel(dsl, T1, id + 1000).result());
        assertEquals(JobStatus.pending, status(id));
        assertTrue(store.find(dsl, T2, id).isEmpty());
        assertTrue(store.find(dsl, T1, id).isPresent());

        // an admin (no tenant) may act on any job
        assertEquals(ActionResult.DONE, store.cancel(dsl, null, id).result());
        assertEquals(JobStatus.cancelled, status(id));
    }

    @Test
    void replayDeadJob() {
        long id = enqueue(job(T1).maxAttempts(3));
        for (int attempt = 1; attempt <= 3; attempt++) {
            ClaimedJob c = admitAndClaim("w1", id);
            assertEquals(attempt, c.attempt());
            boolean last = attempt == 3;
            store.finish(dsl, "w1", List.of(new JobOutcome.Failed(id, c.attempt(), last, 0, "fail " + attempt)));
        }
        assertEquals(JobStatus.dead, status(id));
        assertEquals(3, row(id).getAttempts());

        OperatorActions.ActionOutcome replayed = store.replay(dsl, T1, id);
        assertEquals(ActionResult.DONE, replayed.result());

        JobsRecord r = row(id);
        assertEquals(JobStatus.pending, r.getStatus());
        assertEquals(0, r.getAttempts());
        assertNull(r.getFinishedAt());
        assertFalse(r.getRunAt().isAfter(dbNow()));
        assertEquals(List.of(id), candidates(T1));
        assertEquals(1, admitAndClaim("w1", id).attempt());
        // The outcome is the job as the replay left it, not as it is by the time the caller reads it.
        assertEquals(JobStatus.pending, replayed.job().getStatus());
        assertEquals(0, replayed.job().getAttempts());
    }

    @Test
    void replayOnlyDeadOrCancelled() {
        long pending = enqueue(job(T1));
        long done = succeededJob(T1);
        assertEquals(ActionResult.WRONG_STATUS, store.replay(dsl, T1, pending).result());
        assertEquals(ActionResult.WRONG_STATUS, store.replay(dsl, T1, done).result());
        assertEquals(JobStatus.succeeded, status(done));

        assertEquals(ActionResult.DONE, store.cancel(dsl, T1, pending).result());
        assertEquals(ActionResult.DONE, store.replay(dsl, T1, pending).result());
        assertEquals(JobStatus.pending, status(pending));
    }

    @Test
    void discardOnlyDead() {
        long pending = enqueue(job(T1));
        assertEquals(ActionResult.WRONG_STATUS, store.discard(dsl, T1, pending).result());
        assertEquals(JobStatus.pending, status(pending));

        long dead = deadJob(T1, null);
        assertEquals(ActionResult.DONE, store.discard(dsl, T1, dead).result());
        assertEquals(JobStatus.cancelled, status(dead));
        assertNotNull(row(dead).getFinishedAt());
    }

    @Test
    void deleteFinishedHonoursRetentionAndKeepsDeadHeads() {
        long oldSucceeded = succeededJob(T1);
        long recentSucceeded = succeededJob(T1);
        long oldCancelled = enqueue(job(T1));
        store.cancel(dsl, T1, oldCancelled);
        long deadHead = deadJob(T1, "k");                 // blocks key k
        long waitingBehindHead = enqueue(job(T1).orderingKey("k"));
        long oldDead = deadJob(T2, null);
        long veryOldDead = deadJob(T2, null);
        long pending = enqueue(job(T1));
        finishedDaysAgo(oldSucceeded, 2);
        finishedDaysAgo(oldCancelled, 2);
        finishedDaysAgo(deadHead, 60);
        finishedDaysAgo(oldDead, 2);
        finishedDaysAgo(veryOldDead, 60);

        int deleted = store.deleteFinished(dsl, Duration.ofDays(1), Duration.ofDays(30), 1000);

        assertEquals(3, deleted);
        Set<Long> left = Set.copyOf(dsl.select(JOBS.ID).from(JOBS).fetch(JOBS.ID));
        assertEquals(Set.of(recentSucceeded, deadHead, waitingBehindHead, oldDead, pending), left);
        assertTrue(row(deadHead).getKeyHead());
        assertEquals(List.of(deadHead), heads(T1, "k"));
        assertEquals(0, store.deleteFinished(dsl, Duration.ofDays(1), Duration.ofDays(30), 1000));
    }

    @Test
    void deleteFinishedWorksInBoundedBatchesOldestFirst() {
        List<Long> ids = List.of(succeededJob(T1), succeededJob(T1), succeededJob(T1));
        finishedDaysAgo(ids.get(0), 3);
        finishedDaysAgo(ids.get(1), 5);
        finishedDaysAgo(ids.get(2), 4);

        assertEquals(2, store.deleteFinished(dsl, Duration.ofDays(1), Duration.ofDays(30), 2));
        assertEquals(Set.of(ids.get(0)), Set.copyOf(dsl.select(JOBS.ID).from(JOBS).fetch(JOBS.ID)));
        assertEquals(1, store.deleteFinished(dsl, Duration.ofDays(1), Duration.ofDays(30), 2));
        assertEquals(0, countJobs());
    }

    @Test
    void deletedJobKeyCanBeUsedAgain() {
        long id = enqueue(job(T1).jobKey("nightly"));
        ClaimedJob c = admitAndClaim("w1", id);
        store.finish(dsl, "w1", List.of(new JobOutcome.Succeeded(id, c.attempt())));
        finishedDaysAgo(id, 2);
        assertEquals(1, store.deleteFinished(dsl, Duration.ofDays(1), Duration.ofDays(30), 100));

        EnqueueResult again = store.enqueue(dsl, job(T1).jobKey("nightly").build());
        assertTrue(again.created());
        assertTrue(again.job().getId() > id);
        assertEquals(1, countJobs());
    }
}

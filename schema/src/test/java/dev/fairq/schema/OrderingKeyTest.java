package dev.fairq.schema;

import dev.fairq.schema.generated.enums.JobStatus;
import org.jooq.exception.DataAccessException;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static dev.fairq.schema.generated.Tables.JOBS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Ordering keys: one head per key, only heads are admitted, and the turn passes on in id order when the
 * head finishes; dead heads block their key unless the queue says 'continue'. The last tests prove that the
 * database itself, not only the code, refuses a second active job of a key.
 */
class OrderingKeyTest extends StoreTestSupport {
    private static final String KEY = "customer-7";

    /**
     * Five jobs of KEY, enqueued singly, in a batch, and in a batch that mixes keys; returns their ids in
     * enqueue order, plus (in {@code others}) the jobs of other keys and without key.
     */
    private List<Long> enqueueFiveOfKey(List<Long> others) {
        long a = enqueue(job(T1).orderingKey(KEY));
        long b = enqueue(job(T1).orderingKey(KEY));
        List<EnqueueResult> batch = store.enqueueAll(dsl, List.of(
                job(T1).orderingKey(KEY).build(),
                job(T1).orderingKey("other-key").build(),
                job(T1).build(),
                job(T1).orderingKey(KEY).build()));
        List<EnqueueResult> batch2 = store.enqueueAll(dsl, List.of(
                job(T1).orderingKey(KEY).build(),
                job(T1).build()));
        others.add(batch.get(1).job().getId());
        others.add(batch.get(2).job().getId());
        others.add(batch2.get(1).job().getId());
        return List.of(a, b, batch.get(0).job().getId(), batch.get(3).job().getId(), batch2.get(0).job().getId());
    }

    private void assertOnlyHead(long expectedHead) {
        assertEquals(List.of(expectedHead), heads(T1, KEY), "heads of " + KEY);
    }

    private List<Long> keyCandidates() {
        List<Long> keyJobs = dsl.select(JOBS.ID).from(JOBS).where(JOBS.ORDERING_KEY.eq(KEY)).fetch(JOBS.ID);
        return candidates(T1).stream().filter(keyJobs::contains).toList();
    }

    private void succeed(String worker, ClaimedJob job) {
        assertEquals(Set.of(job.id()), store.finish(dsl, worker, List.of(new JobOutcome.Succeeded(job.id(), job.attempt()))));
    }

    @Test
    void exactlyOneHeadPerKeyAndOnlyItIsACandidate() {
        List<Long> others = new ArrayList<>();
        List<Long> ids = enqueueFiveOfKey(others);

        assertEquals(5, dsl.fetchCount(JOBS, JOBS.ORDERING_KEY.eq(KEY)));
        for (int i = 1; i < ids.size(); i++) assertTrue(ids.get(i) > ids.get(i - 1), "ids in enqueue order");
        assertOnlyHead(ids.get(0));
        assertEquals(List.of(others.get(0)), heads(T1, "other-key"));
        assertEquals(0, dsl.fetchCount(JOBS, JOBS.ORDERING_KEY.isNull().and(JOBS.KEY_HEAD)));

        List<Long> candidates = candidates(T1);
        assertEquals(Set.of(ids.get(0), others.get(0), others.get(1), others.get(2)), Set.copyOf(candidates));
        assertEquals(4, candidates.size());
    }

    @Test
    void theTurnPassesInIdOrderAsHeadsSucceed() {
        List<Long> ids = enqueueFiveOfKey(new ArrayList<>());

        for (int i = 0; i < ids.size(); i++) {
            long head = ids.get(i);
            assertOnlyHead(head);
            assertEquals(List.of(head), keyCandidates());
            ClaimedJob claimed = admitAndClaim("w1", head);
            // while the head runs, nothing of the key is admissible
            assertEquals(List.of(), keyCandidates());
            succeed("w1", claimed);
            assertEquals(JobStatus.succeeded, status(head));
            assertFalse(row(head).getKeyHead());
        }
        assertEquals(List.of(), heads(T1, KEY));
        assertEquals(5, dsl.fetchCount(JOBS, JOBS.ORDERING_KEY.eq(KEY).and(JOBS.STATUS.eq(JobStatus.succeeded))));

        // a new job of the drained key is head at once
        long late = enqueue(job(T1).orderingKey(KEY));
        assertOnlyHead(late);
        assertEquals(List.of(late), keyCandidates());
    }

    @Test
    void transientFailureKeepsTheFailedJobAsHead() {
        long first = enqueue(job(T1).orderingKey(KEY));
        long second = enqueue(job(T1).orderingKey(KEY));
        ClaimedJob claimed = admitAndClaim("w1", first);

        assertEquals(Set.of(first), store.finish(dsl, "w1",
                List.of(new JobOutcome.Failed(first, claimed.attempt(), false, 60_000, "boom"))));

        var failed = row(first);
        assertEquals(JobStatus.pending, failed.getStatus());
        assertTrue(failed.getKeyHead());
        assertEquals("boom", failed.getLastError());
        assertTrue(failed.getRunAt().isAfter(dbNow().plusSeconds(30)), "retry is scheduled in the future");
        assertEquals(1, failed.getAttempts());
        assertOnlyHead(first);
        // the failed head is not due yet, and the next job must not overtake it
        assertEquals(List.of(), keyCandidates());
        assertEquals(JobStatus.pending, status(second));
        assertFalse(row(second).getKeyHead());

        // once due again, the failed job (not the next one) is the candidate, and its next success hands on
        dsl.execute("UPDATE jobs SET run_at = now() - interval '1 second' WHERE id = ?", first);
        assertEquals(List.of(first), keyCandidates());
        ClaimedJob retry = admitAndClaim("w1", first);
        assertEquals(2, retry.attempt());
        succeed("w1", retry);
        assertOnlyHead(second);
        assertEquals(List.of(second), keyCandidates());
    }

    @Test
    void deadHeadBlocksItsKeyUntilDiscarded() {
        long first = enqueue(job(T1).orderingKey(KEY));
        long second = enqueue(job(T1).orderingKey(KEY));
        ClaimedJob claimed = admitAndClaim("w1", first);

        store.finish(dsl, "w1", List.of(new JobOutcome.Failed(first, claimed.attempt(), true, 0, "permanent")));

        assertEquals(JobStatus.dead, status(first));
        assertNotNull(row(first).getFinishedAt());
        assertOnlyHead(first);
        assertEquals(List.of(), keyCandidates());
        // the next job waits behind the dead head, not a candidate
        assertEquals(JobStatus.pending, status(second));
        assertFalse(row(second).getKeyHead());

        assertEquals(OperatorActions.ActionResult.DONE, store.discard(dsl, T1, first).result());
        assertEquals(JobStatus.cancelled, status(first));
        assertFalse(row(first).getKeyHead());
        assertOnlyHead(second);
        assertEquals(List.of(second), keyCandidates());
    }

    @Test
    void replayOfADeadHeadMakesItPendingAgainAndKeepsItsTurn() {
        long first = enqueue(job(T1).orderingKey(KEY));
        long second = enqueue(job(T1).orderingKey(KEY));
        ClaimedJob claimed = admitAndClaim("w1", first);
        store.finish(dsl, "w1", List.of(new JobOutcome.Failed(first, claimed.attempt(), true, 0, "permanent")));

        assertEquals(OperatorActions.ActionResult.DONE, store.replay(dsl, T1, first).result());

        var replayed = row(first);
        assertEquals(JobStatus.pending, replayed.getStatus());
        assertEquals(0, replayed.getAttempts());
        assertTrue(replayed.getKeyHead());
        assertEquals(null, replayed.getFinishedAt());
        assertOnlyHead(first);
        assertEquals(List.of(first), keyCandidates());

        succeed("w1", admitAndClaim("w1", first));
        assertOnlyHead(second);
    }

    @Test
    void deadHeadHandsTheKeyOnWhenTheQueueSaysContinue() {
        dsl.execute("INSERT INTO queues(name, ordering_on_dead) VALUES ('default','continue')");
        long first = enqueue(job(T1).orderingKey(KEY));
        long second = enqueue(job(T1).orderingKey(KEY));
        long third = enqueue(job(T1).orderingKey(KEY));
        ClaimedJob claimed = admitAndClaim("w1", first);

        store.finish(dsl, "w1", List.of(new JobOutcome.Failed(first, claimed.attempt(), true, 0, "permanent")));

        assertEquals(JobStatus.dead, status(first));
        assertFalse(row(first).getKeyHead());
        assertOnlyHead(second);
        assertEquals(List.of(second), keyCandidates());
        assertFalse(row(third).getKeyHead());

        // replaying the dead job now does not steal the turn: it waits, and goes next (lowest id)
        assertEquals(OperatorActions.ActionResult.DONE, store.replay(dsl, T1, first).result());
        assertEquals(JobStatus.pending, status(first));
        assertOnlyHead(second);
        succeed("w1", admitAndClaim("w1", second));
        assertOnlyHead(first);
    }

    @Test
    void continuePolicyIsPerQueue() {
        dsl.execute("INSERT INTO queues(name, ordering_on_dead) VALUES ('lenient','continue')");
        long first = enqueue(job(T1).orderingKey(KEY));
        long second = enqueue(job(T1).orderingKey(KEY));
        ClaimedJob claimed = admitAndClaim("w1", first);
        store.finish(dsl, "w1", List.of(new JobOutcome.Failed(first, claimed.attempt(), true, 0, "permanent")));

        // 'default' has no row of its own: it blocks
        assertOnlyHead(first);
        assertFalse(row(second).getKeyHead());
    }

    @Test
    void cancellingTheHeadHandsTheKeyOn() {
        long first = enqueue(job(T1).orderingKey(KEY));
        long second = enqueue(job(T1).orderingKey(KEY));
        long third = enqueue(job(T1).orderingKey(KEY));

        // cancelling a waiting job changes nothing for the head
        assertEquals(OperatorActions.ActionResult.DONE, store.cancel(dsl, T1, second).result());
        assertOnlyHead(first);

        assertEquals(OperatorActions.ActionResult.DONE, store.cancel(dsl, T1, first).result());
        assertOnlyHead(third);
        assertEquals(List.of(third), keyCandidates());
    }

    @Test
    void keysAreIndependentPerTenant() {
        long a = enqueue(job(T1).orderingKey(KEY));
        long b = enqueue(job(T2).orderingKey(KEY));
        assertEquals(List.of(a), heads(T1, KEY));
        assertEquals(List.of(b), heads(T2, KEY));
    }

    /**
     * A batch whose first job of a key is a duplicate (its job_key names a job that already finished) must
     * not leave the rest of the key without a head: they would wait forever.
     */
    @Test
    void dedupedFirstJobOfAKeyDoesNotLeaveTheKeyWithoutHead() {
        long original = enqueue(job(T1).orderingKey(KEY).jobKey("step-1"));
        succeed("w1", admitAndClaim("w1", original));
        assertEquals(List.of(), heads(T1, KEY));

        // the client retries its whole batch: step-1 is a duplicate, step-2 is new
        List<EnqueueResult> results = store.enqueueAll(dsl, List.of(
                job(T1).orderingKey(KEY).jobKey("step-1").build(),
                job(T1).orderingKey(KEY).jobKey("step-2").build()));

        assertFalse(results.get(0).created());
        assertEquals(original, results.get(0).job().getId());
        assertTrue(results.get(1).created());
        long step2 = results.get(1).job().getId();
        assertOnlyHead(step2);
        assertEquals(List.of(step2), keyCandidates());
    }

    /** The same within one batch: the would-be head duplicates the job_key of an earlier job without key. */
    @Test
    void dedupedFirstJobOfAKeyWithinOneBatchDoesNotLeaveTheKeyWithoutHead() {
        List<EnqueueResult> results = store.enqueueAll(dsl, List.of(
                job(T1).jobKey("same").build(),
                job(T1).orderingKey(KEY).jobKey("same").build(),
                job(T1).orderingKey(KEY).build()));

        assertEquals(2, countJobs());
        assertFalse(results.get(1).created());
        assertEquals(results.get(0).job().getId(), results.get(1).job().getId());
        long keyed = results.get(2).job().getId();
        assertOnlyHead(keyed);
        assertTrue(candidates(T1).contains(keyed));
    }

    /**
     * The race between an enqueue behind a head and that head finishing: the finisher's hand-on cannot see
     * the uncommitted waiting job, and the enqueue saw a head, so without the commit-time check
     * (jobs_ensure_key_head) the key would keep a pending job and no head, and nothing would admit it.
     * Deterministic: the "concurrent" finish runs on another pool connection while the enqueuing
     * transaction is open.
     */
    @Test
    void waitingJobEnqueuedWhileTheHeadFinishesIsPromoted() {
        long first = enqueue(job(T1).orderingKey(KEY));
        ClaimedJob claimed = admitAndClaim("w1", first);

        long second = dsl.transactionResult(c -> {
            long id = store.enqueue(c.dsl(), job(T1).orderingKey(KEY).build()).job().getId();
            succeed("w1", claimed);
            return id;
        });

        assertEquals(JobStatus.succeeded, status(first));
        assertOnlyHead(second);
        assertEquals(List.of(second), keyCandidates());
    }

    @Test
    void databaseRefusesTwoActiveJobsOfOneKey() {
        long first = enqueue(job(T1).orderingKey(KEY));
        long second = enqueue(job(T1).orderingKey(KEY));
        dsl.execute("UPDATE jobs SET status = 'ready' WHERE id = ?", first);

        DataAccessException e = assertThrows(DataAccessException.class,
                () -> dsl.execute("UPDATE jobs SET status = 'ready' WHERE id = ?", second));
        assertTrue(e.getMessage().contains("jobs_ordering_active_uidx"), e.getMessage());
        e = assertThrows(DataAccessException.class,
                () -> dsl.execute("UPDATE jobs SET status = 'running', locked_by = 'w' WHERE id = ?", second));
        assertTrue(e.getMessage().contains("jobs_ordering_active_uidx"), e.getMessage());

        // also when the code would admit a non-head job directly
        e = assertThrows(DataAccessException.class, () -> store.admit(dsl, List.of(second)));
        assertTrue(e.getMessage().contains("jobs_ordering_active_uidx"), e.getMessage());

        assertEquals(JobStatus.ready, status(first));
        assertEquals(JobStatus.pending, status(second));
        assertEquals(1, dsl.fetchCount(JOBS, JOBS.ORDERING_KEY.eq(KEY).and(JOBS.STATUS.in(JobStatus.ready, JobStatus.running))));
    }

    @Test
    void databaseRefusesTwoHeadsOfOneKey() {
        enqueue(job(T1).orderingKey(KEY));
        long second = enqueue(job(T1).orderingKey(KEY));

        DataAccessException e = assertThrows(DataAccessException.class,
                () -> dsl.execute("UPDATE jobs SET key_head = true WHERE id = ?", second));
        assertTrue(e.getMessage().contains("jobs_ordering_head_uidx"), e.getMessage());
        assertEquals(1, heads(T1, KEY).size());
    }
}

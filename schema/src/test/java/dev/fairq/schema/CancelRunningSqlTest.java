package dev.fairq.schema;

import dev.fairq.schema.OperatorActions.ActionResult;
import dev.fairq.schema.generated.enums.JobStatus;
import dev.fairq.schema.generated.tables.records.JobsRecord;
import org.jooq.exception.DataAccessException;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Cancelling a running job, at the SQL level: the request and its notification, the worker's fenced
 * CANCEL outcome, and every other way out of running honouring the request (a failure, the reaper, a
 * hand-back), while a success that came first is kept.
 */
class CancelRunningSqlTest extends StoreTestSupport {
    private static final Duration SHORT_LEASE = Duration.ofSeconds(1);

    private ClaimedJob running(JobRequest.Builder request) {
        return admitAndClaim("w1", enqueue(request));
    }

    private void requestCancel(long id) {
        assertEquals(ActionResult.STOPPING, store.cancel(dsl, T1, id).result());
    }

    @Test
    void theRequestIsStoredOnceAndTheWorkersAreToldTheJobIdAtCommit() throws Exception {
        long id = running(job(T1)).id();
        List<String> payloads = new ArrayList<>();
        try (Connection listen = Database.dedicated(db.jdbcUrl, db.user, db.password, "cancel-listener")) {
            try (Statement s = listen.createStatement()) {
                s.execute("LISTEN fairq_cancel");
            }
            OffsetDateTime first = dbNow();
            requestCancel(id);
            clock.advance(Duration.ofSeconds(3));
            requestCancel(id); // a second request keeps the first time
            assertEquals(first.toInstant(), row(id).getCancelRequestedAt().toInstant());

            PGConnection pg = listen.unwrap(PGConnection.class);
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (payloads.size() < 2 && System.nanoTime() < deadline) {
                PGNotification[] ns = pg.getNotifications(500);
                if (ns != null) for (PGNotification n : ns) payloads.add(n.getParameter());
            }
        }
        assertEquals(List.of(Long.toString(id), Long.toString(id)), payloads);
        JobsRecord r = row(id);
        assertEquals(JobStatus.running, r.getStatus());
        assertEquals("w1", r.getLockedBy());
    }

    @Test
    void theCancelledOutcomeIsFencedAndHandsTheOrderingKeyOn() {
        ClaimedJob head = running(job(T1).orderingKey("acct"));
        long next = enqueue(job(T1).orderingKey("acct"));
        requestCancel(head.id());

        assertEquals(Set.of(), store.finish(dsl, "w2", List.of(new JobOutcome.Cancelled(head.id(), head.attempt(), "x"))),
                "another worker's outcome");
        assertEquals(Set.of(), store.finish(dsl, "w1", List.of(new JobOutcome.Cancelled(head.id(), head.attempt() + 1, "x"))),
                "another attempt's outcome");
        assertEquals(JobStatus.running, status(head.id()));

        assertEquals(Set.of(head.id()), store.finish(dsl, "w1",
                List.of(new JobOutcome.Cancelled(head.id(), head.attempt(), "cancelled while running"))));
        JobsRecord r = row(head.id());
        assertEquals(JobStatus.cancelled, r.getStatus());
        assertEquals(dbNow().toInstant(), r.getFinishedAt().toInstant());
        assertNull(r.getLockedBy());
        assertFalse(r.getKeyHead());
        assertEquals("cancelled while running", r.getLastError());
        assertEquals(1, r.getAttempts());
        assertEquals(List.of(next), heads(T1, "acct"), "the key moved on");
        assertEquals(List.of(next), candidates(T1));
    }

    @Test
    void aFailureAfterTheRequestEndsCancelledNeverARetry() {
        ClaimedJob transientFailure = running(job(T1).orderingKey("a"));
        ClaimedJob permanentFailure = running(job(T1).orderingKey("b"));
        long behindA = enqueue(job(T1).orderingKey("a"));
        requestCancel(transientFailure.id());
        requestCancel(permanentFailure.id());

        Set<Long> recorded = store.finish(dsl, "w1", List.of(
                new JobOutcome.Failed(transientFailure.id(), 1, false, 1000, "interrupted"),
                new JobOutcome.Failed(permanentFailure.id(), 1, true, 0, "bad payload")));

        assertEquals(Set.of(transientFailure.id(), permanentFailure.id()), recorded);
        for (long id : List.of(transientFailure.id(), permanentFailure.id())) {
            JobsRecord r = row(id);
            assertEquals(JobStatus.cancelled, r.getStatus(), "job " + id);
            assertNotNull(r.getFinishedAt());
            assertFalse(r.getKeyHead());
        }
        assertEquals("interrupted", row(transientFailure.id()).getLastError());
        assertEquals(List.of(behindA), heads(T1, "a"));
        assertEquals(List.of(), heads(T1, "b"));
    }

    @Test
    void aSuccessThatCameFirstIsKeptWithTheLateRequestOnRecord() {
        ClaimedJob job = running(job(T1));
        requestCancel(job.id());
        assertEquals(Set.of(job.id()), store.finish(dsl, "w1", List.of(new JobOutcome.Succeeded(job.id(), job.attempt()))));
        JobsRecord r = row(job.id());
        assertEquals(JobStatus.succeeded, r.getStatus());
        assertNotNull(r.getCancelRequestedAt());
        // and asking again now changes nothing
        assertEquals(ActionResult.ALREADY_ENDED, store.cancel(dsl, T1, job.id()).result());
    }

    @Test
    void theReaperEndsARequestedJobCancelled() {
        long id = enqueue(job(T1).orderingKey("k"));
        long next = enqueue(job(T1).orderingKey("k"));
        store.admit(dsl, List.of(id));
        store.claim(dsl, "w1", 1, SHORT_LEASE);
        requestCancel(id);
        clock.advance(SHORT_LEASE.plusMillis(1));
        assertEquals(1, store.reapExpired(dsl, 10));
        assertEquals(JobStatus.cancelled, status(id));
        assertEquals("cancelled while running; lease expired: its worker stopped renewing it during attempt 1",
                row(id).getLastError(), "why it ended cancelled, not retried");
        assertEquals(List.of(next), heads(T1, "k"));
    }

    @Test
    void aHandBackOfARequestedJobEndsItCancelled() {
        ClaimedJob requested = running(job(T1).orderingKey("k"));
        long next = enqueue(job(T1).orderingKey("k"));
        ClaimedJob plain = running(job(T1));
        requestCancel(requested.id());

        assertEquals(2, store.release(dsl, "w1", Map.of(requested.id(), 1, plain.id(), 1)));
        assertEquals(JobStatus.cancelled, status(requested.id()));
        assertEquals(0, row(requested.id()).getAttempts(), "it never started");
        assertEquals(List.of(next), heads(T1, "k"));
        assertEquals(JobStatus.ready, status(plain.id()));
    }

    @Test
    void theFallbackCheckFindsOnlyThisWorkersRequestedAttempts() {
        ClaimedJob mine = running(job(T1));
        ClaimedJob quiet = running(job(T1));
        ClaimedJob theirs = admitAndClaim("w2", enqueue(job(T1)));
        requestCancel(mine.id());
        requestCancel(theirs.id());

        assertEquals(Set.of(mine.id()), store.leases().cancelRequested(dsl, "w1",
                Map.of(mine.id(), 1, quiet.id(), 1, theirs.id(), 1)));
        assertEquals(Set.of(), store.leases().cancelRequested(dsl, "w1", Map.of(mine.id(), 2)), "fenced on the attempt");
    }

    @Test
    void aReplayClearsTheRequestAndTheTableRefusesARequestedJobThatWaits() {
        ClaimedJob job = running(job(T1));
        requestCancel(job.id());
        store.finish(dsl, "w1", List.of(new JobOutcome.Cancelled(job.id(), 1, "stopped")));

        DataAccessException e = assertThrows(DataAccessException.class,
                () -> dsl.execute("UPDATE jobs SET status = 'pending', finished_at = NULL WHERE id = ?", job.id()));
        assertTrue(e.getMessage().contains("jobs_cancel_request_only_ends"), e.getMessage());

        assertEquals(ActionResult.DONE, store.replay(dsl, T1, job.id()).result());
        JobsRecord r = row(job.id());
        assertEquals(JobStatus.pending, r.getStatus());
        assertNull(r.getCancelRequestedAt());
    }
}

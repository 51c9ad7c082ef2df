package dev.fairq.schema;

import dev.fairq.schema.generated.enums.JobStatus;
import dev.fairq.schema.generated.tables.records.JobsRecord;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static dev.fairq.schema.generated.Tables.JOBS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The worker side: claim (with SKIP LOCKED under concurrency), lease fencing, reaper, heartbeat, release. */
class WorkerSqlTest extends StoreTestSupport {

    private List<Long> enqueueAndAdmit(int n) {
        List<JobRequest> requests = new ArrayList<>();
        for (int i = 0; i < n; i++) requests.add(job(T1).payload("{\"i\":" + i + "}").build());
        List<Long> ids = store.enqueueAll(dsl, requests).stream().map(r -> r.job().getId()).toList();
        assertEquals(n, store.admit(dsl, ids).size());
        return ids;
    }

    /** A lease short enough to lapse when the test moves the clock past it. */
    private static final Duration SHORT_LEASE = Duration.ofSeconds(1);

    /** Moves the queue's clock past every short lease; the reaper then takes the job back at once. */
    private void expireAndReap(long id) {
        clock.advance(SHORT_LEASE.plusMillis(1));
        assertTrue(store.reapExpired(dsl, 100) >= 1, "the reaper took back an expired lease");
        assertTrue(status(id) != JobStatus.running, "job " + id + " is no longer running");
    }

    /** A delay past what run_at holds is a year: the statement, and the other outcomes of its batch, go through. */
    @Test
    void aDelayBeyondAYearIsRecordedAsAYear() {
        List<Long> ids = enqueueAndAdmit(2);
        List<ClaimedJob> claimed = store.claim(dsl, "w1", 10, LEASE);
        assertEquals(2, claimed.size());
        Set<Long> recorded = store.finish(dsl, "w1", List.of(
                new JobOutcome.Failed(claimed.get(0).id(), claimed.get(0).attempt(), false, Long.MAX_VALUE, "come back never"),
                new JobOutcome.Succeeded(claimed.get(1).id(), claimed.get(1).attempt())));
        assertEquals(Set.copyOf(ids), recorded);
        long inDays = db.count("SELECT extract(day FROM run_at - now())::bigint FROM jobs WHERE id = ?", claimed.get(0).id());
        assertTrue(inDays >= 364 && inDays <= 367, "a year ahead, not " + inDays + " days");
        assertEquals(JobStatus.succeeded, status(claimed.get(1).id()));
    }

    @Test
    void claimTakesALease() {
        long id = enqueueAndAdmit(1).get(0);
        OffsetDateTime before = dbNow();

        List<ClaimedJob> claimed = store.claim(dsl, "w1", 10, LEASE);

        assertEquals(1, claimed.size());
        ClaimedJob job = claimed.get(0);
        assertEquals(id, job.id());
        assertEquals(1, job.attempt());
        assertEquals(T1, job.tenantId());
        assertEquals("send-email", job.type());
        assertEquals("{\"i\": 0}", job.payloadJson());
        JobsRecord r = row(id);
        assertEquals(JobStatus.running, r.getStatus());
        assertEquals("w1", r.getLockedBy());
        assertEquals(1, r.getAttempts());
        assertNotNull(r.getStartedAt());
        assertEquals(r.getStartedAt().toInstant(), job.startedAt().toInstant(), "the claim's time on the database's clock");
        assertTrue(r.getLockedUntil().isAfter(dbNow()), "lease in the future");
        assertFalse(r.getLockedUntil().isBefore(before.plus(LEASE)), "lease is as long as asked");

        // nothing else is ready
        assertEquals(List.of(), store.claim(dsl, "w2", 10, LEASE));
    }

    @Test
    void claimFollowsAdmissionOrderNotIdOrder() {
        List<Long> ids = new ArrayList<>();
        for (int i = 0; i < 5; i++) ids.add(enqueue(job(T1)));
        List<Long> order = List.of(ids.get(3), ids.get(0), ids.get(4));
        assertEquals(Set.copyOf(order), Set.copyOf(store.admit(dsl, order)));
        List<Long> later = List.of(ids.get(2), ids.get(1));
        store.admit(dsl, later);

        List<Long> claimed = new ArrayList<>();
        for (int i = 0; i < 5; i++) claimed.addAll(store.claim(dsl, "w1", 1, LEASE).stream().map(ClaimedJob::id).toList());

        assertEquals(List.of(ids.get(3), ids.get(0), ids.get(4), ids.get(2), ids.get(1)), claimed);
    }

    @Test
    void admitSkipsJobsThatAreNoLongerPending() {
        long a = enqueue(job(T1));
        long b = enqueue(job(T1));
        assertEquals(OperatorActions.ActionResult.DONE, store.cancel(dsl, T1, b).result());

        assertEquals(List.of(a), store.admit(dsl, List.of(a, b)));
        assertEquals(JobStatus.cancelled, status(b));
        // admitting twice does not renumber
        assertEquals(List.of(), store.admit(dsl, List.of(a)));
    }

    @Test
    void concurrentClaimersNeverShareAJob() throws Exception {
        int total = 500;
        int threads = 8;
        Set<Long> all = Set.copyOf(enqueueAndAdmit(total));
        CyclicBarrier start = new CyclicBarrier(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<List<Long>>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                String worker = "w" + t;
                futures.add(pool.submit(() -> {
                    List<Long> mine = new ArrayList<>();
                    start.await(60, TimeUnit.SECONDS);
                    while (true) {
                        List<ClaimedJob> batch = store.claim(db.dsl(), worker, 10, LEASE);
                        assertTrue(batch.size() <= 10);
                        for (ClaimedJob j : batch) {
                            assertEquals(1, j.attempt());
                            mine.add(j.id());
                        }
                        // SKIP LOCKED may return nothing while others hold the last rows: stop only when none is left
                        if (batch.isEmpty() && db.dsl().fetchCount(JOBS, JOBS.STATUS.eq(JobStatus.ready)) == 0) break;
                    }
                    return mine;
                }));
            }
            List<Long> claimed = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                List<Long> mine = get(futures.get(t));
                claimed.addAll(mine);
                // the database agrees on who holds each job
                assertEquals(mine.size(), dsl.fetchCount(JOBS, JOBS.LOCKED_BY.eq("w" + t)));
            }

            assertEquals(total, claimed.size(), "claims in total");
            assertEquals(total, new HashSet<>(claimed).size(), "a job was claimed twice");
            assertEquals(all, new HashSet<>(claimed));
            assertEquals(total, dsl.fetchCount(JOBS, JOBS.STATUS.eq(JobStatus.running).and(JOBS.ATTEMPTS.eq(1))));
        } finally {
            shutdown(pool);
        }
    }

    @Test
    void lateFinishAfterTheLeaseWasReapedIsDropped() {
        long id = enqueueAndAdmit(1).get(0);
        ClaimedJob w1 = store.claim(dsl, "w1", 1, SHORT_LEASE).get(0);
        assertEquals(1, w1.attempt());

        expireAndReap(id);
        JobsRecord reaped = row(id);
        assertEquals(JobStatus.pending, reaped.getStatus());
        assertNull(reaped.getLockedBy());
        assertNull(reaped.getLockedUntil());
        assertEquals(1, reaped.getAttempts());
        assertTrue(reaped.getLastError().contains("lease expired: its worker stopped renewing it during attempt 1"), reaped.getLastError());

        // w1 comes back late: its result is dropped
        assertEquals(Set.of(), store.finish(dsl, "w1", List.of(new JobOutcome.Succeeded(id, w1.attempt()))));
        assertEquals(JobStatus.pending, status(id));
        assertEquals(Set.of(), store.finish(dsl, "w1",
                List.of(new JobOutcome.Failed(id, w1.attempt(), true, 0, "late"))));
        assertEquals(JobStatus.pending, status(id));

        // the job runs again on w2
        assertEquals(List.of(id), candidates(T1));
        ClaimedJob w2 = admitAndClaim("w2", id);
        assertEquals(2, w2.attempt());

        // w1's old attempt changes nothing while w2 holds the job
        assertEquals(Set.of(), store.finish(dsl, "w1", List.of(new JobOutcome.Succeeded(id, w1.attempt()))));
        assertEquals(JobStatus.running, status(id));
        assertEquals("w2", row(id).getLockedBy());

        assertEquals(Set.of(id), store.finish(dsl, "w2", List.of(new JobOutcome.Succeeded(id, w2.attempt()))));
        JobsRecord done = row(id);
        assertEquals(JobStatus.succeeded, done.getStatus());
        assertNull(done.getLockedBy());
        assertNotNull(done.getFinishedAt());
        assertEquals(2, done.getAttempts());
    }

    @Test
    void attemptNumberFencesTheSameWorker() {
        long id = enqueueAndAdmit(1).get(0);
        ClaimedJob first = store.claim(dsl, "w1", 1, SHORT_LEASE).get(0);
        expireAndReap(id);
        // the same worker id claims the job again (e.g. a restarted process with a stable id)
        ClaimedJob second = admitAndClaim("w1", id);
        assertEquals(first.attempt() + 1, second.attempt());

        assertEquals(Set.of(), store.finish(dsl, "w1", List.of(new JobOutcome.Succeeded(id, first.attempt()))));
        assertEquals(JobStatus.running, status(id));
        assertEquals(Set.of(id), store.finish(dsl, "w1", List.of(new JobOutcome.Succeeded(id, second.attempt()))));
        assertEquals(JobStatus.succeeded, status(id));
    }

    @Test
    void reapingTheLastAttemptMakesTheJobDead() {
        long id = enqueue(job(T1).maxAttempts(1));
        store.admit(dsl, List.of(id));
        assertEquals(1, store.claim(dsl, "w1", 1, SHORT_LEASE).get(0).attempt());

        expireAndReap(id);

        JobsRecord dead = row(id);
        assertEquals(JobStatus.dead, dead.getStatus());
        assertNotNull(dead.getFinishedAt());
        assertNull(dead.getLockedBy());
        assertEquals(1, dead.getAttempts());
        assertEquals(List.of(), candidates(T1));
    }

    @Test
    void reaperLeavesLiveLeasesAlone() {
        List<Long> ids = enqueueAndAdmit(2);
        long shortLease = store.claim(dsl, "w1", 1, SHORT_LEASE).get(0).id();
        long longLease = store.claim(dsl, "w2", 1, LEASE).get(0).id();

        expireAndReap(shortLease);

        assertEquals(Set.copyOf(ids), Set.of(shortLease, longLease));
        assertEquals(JobStatus.pending, status(shortLease));
        assertEquals(JobStatus.running, status(longLease));
        assertEquals("w2", row(longLease).getLockedBy());
        assertEquals(0, store.reapExpired(dsl, 100));
    }

    @Test
    void reapedHeadKeepsItsTurnAndADeadReapedHeadBlocks() {
        long first = enqueue(job(T1).orderingKey("k").maxAttempts(2));
        long second = enqueue(job(T1).orderingKey("k"));
        store.admit(dsl, List.of(first));
        store.claim(dsl, "w1", 1, SHORT_LEASE);
        expireAndReap(first);
        assertEquals(List.of(first), heads(T1, "k"));
        assertEquals(List.of(first), candidates(T1));

        store.admit(dsl, List.of(first));
        assertEquals(2, store.claim(dsl, "w1", 1, SHORT_LEASE).get(0).attempt());
        expireAndReap(first);
        assertEquals(JobStatus.dead, status(first));
        assertEquals(List.of(first), heads(T1, "k"));
        assertEquals(List.of(), candidates(T1));
        assertFalse(row(second).getKeyHead());
    }

    @Test
    void heartbeatExtendsOnlyTheWorkersOwnLeases() {
        List<Long> ids = enqueueAndAdmit(3);
        Set<Long> w1Jobs = new HashSet<>();
        for (ClaimedJob j : store.claim(dsl, "w1", 2, LEASE)) w1Jobs.add(j.id());
        long w2Job = store.claim(dsl, "w2", 1, LEASE).get(0).id();
        assertEquals(Set.copyOf(ids), union(w1Jobs, Set.of(w2Job)));
        OffsetDateTime w2Until = row(w2Job).getLockedUntil();

        Map<Long, Integer> asked = firstAttempts(union(w1Jobs, Set.of(w2Job)));
        Set<Long> held = store.heartbeat(dsl, "w1", 4, asked, Duration.ofMinutes(10));

        assertEquals(w1Jobs, held);
        OffsetDateTime now = dbNow();
        for (long id : w1Jobs) {
            assertTrue(row(id).getLockedUntil().isAfter(now.plusMinutes(9)), "w1's lease extended");
        }
        assertEquals(w2Until, row(w2Job).getLockedUntil(), "w2's lease untouched");
        assertEquals(1, dsl.fetchCount(dsl.selectFrom("workers").where("id = 'w1' AND capacity = 4")));
    }

    @Test
    void heartbeatDoesNotReviveLeasesThatWereReaped() {
        long id = enqueueAndAdmit(1).get(0);
        store.claim(dsl, "w1", 1, SHORT_LEASE);
        expireAndReap(id);

        assertEquals(Set.of(), store.heartbeat(dsl, "w1", 1, Map.of(id, 1), LEASE));
        JobsRecord r = row(id);
        assertEquals(JobStatus.pending, r.getStatus());
        assertNull(r.getLockedUntil());
    }

    /**
     * The same worker claimed the job again after the reaper took its first attempt back: the heartbeat of
     * the first attempt must not keep the second alive (nor claim it as its own), and a hand-back of the
     * first attempt must not touch the second.
     */
    @Test
    void heartbeatAndReleaseAreFencedOnTheAttempt() {
        long id = enqueueAndAdmit(1).get(0);
        store.claim(dsl, "w1", 1, SHORT_LEASE);
        expireAndReap(id);
        store.admit(dsl, List.of(id));
        assertEquals(2, store.claim(dsl, "w1", 1, LEASE).get(0).attempt());
        OffsetDateTime until = row(id).getLockedUntil();
        clock.advance(Duration.ofSeconds(5));

        assertEquals(Set.of(), store.heartbeat(dsl, "w1", 1, Map.of(id, 1), LEASE), "attempt 1 is gone");
        assertEquals(until, row(id).getLockedUntil(), "attempt 2's lease untouched by attempt 1's heartbeat");
        assertEquals(0, store.release(dsl, "w1", Map.of(id, 1)), "attempt 1 cannot hand back attempt 2");
        assertEquals(JobStatus.running, status(id));
        assertEquals(2, row(id).getAttempts());

        assertEquals(Set.of(id), store.heartbeat(dsl, "w1", 1, Map.of(id, 2), LEASE));
        assertTrue(row(id).getLockedUntil().isAfter(until));
    }

    @Test
    void claimCarriesTheJobsTimeLimit() {
        long limited = enqueue(job(T1).timeout(Duration.ofMillis(1500)));
        long byType = enqueue(job(T1));
        store.admit(dsl, List.of(limited, byType));
        Map<Long, Integer> timeouts = new java.util.HashMap<>();
        for (ClaimedJob j : store.claim(dsl, "w1", 10, LEASE)) timeouts.put(j.id(), j.timeoutMs());
        assertEquals(1500, timeouts.get(limited));
        assertTrue(timeouts.containsKey(byType));
        assertNull(timeouts.get(byType), "no limit of its own: the type's default applies");
        assertEquals(1500, row(limited).getTimeoutMs());
    }

    @Test
    void releasePutsClaimedJobsBackToReady() {
        List<Long> ids = enqueueAndAdmit(3);
        List<ClaimedJob> claimed = store.claim(dsl, "w1", 3, LEASE);
        assertEquals(ids, claimed.stream().map(ClaimedJob::id).toList());
        List<Long> back = List.of(ids.get(0), ids.get(1));

        // another worker cannot release w1's jobs
        assertEquals(0, store.release(dsl, "w2", firstAttempts(back)));
        assertEquals(3, dsl.fetchCount(JOBS, JOBS.STATUS.eq(JobStatus.running)));

        assertEquals(2, store.release(dsl, "w1", firstAttempts(back)));

        for (long id : back) {
            JobsRecord r = row(id);
            assertEquals(JobStatus.ready, r.getStatus());
            assertEquals(0, r.getAttempts());
            assertNull(r.getLockedBy());
            assertNull(r.getLockedUntil());
            assertNull(r.getStartedAt());
        }
        assertEquals(JobStatus.running, status(ids.get(2)));
        assertEquals(1, row(ids.get(2)).getAttempts());

        // released jobs are claimed again, in their old order, with attempt 1 again
        List<ClaimedJob> again = store.claim(dsl, "w2", 10, LEASE);
        assertEquals(back, again.stream().map(ClaimedJob::id).toList());
        assertTrue(again.stream().allMatch(j -> j.attempt() == 1));
    }

    @Test
    void loadCountsReadyRunningAndLiveCapacity() {
        enqueueAndAdmit(3);
        store.claim(dsl, "w1", 1, LEASE);
        store.leases().registerWorker(dsl, "w1", 8);
        long t2 = enqueue(job(T2));
        store.admit(dsl, List.of(t2));

        Admission.QueueLoad load = store.load(dsl, Duration.ofMinutes(1));
        assertEquals(2, load.ready(T1));
        assertEquals(1, load.running(T1));
        assertEquals(1, load.ready(T2));
        assertEquals(0, load.running(T2));
        assertEquals(8, load.workerCapacity());

        // nothing is pending any more
        assertEquals(List.of(), store.tenantsWithWork(dsl));
        assertEquals(Map.of(), store.admissionCandidates(dsl, Map.of(T1, 10, T2, 10)));
    }

    @Test
    void tenantsWithWorkListsTenantsWithAdmissiblePendingJobs() {
        db.createTenant("zeta");
        enqueue(job("zeta"));
        enqueue(job(T2).orderingKey("k"));
        long waiting = enqueue(job(T2).orderingKey("k"));
        long notDue = enqueue(job(T1).delay(Duration.ofHours(1)));

        assertEquals(List.of(T1, T2, "zeta"), store.tenantsWithWork(dsl));
        Map<String, List<Long>> candidates = store.admissionCandidates(dsl, Map.of(T1, 10, T2, 10, "zeta", 10));
        assertFalse(candidates.containsKey(T1), "a job that is not due is no candidate: " + notDue);
        assertEquals(1, candidates.get(T2).size());
        assertFalse(candidates.get(T2).contains(waiting));
        assertEquals(1, candidates.get("zeta").size());
    }

    @Test
    void unadmitPausedReturnsOnlyThePausedTenantsReadyJobs() {
        long a = enqueue(job(T1));
        long b = enqueue(job(T1));
        long c = enqueue(job(T2));
        store.admit(dsl, List.of(a, b, c));
        store.claim(dsl, "w1", 1, LEASE);          // a starts before the pause

        assertEquals(1, store.admission().unadmitPaused(dsl, List.of(T1)));

        assertEquals(JobStatus.running, status(a));
        assertEquals(JobStatus.pending, status(b));
        assertNull(row(b).getReadyRank());
        assertEquals(JobStatus.ready, status(c));
        assertEquals(List.of(c), store.claim(dsl, "w1", 10, LEASE).stream().map(ClaimedJob::id).toList());
    }

    private static Map<Long, Integer> firstAttempts(java.util.Collection<Long> ids) {
        Map<Long, Integer> m = new java.util.HashMap<>();
        for (long id : ids) m.put(id, 1);
        return m;
    }

    private static Set<Long> union(Set<Long> a, Set<Long> b) {
        Set<Long> u = new HashSet<>(a);
        u.addAll(b);
        return u;
    }
}

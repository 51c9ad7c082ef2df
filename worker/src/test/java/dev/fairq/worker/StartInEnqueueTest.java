package dev.fairq.worker;

import dev.fairq.schema.Database;
import dev.fairq.schema.EnqueueResult;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.generated.enums.JobStatus;
import org.jooq.exception.DataAccessException;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A job a tenant grant admits in its enqueue starts on a free thread of this process's worker without a claim
 * (LocalStarts): inserted running under the worker's lease, started once its commit names it. The grant rows are
 * written by the test (no scheduler), so only the enqueue and the worker decide.
 */
class StartInEnqueueTest extends PlatformTest {
    private final List<Long> ran = new CopyOnWriteArrayList<>();
    private final AtomicInteger claimedJobs = new AtomicInteger();
    private final WorkerObserver observer = new WorkerObserver() {
        @Override public void claimed(int jobs, long nanos) {
            claimedJobs.addAndGet(jobs);
        }
    };

    private HandlerRegistry handlers(CountDownLatch hold) {
        HandlerRegistry h = new HandlerRegistry();
        h.register("noop", job -> ran.add(job.jobId()));
        h.register("hold", job -> {
            ran.add(job.jobId());
            if (!hold.await(30, TimeUnit.SECONDS)) throw new IllegalStateException("never released");
        });
        return h;
    }

    /**
     * Heartbeats every 20 minutes: the heartbeat's fallback (it starts a committed job the notification did not)
     * cannot act within a test, so each start here is the notification's or the caller's.
     */
    private static WorkerConfig config(int threads) {
        return TestPlatform.fastConfig("w1", threads).toBuilder().lease(Duration.ofHours(1), Duration.ofMinutes(20)).build();
    }

    /** A worker, once it listens (only then does it take jobs in their enqueue). */
    private Worker start(WorkerConfig config, HandlerRegistry handlers) {
        Worker w = platform.startWorker(config, handlers, observer);
        await().atMost(Duration.ofSeconds(10)).until(w::takesStartsInEnqueue);
        return w;
    }

    /** As the scheduler grants (Admission.GRANT): a used grant (V15) becomes the tenant's grant again. */
    private void grant(String tenant) {
        db.dsl().execute("INSERT INTO admission_grants (tenant_id) VALUES (?) ON CONFLICT (tenant_id, slot) "
                + "DO UPDATE SET granted_at = now(), used_at = NULL", tenant);
    }

    private String status(long id) {
        return db.dsl().fetchValue("SELECT status::text FROM jobs WHERE id = ?", id).toString();
    }

    @Test
    void aGrantedJobIsInsertedRunningAndStartsWithoutAClaim() {
        Worker w = start(config(2), handlers(new CountDownLatch(0)));
        grant("acme");
        EnqueueResult r = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "noop").build());
        assertEquals(JobStatus.running, r.job().getStatus());
        assertEquals("w1", r.job().getLockedBy());
        assertEquals(1, r.job().getAttempts());
        long id = r.job().getId();
        await().atMost(Duration.ofSeconds(10)).until(() -> "succeeded".equals(status(id)));
        assertEquals(List.of(id), ran);
        assertEquals(0, claimedJobs.get(), "no claim took it");
        assertEquals(0, db.count("SELECT count(*) FROM admission_grants WHERE used_at IS NULL"), "the grant was used");
        assertEquals(1, db.count("SELECT attempts FROM jobs WHERE id = ?", id));
        await().atMost(Duration.ofSeconds(5)).until(() -> w.heldCount() == 0);

        // without a grant the job waits for the scheduler, as before, and takes no thread
        EnqueueResult pending = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "noop").build());
        assertEquals(JobStatus.pending, pending.job().getStatus());
        assertNull(pending.job().getLockedBy());
    }

    /**
     * JobStore#submit, an application's enqueue in a transaction of its own: a granted job starts on a free thread
     * without a claim (no notification either: the caller hands it over after the commit), a granted job no thread
     * here runs is inserted ready and the workers are woken, a job_key replay writes nothing, and inside a caller's
     * transaction it refuses to run, since its commit would be the caller's.
     */
    @Test
    void submitStartsAGrantedJobAtItsCommitWakesTheWorkersForAReadyOneAndRefusesACallersTransaction() {
        Worker w = start(config(2), handlers(new CountDownLatch(0)));
        grant("acme");
        EnqueueResult r = platform.store.submit(db.dsl(), JobRequest.builder("acme", "noop").build());
        assertTrue(r.created());
        assertEquals(JobStatus.running, r.job().getStatus());
        assertEquals("w1", r.job().getLockedBy());
        long id = r.job().getId();
        await().atMost(Duration.ofSeconds(10)).until(() -> "succeeded".equals(status(id)));
        assertEquals(List.of(id), ran);
        assertEquals(0, claimedJobs.get(), "no claim took it");
        await().atMost(Duration.ofSeconds(5)).until(() -> w.heldCount() == 0);

        assertThrows(dev.fairq.schema.UnknownTenantException.class, () -> platform.store.submit(db.dsl(), List.of(
                JobRequest.builder("acme", "noop").build(), JobRequest.builder("no-such-tenant", "noop").build())));
        assertEquals(1, db.count("SELECT count(*) FROM jobs"), "a batch with an unknown tenant wrote nothing");

        assertThrows(IllegalStateException.class, () -> db.dsl().transaction(c ->
                platform.store.submit(c.dsl(), JobRequest.builder("acme", "noop").build())));
        assertEquals(1, db.count("SELECT count(*) FROM jobs"), "nothing written in the caller's transaction");

        // without a grant: pending, for the scheduler; a replay of its job_key returns it and writes nothing
        List<EnqueueResult> two = platform.store.submit(db.dsl(), List.of(
                JobRequest.builder("acme", "noop").jobKey("k1").build(), JobRequest.builder("acme", "noop").build()));
        assertEquals(List.of(JobStatus.pending, JobStatus.pending), two.stream().map(x -> x.job().getStatus()).toList());
        EnqueueResult replay = platform.store.submit(db.dsl(), JobRequest.builder("acme", "noop").jobKey("k1").build());
        assertTrue(!replay.created() && replay.job().getId().equals(two.get(0).job().getId()));
        assertEquals(3, db.count("SELECT count(*) FROM jobs"));
        assertEquals(List.of(id), ran);

        // a granted job no thread here runs (no handler for its type) is inserted ready, and submit wakes the
        // workers after its commit (its statement does not); nothing else here notifies fairq_ready
        try (Connection listen = Database.dedicated(db.jdbcUrl, db.user, db.password, "submit-test-listen")) {
            try (var st = listen.createStatement()) {
                st.execute("LISTEN fairq_ready");
            }
            grant("acme");
            assertEquals(JobStatus.ready, platform.store.submit(db.dsl(), JobRequest.builder("acme", "elsewhere").build()).job().getStatus());
            org.postgresql.PGConnection pg = listen.unwrap(org.postgresql.PGConnection.class);
            AtomicInteger woken = new AtomicInteger();
            await().atMost(Duration.ofSeconds(10)).until(() -> {
                org.postgresql.PGNotification[] ns = pg.getNotifications(100);
                if (ns != null) woken.addAndGet(ns.length);
                return woken.get() > 0;
            });
        } catch (SQLException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void aJobOfATypeWithoutAHandlerHereOrWithAnOrderingKeyIsInsertedReady() {
        start(config(2), handlers(new CountDownLatch(0)));
        grant("acme");
        assertEquals(JobStatus.ready, platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "elsewhere").build()).job().getStatus());
        db.dsl().execute("DELETE FROM jobs");
        grant("acme");
        assertEquals(JobStatus.pending, platform.store.enqueue(db.dsl(),
                JobRequest.builder("acme", "noop").orderingKey("order-1").build()).job().getStatus());
        assertEquals(1, db.count("SELECT count(*) FROM admission_grants WHERE used_at IS NULL"), "an ordering key takes no grant");
    }

    /** A one-thread worker whose thread runs a job started in its enqueue until {@code hold} opens; the job's id. */
    private long holdTheOnlyThread(CountDownLatch hold) {
        start(config(1), handlers(hold));
        grant("acme");
        long id = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "hold").build()).job().getId();
        await().atMost(Duration.ofSeconds(10)).until(() -> ran.contains(id));
        return id;
    }

    @Test
    void noFreeThreadNoStartInTheEnqueue() {
        CountDownLatch hold = new CountDownLatch(1);
        try {
            holdTheOnlyThread(hold);
            grant("acme");
            EnqueueResult r = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "noop").build());
            // busy, and no thread has freed up yet to say how soon one will (QueuedStartInEnqueueTest: when one has)
            assertEquals(JobStatus.ready, r.job().getStatus(), "the only thread is busy: the job waits in the ready buffer");
            hold.countDown();
            await().atMost(Duration.ofSeconds(10)).until(() -> "succeeded".equals(status(r.job().getId())));
            assertEquals(1, claimedJobs.get(), "the ready one was claimed");
        } finally {
            hold.countDown();
        }
    }

    @Test
    void aRolledBackEnqueueRunsNothingUsesNoGrantAndLeavesNoThreadTaken() {
        Worker w = start(config(1), handlers(new CountDownLatch(0)));
        grant("acme");
        assertThrows(DataAccessException.class, () -> db.dsl().transaction(c -> {
            EnqueueResult r = platform.store.enqueue(c.dsl(), JobRequest.builder("acme", "noop").build());
            assertEquals(JobStatus.running, r.job().getStatus());
            throw new SQLException("the application's transaction fails after the enqueue");
        }));
        assertEquals(0, db.count("SELECT count(*) FROM jobs"));
        assertEquals(1, db.count("SELECT count(*) FROM admission_grants WHERE used_at IS NULL"), "the grant's use was rolled back with it");
        // the thread counts as free again once the slot's hold is over: the next granted job starts in its enqueue
        await().atMost(Duration.ofSeconds(10)).until(() -> w.threadsHeldForStartsInEnqueue() == 0);
        assertEquals(JobStatus.running, platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "noop").build()).job().getStatus());
        await().atMost(Duration.ofSeconds(10)).until(() -> ran.size() == 1);
        assertEquals(1, db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded'"));
    }

    @Test
    void theLeaseRunsFromTheStatementNotFromTheTransactionsStart() {
        start(config(2), handlers(new CountDownLatch(0)));
        grant("acme");
        long[] id = new long[1];
        db.dsl().transaction(c -> {
            c.dsl().execute("SELECT pg_sleep(0.5)"); // the application's own work first: now() stays at the start
            id[0] = platform.store.enqueue(c.dsl(), JobRequest.builder("acme", "noop").build()).job().getId();
            assertTrue(c.dsl().fetchValue("SELECT locked_until - created_at >= interval '1 hour 0.5 second' FROM jobs WHERE id = ?",
                    id[0]).equals(Boolean.TRUE), "the hour's lease counts from the statement, half a second after now()");
            assertTrue(c.dsl().fetchValue("SELECT started_at = created_at AND admitted_at = created_at FROM jobs WHERE id = ?",
                    id[0]).equals(Boolean.TRUE));
        });
        await().atMost(Duration.ofSeconds(10)).until(() -> "succeeded".equals(status(id[0])));
    }

    @Test
    void aCommitLongAfterTheStatementStillStartsTheJobOnce() throws Exception {
        Worker w = start(config(2), handlers(new CountDownLatch(0)));
        grant("acme");
        long[] id = new long[1];
        db.dsl().transaction(c -> {
            id[0] = platform.store.enqueue(c.dsl(), JobRequest.builder("acme", "noop").build()).job().getId();
            // past the slot's hold: the thread counts as free for claims meanwhile, the job still starts at the commit
            await().atMost(Duration.ofSeconds(10)).until(() -> w.threadsHeldForStartsInEnqueue() == 0);
            assertTrue(ran.isEmpty(), "nothing starts before the commit");
        });
        await().atMost(Duration.ofSeconds(10)).until(() -> "succeeded".equals(status(id[0])));
        assertEquals(List.of(id[0]), ran);
        assertEquals(1, db.count("SELECT attempts FROM jobs WHERE id = ?", id[0]));
    }

    /**
     * An application's transaction that commits after the job's lease ran out: the job is handed back, the attempt
     * not counted, and runs (it was forgotten at its lease's end and reaped with the attempt counted: at max_attempts
     * 1, dead without a run). No reaper here, so only the worker's hand-back can move it.
     */
    @Test
    void aCommitAfterTheLeaseRanOutHandsTheJobBackAndItRunsWithoutAnAttemptLost() {
        start(TestPlatform.fastConfig("w1", 2).toBuilder().lease(Duration.ofSeconds(2), Duration.ofMillis(500))
                .reapInterval(Duration.ofHours(1)).build(), handlers(new CountDownLatch(0)));
        grant("acme");
        long[] id = new long[1];
        db.dsl().transaction(c -> {
            id[0] = platform.store.enqueue(c.dsl(), JobRequest.builder("acme", "noop").maxAttempts(1).build()).job().getId();
            assertEquals("running", status(c.dsl(), id[0]));
            // the application's own work goes on past the lease (and past the heartbeats after its end)
            await().atMost(Duration.ofSeconds(30)).until(() -> Boolean.TRUE.equals(c.dsl().fetchValue(
                    "SELECT locked_until < clock_timestamp() - interval '1 second' FROM jobs WHERE id = ?", id[0])));
        });
        await().atMost(Duration.ofSeconds(20)).until(() -> "succeeded".equals(status(id[0])));
        assertEquals(List.of(id[0]), ran);
        assertEquals(1, db.count("SELECT attempts FROM jobs WHERE id = ?", id[0]), "the handed-back attempt is not counted");
    }

    /**
     * The same late commit when the worker that awaited it is gone by then (stopped; a restart of the application's
     * process is the same): nobody hands the job back, and it was committed running under a lapsed lease, for any
     * reaper to take with the attempt counted (at max_attempts 1: dead without a run). The commit hands it back
     * itself (V23), so the reaper finds nothing and another worker runs it, once, on its first attempt.
     */
    @Test
    void aCommitAfterTheLeaseOfAWorkerThatIsGoneHandsTheJobBackAtTheCommitAndNoReaperCountsTheAttempt() throws Exception {
        Worker w = start(TestPlatform.fastConfig("w1", 2).toBuilder().lease(Duration.ofSeconds(2), Duration.ofMillis(500))
                .reapInterval(Duration.ofHours(1)).build(), handlers(new CountDownLatch(0)));
        grant("acme");
        OpenEnqueue app = openEnqueue(JobRequest.builder("acme", "noop").maxAttempts(1).build(), c -> {
            w.close(); // the application stops its worker (or its process restarts) while the transaction is open
            await().atMost(Duration.ofSeconds(30)).until(() -> Boolean.TRUE.equals(c.fetchValue(
                    "SELECT locked_until < clock_timestamp() FROM jobs WHERE locked_by = 'w1'")));
        });
        long id = app.commit();
        assertEquals(0, platform.store.reapExpired(db.dsl(), 100), "nothing running under a lapsed lease");
        assertEquals("ready", status(id));
        assertEquals(0, db.count("SELECT attempts FROM jobs WHERE id = ?", id));
        start(TestPlatform.fastConfig("w2", 2), handlers(new CountDownLatch(0)));
        await().atMost(Duration.ofSeconds(20)).until(() -> "succeeded".equals(status(id)));
        assertEquals(List.of(id), ran);
        assertEquals(1, db.count("SELECT attempts FROM jobs WHERE id = ?", id));
    }

    /** A commit within the lease leaves the job to its worker: the commit's check hands back only a lapsed lease. */
    @Test
    void aCommitWithinTheLeaseIsNotHandedBack() throws Exception {
        start(config(2), handlers(new CountDownLatch(0)));
        grant("acme");
        OpenEnqueue app = openEnqueue(JobRequest.builder("acme", "noop").build(), c -> { });
        long id = app.commit();
        await().atMost(Duration.ofSeconds(10)).until(() -> "succeeded".equals(status(id)));
        assertEquals(List.of(id), ran);
        assertEquals(0, claimedJobs.get(), "started at its commit, not handed back and claimed");
    }

    /**
     * The worker remembers at most 1,024 jobs awaiting their commit, and rolled-back enqueues stay among them for an
     * hour (nobody names them). An open transaction's job must not be the one dropped for room: its commit would then
     * start nothing, and the job sat running under a lease nobody renewed until a reaper took it back, the attempt
     * counted. At the bound the worker takes no more jobs in their enqueue (they are inserted ready, as with no thread).
     */
    @Test
    void rolledBackEnqueuesBeyondTheBoundDoNotMakeTheWorkerForgetAnOpenTransactionsJob() throws Exception {
        Worker w = start(config(64), handlers(new CountDownLatch(0)));
        grant("acme");
        OpenEnqueue app = openEnqueue();
        assertEquals(1, w.awaitingCommitCount());
        // a spare grant for the others: the open transaction holds the first one locked
        db.dsl().execute("INSERT INTO admission_grants (tenant_id, slot) VALUES ('acme', 1)");
        // an application whose transactions fail after their enqueue, over and over (each rollback gives the grant back)
        JobStatus last = null;
        for (int i = 0; i < 20_000 && (w.awaitingCommitCount() < Worker.AWAITING_COMMIT_MAX || last == JobStatus.running); i++) {
            AtomicReference<JobStatus> s = new AtomicReference<>();
            assertThrows(DataAccessException.class, () -> db.dsl().transaction(c -> {
                s.set(platform.store.enqueue(c.dsl(), JobRequest.builder("acme", "noop").build()).job().getStatus());
                throw new SQLException("rolled back");
            }));
            last = s.get();
        }
        assertEquals(Worker.AWAITING_COMMIT_MAX, w.awaitingCommitCount());
        assertEquals(JobStatus.ready, last, "at the bound a job is inserted ready, not taken in its enqueue");
        long id = app.commit();
        await().atMost(Duration.ofSeconds(20)).until(() -> "succeeded".equals(status(id)));
        assertEquals(List.of(id), ran);
        assertEquals(1, db.count("SELECT attempts FROM jobs WHERE id = ?", id));
        assertEquals(0, db.count("SELECT count(*) FROM jobs WHERE id <> ?", id), "the rolled-back ones left nothing");
    }

    /**
     * Rolled-back enqueues (a transaction, or the savepoint around the enqueue) are never named by a commit: the
     * heartbeat forgets those whose transaction has ended, and keeps an open transaction's job, which then starts
     * at its commit. Remembered for the hour, they filled the 1,024 entries and no job was taken in its enqueue.
     */
    @Test
    void rolledBackEnqueuesAreForgottenAtAHeartbeatAndAnOpenTransactionsJobIsKept() throws Exception {
        Worker w = start(TestPlatform.fastConfig("w1", 4), handlers(new CountDownLatch(0))); // a heartbeat a second
        grant("acme");
        OpenEnqueue app = openEnqueue();
        db.dsl().execute("INSERT INTO admission_grants (tenant_id, slot) VALUES ('acme', 1)"); // the open one holds the first
        assertThrows(DataAccessException.class, () -> db.dsl().transaction(c -> {
            assertEquals(JobStatus.running, platform.store.enqueue(c.dsl(), JobRequest.builder("acme", "noop").build()).job().getStatus());
            throw new SQLException("rolled back");
        }));
        db.dsl().transaction(c -> {
            assertThrows(DataAccessException.class, () -> c.dsl().transaction(sp -> {
                assertEquals(JobStatus.running, platform.store.enqueue(sp.dsl(), JobRequest.builder("acme", "noop").build()).job().getStatus());
                throw new SQLException("back to the savepoint");
            }));
        });
        await().atMost(Duration.ofSeconds(20)).until(() -> w.awaitingCommitCount() == 1);
        long id = app.commit();
        await().atMost(Duration.ofSeconds(20)).until(() -> "succeeded".equals(status(id)));
        assertEquals(List.of(id), ran);
        assertEquals(0, claimedJobs.get(), "the open transaction's job started at its commit, not by a claim");
        assertEquals(1, db.count("SELECT count(*) FROM jobs"));
    }

    /**
     * A commit after the lease: the worker hands the job back (the attempt given back) and may claim it, at attempt 1
     * again. The commit's notification heard once more, however late, must not start or hand back anything:
     * dispatched, the stale start was handed back under the claim's fence (same worker, same attempt), which took the
     * running claim back, and the job ran twice.
     */
    @Test
    void aLateCommitsNotificationDoesNotHandBackTheClaimThatTookTheJobAfterTheCommit() {
        CountDownLatch hold = new CountDownLatch(1);
        try {
            Worker w = start(TestPlatform.fastConfig("w1", 2).toBuilder().lease(Duration.ofSeconds(2), Duration.ofMillis(500))
                    .reapInterval(Duration.ofHours(1)).build(), handlers(hold));
            grant("acme");
            EnqueueResult[] r = new EnqueueResult[1];
            db.dsl().transaction(c -> {
                r[0] = platform.store.enqueue(c.dsl(), JobRequest.builder("acme", "hold").maxAttempts(1).build());
                await().atMost(Duration.ofSeconds(30)).until(() -> Boolean.TRUE.equals(c.dsl().fetchValue(
                        "SELECT locked_until < clock_timestamp() FROM jobs WHERE id = ?", r[0].job().getId())));
            });
            long id = r[0].job().getId();
            await().atMost(Duration.ofSeconds(20)).until(() -> ran.contains(id)); // handed back at the commit, claimed here
            platform.store.startCommitted(List.of(r[0])); // the commit's notification, once more and late
            hold.countDown();
            await().atMost(Duration.ofSeconds(20)).until(() -> "succeeded".equals(status(id)) && w.heldCount() == 0);
            assertEquals(List.of(id), ran);
            assertEquals(1, db.count("SELECT attempts FROM jobs WHERE id = ?", id));
        } finally {
            hold.countDown();
        }
    }

    private static String status(org.jooq.DSLContext tx, long id) {
        return tx.fetchValue("SELECT status::text FROM jobs WHERE id = ?", id).toString();
    }

    @Test
    void aCommitWhoseNotificationIsLostIsFoundByTheHeartbeat() throws Exception {
        // the worker's one LISTEN connection is closed by the test after the statement, and no other opens
        AtomicBoolean mayOpen = new AtomicBoolean(true);
        AtomicReference<Connection> listen = new AtomicReference<>();
        Worker w = platform.startWorker(TestPlatform.fastConfig("w1", 2), handlers(new CountDownLatch(0)), () -> {
            if (!mayOpen.get()) throw new SQLException("no more LISTEN connections in this test");
            Connection c = Database.dedicated(db.jdbcUrl, db.user, db.password, "listen-w1");
            listen.set(c);
            return c;
        }, observer);
        await().atMost(Duration.ofSeconds(10)).until(w::takesStartsInEnqueue);
        grant("acme");
        OpenEnqueue app = openEnqueue();
        mayOpen.set(false);
        listen.get().close();
        await().atMost(Duration.ofSeconds(10)).until(() -> !w.takesStartsInEnqueue());
        long id = app.commit(); // its 's:' finds nobody listening
        assertEquals("running", status(id));
        // the heartbeat (every second here) sees it committed, long before its 30 s lease would have lapsed
        await().atMost(Duration.ofSeconds(15)).until(() -> "succeeded".equals(status(id)));
        assertEquals(List.of(id), ran);
        assertEquals(1, db.count("SELECT attempts FROM jobs WHERE id = ?", id), "not reaped and run again");
        grant("acme");
        assertEquals(JobStatus.ready, platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "noop").build()).job().getStatus(),
                "a worker that cannot hear commits takes no job in an enqueue");
    }

    /** An application's transaction that has enqueued a job (started in it) and holds its commit until told. */
    private final class OpenEnqueue {
        final CountDownLatch enqueued = new CountDownLatch(1), commit = new CountDownLatch(1);
        final long[] id = new long[1];
        final Thread app;

        OpenEnqueue(JobRequest request, java.util.function.Consumer<org.jooq.DSLContext> beforeCommit) {
            app = new Thread(() -> db.dsl().transaction(c -> {
                id[0] = platform.store.enqueue(c.dsl(), request).job().getId();
                enqueued.countDown();
                assertTrue(commit.await(30, TimeUnit.SECONDS));
                beforeCommit.accept(c.dsl());
            }));
        }

        /** Commits, and returns the job's id once the transaction has ended. */
        long commit() throws InterruptedException {
            commit.countDown();
            app.join(90_000);
            return id[0];
        }
    }

    private OpenEnqueue openEnqueue() throws InterruptedException {
        return openEnqueue(JobRequest.builder("acme", "noop").build(), c -> { });
    }

    /** An open enqueue of {@code request} that runs {@code beforeCommit} in its transaction once told to commit. */
    private OpenEnqueue openEnqueue(JobRequest request, java.util.function.Consumer<org.jooq.DSLContext> beforeCommit)
            throws InterruptedException {
        OpenEnqueue e = new OpenEnqueue(request, beforeCommit);
        e.app.start();
        assertTrue(e.enqueued.await(30, TimeUnit.SECONDS));
        return e;
    }

    /**
     * A commit after the worker's stop (its wait for commits, 2 s, ran out and it unregistered): the commit hands the
     * job back (V23), the attempt not counted. It was left running under the stopped worker's lease, reaped at its end
     * with the attempt counted (at max_attempts 1: dead without a run).
     */
    @Test
    void aStoppedWorkerTakesNoJobInAnEnqueueAndOneCommittedAfterItsStopIsHandedBackByTheCommit() throws Exception {
        Worker w = start(config(2), handlers(new CountDownLatch(0)));
        grant("acme");
        // the commit is held until the worker has stopped
        OpenEnqueue app = openEnqueue();
        w.close();
        long id = app.commit();
        assertEquals("ready", status(id), "committed after the stop's hand-back, which could not see it: handed back by the commit");
        assertEquals(0, db.count("SELECT attempts FROM jobs WHERE id = ?", id));
        assertTrue(ran.isEmpty());
        grant("acme");
        assertEquals(JobStatus.ready, platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "noop").build()).job().getStatus(),
                "a stopped worker takes no job in an enqueue");
    }

    @Test
    void aJobWhoseCommitComesDuringTheStopIsHandedBackNotRunAndItsAttemptNotCounted() throws Exception {
        Worker w = start(config(2), handlers(new CountDownLatch(0)));
        grant("acme");
        OpenEnqueue app = openEnqueue();
        Thread stop = new Thread(w::close);
        stop.start();
        await().atMost(Duration.ofSeconds(10)).until(w::isStopping);
        long id = app.commit(); // the stop waits for it, then hands the job back
        stop.join(30_000);
        assertEquals("ready", status(id));
        assertEquals(0, db.count("SELECT attempts FROM jobs WHERE id = ?", id), "the attempt that never ran is not counted");
        assertTrue(ran.isEmpty());
    }

    @Test
    void aJobStartedInItsEnqueueIsCancelledLikeAClaimedOne() {
        CountDownLatch hold = new CountDownLatch(1);
        try {
            long id = holdTheOnlyThread(hold);
            platform.store.cancel(db.dsl(), "acme", id);
            await().atMost(Duration.ofSeconds(10)).until(() -> "cancelled".equals(status(id)));
        } finally {
            hold.countDown();
        }
    }

    /** For the API's path: a caller that owns the commit starts the job itself right after it. */
    @Test
    void aCallerThatOwnsTheCommitStartsTheJobAfterIt() {
        start(config(2), handlers(new CountDownLatch(0)));
        grant("acme");
        List<EnqueueResult> results = db.dsl().connectionResult(c -> {
            var one = db.dsl().configuration().derive(c).dsl();
            return platform.store.enqueueAllUnflushed(one, List.of(JobRequest.builder("acme", "noop").build()));
        });
        long id = results.get(0).job().getId();
        assertEquals(JobStatus.running, results.get(0).job().getStatus());
        platform.store.startCommitted(results);
        await().atMost(Duration.ofSeconds(10)).until(() -> "succeeded".equals(status(id)));
        assertEquals(List.of(id), ran);
        assertEquals(0, claimedJobs.get());
    }
}

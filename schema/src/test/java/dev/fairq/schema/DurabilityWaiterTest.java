package dev.fairq.schema;

import dev.fairq.testing.TestDatabase;
import org.jooq.exception.DataAccessException;
import org.junit.jupiter.api.Test;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The shared wait for the WAL flush ({@link DurabilityWaiter}), on a real PostgreSQL: one durable commit serves every
 * caller that asked while the last one was out; a failed connection fails its callers and serves nobody until a new
 * one is up; a stop answers what it accepted.
 */
class DurabilityWaiterTest {
    private static final AtomicInteger NAMES = new AtomicInteger();

    /** The waiter's connection, counting its durable commits; each of them first waits for {@code gate} when set. */
    private static final class Watched {
        final String name = "durability-waiter-test-" + NAMES.incrementAndGet();
        final AtomicInteger statements = new AtomicInteger();
        final AtomicInteger opened = new AtomicInteger();
        volatile CountDownLatch gate;
        volatile CountDownLatch atGate = new CountDownLatch(1);
        /** When set, a second connection is opened only once it is counted down. */
        volatile CountDownLatch reopen;

        Connection open() throws java.sql.SQLException {
            CountDownLatch r = reopen;
            try {
                if (r != null && opened.get() > 0) r.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                throw new java.sql.SQLException(e);
            }
            TestDatabase db = TestDatabase.get();
            java.util.Properties p = new java.util.Properties();
            p.setProperty("user", db.user);
            if (db.password != null) p.setProperty("password", db.password);
            p.setProperty("ApplicationName", name);
            Connection real = DriverManager.getConnection(db.jdbcUrl, p);
            opened.incrementAndGet();
            return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[]{Connection.class},
                    (proxy, method, args) -> {
                        if (method.getName().equals("prepareStatement")) {
                            statements.incrementAndGet();
                            CountDownLatch g = gate;
                            if (g != null) {
                                atGate.countDown();
                                g.await(30, TimeUnit.SECONDS);
                            }
                        }
                        try {
                            return method.invoke(real, args);
                        } catch (InvocationTargetException e) {
                            throw e.getCause();
                        }
                    });
        }

        /** Ends the waiter's backend, as a crash and restart of the server would. */
        void terminate() throws Exception {
            TestDatabase db = TestDatabase.get();
            try (Connection c = DriverManager.getConnection(db.jdbcUrl, db.user, db.password);
                 var s = c.prepareStatement("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = ?")) {
                s.setString(1, name);
                try (var r = s.executeQuery()) {
                    r.next();
                    assertEquals(1, r.getInt(1), "the waiter's backend");
                }
            }
        }
    }

    private static DurabilityWaiter started(Watched w) {
        DurabilityWaiter waiter = new DurabilityWaiter(w::open, "durability-waiter-test").start();
        await().atMost(30, TimeUnit.SECONDS).until(waiter::up);
        return waiter;
    }

    @Test
    void oneDurableCommitServesEveryCallerThatAskedWhileTheLastWasOut() throws Exception {
        Watched w = new Watched();
        w.gate = new CountDownLatch(1);
        try (DurabilityWaiter waiter = started(w)) {
            CompletableFuture<Void> first = waiter.afterCommit(waiter.ticket());
            assertTrue(w.atGate.await(30, TimeUnit.SECONDS), "the first durable commit is out");
            List<CompletableFuture<Void>> rest = new ArrayList<>();
            for (int i = 0; i < 50; i++) rest.add(waiter.afterCommit(waiter.ticket()));
            w.gate.countDown();
            w.gate = null;
            DurabilityWaiter.await(first);
            for (CompletableFuture<Void> f : rest) DurabilityWaiter.await(f);
            assertEquals(2, w.statements.get(), "one durable commit for the first caller, one for the 50 that came meanwhile");
        }
    }

    @Test
    void aFailedConnectionFailsItsCallersAndServesNobodyUntilANewOneIsUp() throws Exception {
        Watched w = new Watched();
        w.gate = new CountDownLatch(1);
        w.reopen = new CountDownLatch(1);
        try (DurabilityWaiter waiter = started(w)) {
            CompletableFuture<Void> caught = waiter.afterCommit(waiter.ticket());
            assertTrue(w.atGate.await(30, TimeUnit.SECONDS));
            CompletableFuture<Void> next = waiter.afterCommit(waiter.ticket()); // for the commit after the one that fails
            w.terminate();
            w.gate.countDown();
            w.gate = null;
            assertInstanceOf(DataAccessException.class, assertThrows(RuntimeException.class, () -> DurabilityWaiter.await(caught)),
                    "a commit the server may have lost is not vouched for");
            // the failure is heard only once the waiter is down: a caller now waits on its own connection
            assertNull(waiter.afterCommit(waiter.ticket()), "nobody served while the waiter is down");
            assertThrows(RuntimeException.class, () -> DurabilityWaiter.await(next));
            long before = waiter.ticket(); // a caller whose transaction began while the waiter was down
            assertEquals(0, before);
            w.reopen.countDown();
            await().atMost(30, TimeUnit.SECONDS).until(waiter::up);
            assertEquals(2, w.opened.get(), "a new connection, for later callers only");
            assertNull(waiter.afterCommit(before), "its commit may predate the new connection (a crash in between): not vouched for here");
            CompletableFuture<Void> later = waiter.afterCommit(waiter.ticket());
            assertNotNull(later);
            DurabilityWaiter.await(later);
        }
    }

    /**
     * A caller whose transaction began on the waiter's first connection, and whose commit returned after that
     * connection was replaced (a crash and restart of the server in between, say), is not served by the new one.
     */
    @Test
    void aCallerIsServedOnlyByTheConnectionUpBeforeItsTransaction() throws Exception {
        Watched w = new Watched();
        try (DurabilityWaiter waiter = started(w)) {
            long ticket = waiter.ticket();
            w.terminate();
            CompletableFuture<Void> probe = waiter.afterCommit(waiter.ticket()); // finds the connection gone
            if (probe != null) assertThrows(RuntimeException.class, () -> DurabilityWaiter.await(probe)); // null: the idle check found it
            await().atMost(30, TimeUnit.SECONDS).until(waiter::up);
            assertEquals(2, w.opened.get());
            assertNull(waiter.afterCommit(ticket), "the caller waits on its own connection");
        }
    }

    /** A durable commit out too long (a synchronous standby gone, a dropped connection) takes no new callers. */
    @Test
    void aStuckDurableCommitSendsNewCallersBackToTheirOwnConnections() throws Exception {
        Watched w = new Watched();
        w.gate = new CountDownLatch(1);
        DurabilityWaiter waiter = new DurabilityWaiter(w::open, "durability-waiter-test-stuck", java.time.Duration.ofMillis(500)).start();
        try {
            await().atMost(30, TimeUnit.SECONDS).until(waiter::up);
            CompletableFuture<Void> stuck = waiter.afterCommit(waiter.ticket());
            assertTrue(w.atGate.await(30, TimeUnit.SECONDS));
            await().atMost(30, TimeUnit.SECONDS).until(() -> waiter.afterCommit(waiter.ticket()) == null);
            w.gate.countDown();
            w.gate = null;
            DurabilityWaiter.await(stuck);
            CompletableFuture<Void> after = waiter.afterCommit(waiter.ticket());
            assertNotNull(after, "served again once the commit came back");
            DurabilityWaiter.await(after);
        } finally {
            waiter.close();
        }
    }

    @Test
    void aStopAnswersWhatItAcceptedAndTakesNoMore() throws Exception {
        Watched w = new Watched();
        w.gate = new CountDownLatch(1);
        DurabilityWaiter waiter = started(w);
        CompletableFuture<Void> first = waiter.afterCommit(waiter.ticket());
        assertTrue(w.atGate.await(30, TimeUnit.SECONDS));
        List<CompletableFuture<Void>> accepted = new ArrayList<>();
        for (int i = 0; i < 5; i++) accepted.add(waiter.afterCommit(waiter.ticket()));
        Thread stop = new Thread(waiter::close);
        stop.start();
        await().atMost(30, TimeUnit.SECONDS).until(() -> waiter.afterCommit(waiter.ticket()) == null);
        w.gate.countDown();
        w.gate = null;
        stop.join(30_000);
        assertFalse(stop.isAlive(), "the stop returned");
        DurabilityWaiter.await(first);
        for (CompletableFuture<Void> f : accepted) DurabilityWaiter.await(f);
        assertEquals(2, w.statements.get());
        assertNull(waiter.afterCommit(waiter.ticket()));
    }

    @Test
    void nobodyIsServedWhileNoConnectionIsUp() {
        AtomicInteger tries = new AtomicInteger();
        DurabilityWaiter waiter = new DurabilityWaiter(() -> {
            tries.incrementAndGet();
            throw new java.sql.SQLException("no server");
        }, "durability-waiter-test-down").start();
        try {
            await().atMost(30, TimeUnit.SECONDS).until(() -> tries.get() >= 2); // failed, waited, failed again
            assertEquals(0, waiter.ticket());
            assertNull(waiter.afterCommit(waiter.ticket()));
            assertNull(waiter.afterCommit(1), "not even with a ticket from another waiter's numbering");
        } finally {
            waiter.close();
        }
    }
}

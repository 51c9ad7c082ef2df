package dev.fairq.schema;

import dev.fairq.testing.TestDatabase;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The LISTEN connections' sockets: PgJDBC's 1 ms "is a message pending?" read answers at once, every byte still
 * arrives, and every other timeout still waits.
 *
 * <p>The two "at once" checks bound the time of N probes from above by N ms. That bound cannot pass without the
 * change: an idle socket's read under a 1 ms timeout waits at least the millisecond (the kernel's poll never
 * returns early with nothing), so N of them take at least N ms; with the change each is one FIONREAD.
 */
class ListenSocketFactoryTest {
    private static final int PROBES = 200;

    @Test
    void aProbeOfAnIdleSocketDoesNotWaitAndPendingBytesAreStillRead() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
             Socket client = new ListenSocketFactory().createSocket(InetAddress.getLoopbackAddress(), server.getLocalPort());
             Socket peer = server.accept()) {
            InputStream in = client.getInputStream();
            client.setSoTimeout(ListenSocketFactory.PROBE_TIMEOUT_MILLIS);
            long t0 = System.nanoTime();
            for (int i = 0; i < PROBES; i++) {
                assertThrows(SocketTimeoutException.class, in::read);
            }
            long elapsedMillis = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(elapsedMillis < PROBES, PROBES + " probes took " + elapsedMillis + " ms: each waited its timeout");

            OutputStream out = peer.getOutputStream();
            out.write(new byte[]{1, 2, 3});
            out.flush();
            await().atMost(Duration.ofSeconds(10)).until(() -> in.available() == 3);
            byte[] got = new byte[3];
            assertEquals(3, in.read(got, 0, 3));
            assertEquals(1, got[0]);
            assertEquals(3, got[2]);

            // any other timeout waits as a plain socket does, and times out when nothing comes
            client.setSoTimeout(20);
            assertThrows(SocketTimeoutException.class, in::read);
            out.write(7);
            out.flush();
            client.setSoTimeout(10_000);
            assertEquals(7, in.read());
        }
    }

    @Test
    void aDedicatedConnectionGetsEveryNotificationAndItsOneMillisecondWaitsReturnAtOnce() throws Exception {
        TestDatabase db = TestDatabase.get();
        try (Connection listen = Database.dedicated(db.jdbcUrl, db.user, db.password, "socket-test-listen");
             Connection send = Database.dedicated(db.jdbcUrl, db.user, db.password, "socket-test-send")) {
            try (Statement s = listen.createStatement()) {
                s.execute("LISTEN socket_test");
            }
            PGConnection pg = listen.unwrap(PGConnection.class);
            long t0 = System.nanoTime();
            for (int i = 0; i < PROBES; i++) {
                PGNotification[] none = pg.getNotifications(ListenSocketFactory.PROBE_TIMEOUT_MILLIS);
                assertTrue(none == null || none.length == 0);
            }
            long elapsedMillis = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(elapsedMillis < PROBES, PROBES + " one-millisecond waits took " + elapsedMillis + " ms");

            // 50 notifications one by one and 100 in one transaction: all of them arrive
            try (Statement s = send.createStatement()) {
                for (int i = 0; i < 50; i++) s.execute("NOTIFY socket_test, '" + i + "'");
                send.setAutoCommit(false);
                for (int i = 50; i < 150; i++) s.execute("NOTIFY socket_test, '" + i + "'");
                send.commit();
            }
            Set<String> received = new HashSet<>();
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (received.size() < 150 && System.nanoTime() < deadline) {
                PGNotification[] ns = pg.getNotifications(500);
                if (ns != null) for (PGNotification n : ns) received.add(n.getParameter());
            }
            assertEquals(150, received.size());

            // and the connection still runs statements
            try (Statement s = listen.createStatement(); ResultSet rs = s.executeQuery("SELECT 41 + 1")) {
                assertTrue(rs.next());
                assertEquals(42, rs.getInt(1));
            }
        }
    }
}

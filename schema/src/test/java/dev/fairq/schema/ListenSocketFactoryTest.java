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
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The LISTEN connections' sockets: PgJDBC's 1 ms "is a message pending?" read never waits on the socket, every
 * byte still arrives, every other timeout still waits, and the dedicated connections use them.
 */
class ListenSocketFactoryTest {
    /** A socket's input with nothing pending, or {@code pending} bytes; counts the reads that reach it. */
    private static final class FakeSocketInput extends InputStream {
        int pending;
        final AtomicInteger reads = new AtomicInteger();

        @Override
        public int available() {
            return pending;
        }

        @Override
        public int read() {
            reads.incrementAndGet();
            if (pending == 0) return -1;
            pending--;
            return 7;
        }

        @Override
        public int read(byte[] b, int off, int len) {
            reads.incrementAndGet();
            int n = Math.min(len, pending);
            for (int i = 0; i < n; i++) b[off + i] = 7;
            pending -= n;
            return n == 0 ? -1 : n;
        }
    }

    @Test
    void aProbeOfAnIdleSocketNeverReachesTheSocketWhileOtherReadsDo() throws Exception {
        FakeSocketInput raw = new FakeSocketInput();
        AtomicInteger timeout = new AtomicInteger(ListenSocketFactory.PROBE_TIMEOUT_MILLIS);
        InputStream in = new ListenSocketFactory.ProbeInput(raw, timeout::get);

        // nothing pending under the probe timeout: answered without a read (a blocking read would wait its 1 ms)
        assertThrows(SocketTimeoutException.class, in::read);
        assertThrows(SocketTimeoutException.class, () -> in.read(new byte[8], 0, 8));
        assertEquals(0, raw.reads.get());

        // something pending: read as usual
        raw.pending = 3;
        byte[] got = new byte[8];
        assertEquals(3, in.read(got, 0, 8));
        assertEquals(7, got[2]);
        assertEquals(1, raw.reads.get());

        // any other timeout reads (and waits) as a plain socket does
        timeout.set(1000);
        assertEquals(-1, in.read());
        assertEquals(2, raw.reads.get());
    }

    @Test
    void onARealSocketPendingBytesArriveAndOtherTimeoutsStillTimeOut() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
             Socket client = new ListenSocketFactory().createSocket(InetAddress.getLoopbackAddress(), server.getLocalPort());
             Socket peer = server.accept()) {
            InputStream in = client.getInputStream();
            client.setSoTimeout(ListenSocketFactory.PROBE_TIMEOUT_MILLIS);
            assertThrows(SocketTimeoutException.class, in::read);

            OutputStream out = peer.getOutputStream();
            out.write(new byte[]{1, 2, 3});
            out.flush();
            await().atMost(Duration.ofSeconds(10)).until(() -> in.available() == 3);
            byte[] got = new byte[3];
            assertEquals(3, in.read(got, 0, 3));
            assertEquals(1, got[0]);
            assertEquals(3, got[2]);

            client.setSoTimeout(20);
            assertThrows(SocketTimeoutException.class, in::read);
            out.write(9);
            out.flush();
            client.setSoTimeout(10_000);
            assertEquals(9, in.read());
        }
    }

    @Test
    void theDedicatedConnectionsUseItUnlessTheUrlNamesASocketFactory() {
        Properties props = Database.dedicatedProperties("jdbc:postgresql://db:5432/fairq", "u", null, "fairq-listen");
        assertEquals(ListenSocketFactory.class.getName(), props.getProperty("socketFactory"));
        Properties own = Database.dedicatedProperties(
                "jdbc:postgresql://db:5432/fairq?socketFactory=org.newsclub.net.unix.AFUNIXSocketFactory", "u", null, "x");
        assertFalse(own.containsKey("socketFactory"));
    }

    @Test
    void aDedicatedConnectionGetsEveryNotificationAndStillRunsStatements() throws Exception {
        TestDatabase db = TestDatabase.get();
        try (Connection listen = Database.dedicated(db.jdbcUrl, db.user, db.password, "socket-test-listen");
             Connection send = Database.dedicated(db.jdbcUrl, db.user, db.password, "socket-test-send")) {
            try (Statement s = listen.createStatement()) {
                s.execute("LISTEN socket_test");
            }
            PGConnection pg = listen.unwrap(PGConnection.class);
            // probes of an idle connection find nothing (and lose nothing that comes after)
            for (int i = 0; i < 50; i++) {
                PGNotification[] none = pg.getNotifications(ListenSocketFactory.PROBE_TIMEOUT_MILLIS);
                assertTrue(none == null || none.length == 0);
            }

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

            try (Statement s = listen.createStatement(); ResultSet rs = s.executeQuery("SELECT 41 + 1")) {
                assertTrue(rs.next());
                assertEquals(42, rs.getInt(1));
            }
        }
    }
}

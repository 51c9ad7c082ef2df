package dev.fairq.api;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.channels.ServerSocketChannel;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What a user fixes in a setting is one line at start-up: a port already in use, an admin address that does not resolve. */
class StartupErrorsTest {

    /** As Jetty reports them: ServerConnector's IOException around the bind failure, in SetUIDListener's RuntimeException. */
    private static RuntimeException asJettyReportsIt(Exception bind, String where) {
        return new RuntimeException(new IOException("Failed to bind to " + where, bind));
    }

    @Test
    void aPortInUseOrAnUnresolvableBindAddressIsOneLine() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
             ServerSocketChannel second = ServerSocketChannel.open()) {
            Exception inUse = assertThrows(java.net.BindException.class, () -> second.bind(taken.getLocalSocketAddress()));
            RuntimeException e = asJettyReportsIt(inUse, "127.0.0.1:" + taken.getLocalPort());
            assertTrue(StartupErrors.expected(e), "a port in use");
            assertTrue(StartupErrors.describe(e).contains("Address already in use"), StartupErrors.describe(e));
        }
        try (ServerSocketChannel c = ServerSocketChannel.open()) {
            Exception unresolved = assertThrows(java.nio.channels.UnresolvedAddressException.class,
                    () -> c.bind(InetSocketAddress.createUnresolved("not-an-address", 0)));
            assertTrue(StartupErrors.expected(asJettyReportsIt(unresolved, "not-an-address:8081")), "FAIRQ_ADMIN_BIND=not-an-address");
        }
        assertTrue(!StartupErrors.expected(new RuntimeException(new IllegalStateException("a bug"))), "a bug keeps its trace");
    }
}

package dev.fairq.schema;

import javax.net.SocketFactory;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.util.function.IntSupplier;

/**
 * Sockets for the connections that LISTEN (PgJDBC's {@code socketFactory} property, set by
 * {@link Database#dedicated}), so that a notification reaches fairq the moment it arrives.
 *
 * <p>Why: after {@code getNotifications(timeout)} has read a notification, PgJDBC (42.7.14, PGStream.hasMessagePending)
 * checks whether another message is pending by setting the socket's read timeout to 1 ms and reading. On an idle
 * connection that read always runs into its timeout, so every wake-up reached its caller 1 ms late (measured on
 * PostgreSQL 15, one NOTIFY every 5 ms: received 1.34 ms after the sender's call began at p50 with PgJDBC's own
 * socket, 0.20 ms with this one; libpq: 0.24 ms). Every job a worker is woken for, and every scheduler wake-up,
 * paid it.
 *
 * <p>What: a read under a 1 ms timeout is answered from what the kernel already holds: when nothing is pending it
 * times out at once instead of waiting the millisecond. Any other timeout waits as usual. So on these connections
 * a caller never asks for a 1 ms wait (the worker and the scheduler wait at least 2 ms), and a 1 ms wait returns at
 * once with nothing.
 */
public final class ListenSocketFactory extends SocketFactory {
    /** PgJDBC's timeout for "is a message pending?" ({@code PGStream.hasMessagePending}). */
    static final int PROBE_TIMEOUT_MILLIS = 1;

    public ListenSocketFactory() {}

    @Override
    public Socket createSocket() {
        return new ProbeSocket();
    }

    @Override
    public Socket createSocket(String host, int port) throws IOException {
        return connected(new InetSocketAddress(host, port), null);
    }

    @Override
    public Socket createSocket(String host, int port, InetAddress localHost, int localPort) throws IOException {
        return connected(new InetSocketAddress(host, port), new InetSocketAddress(localHost, localPort));
    }

    @Override
    public Socket createSocket(InetAddress host, int port) throws IOException {
        return connected(new InetSocketAddress(host, port), null);
    }

    @Override
    public Socket createSocket(InetAddress address, int port, InetAddress localAddress, int localPort) throws IOException {
        return connected(new InetSocketAddress(address, port), new InetSocketAddress(localAddress, localPort));
    }

    private static Socket connected(InetSocketAddress to, InetSocketAddress from) throws IOException {
        Socket s = new ProbeSocket();
        try {
            if (from != null) s.bind(from);
            s.connect(to);
            return s;
        } catch (IOException e) {
            s.close();
            throw e;
        }
    }

    /** A plain socket whose reads under the probe timeout do not wait. */
    static final class ProbeSocket extends Socket {
        private volatile int timeoutMillis;
        private InputStream in;

        @Override
        public synchronized void setSoTimeout(int timeout) throws SocketException {
            super.setSoTimeout(timeout);
            timeoutMillis = timeout;
        }

        @Override
        public synchronized InputStream getInputStream() throws IOException {
            if (in == null) in = new ProbeInput(super.getInputStream(), () -> timeoutMillis);
            return in;
        }
    }

    /** A socket's input whose reads under the probe timeout ({@code timeoutMillis}) do not wait for data. */
    static final class ProbeInput extends FilterInputStream {
        private final IntSupplier timeoutMillis;

        ProbeInput(InputStream raw, IntSupplier timeoutMillis) {
            super(raw);
            this.timeoutMillis = timeoutMillis;
        }

        @Override
        public int read() throws IOException {
            noWaitForProbe();
            return super.read();
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            noWaitForProbe();
            return super.read(b, off, len);
        }

        private void noWaitForProbe() throws IOException {
            if (timeoutMillis.getAsInt() == PROBE_TIMEOUT_MILLIS && super.available() == 0) {
                throw new SocketTimeoutException("nothing pending");
            }
        }
    }
}

package dev.fairq.api;

import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;

/**
 * Listens on 'fairq_keys' (V14__key_change_notifications.sql) on a connection of its own and tells the
 * {@link ApiKeyStore} of every key or API-limit change, from any process, as it commits; while it listens the store
 * trusts a verified key for {@link ApiKeyStore#LISTENED_TTL} instead of {@link ApiKeyStore#VERIFIED_TTL}.
 *
 * <p>A notification cannot be missed unnoticed: the store is told it listens only once LISTEN has returned, and
 * is told it does not (which forgets every remembered key) as soon as the connection fails, before the listener
 * opens another. A connection that breaks without an error (a silent network partition) is found by a check every
 * {@link #CHECK_EVERY} with a timeout of its own ({@link Connection#isValid}); until then, and at most
 * {@link ApiKeyStore#LISTENED_TTL} in any case, a change made elsewhere may go unheard.
 */
final class KeyChangeListener implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(KeyChangeListener.class);
    static final String CHANNEL = "fairq_keys";
    /** How often an idle connection is proven alive; with its timeout, the longest a silent break goes unseen. */
    static final Duration CHECK_EVERY = Duration.ofSeconds(5);
    static final int CHECK_TIMEOUT_SECONDS = 5;
    /** The wait before opening a connection again after a failure. */
    static final Duration RETRY_AFTER = Duration.ofSeconds(1);

    /** Opens the listening connection (a dedicated one: notifications arrive on the session that listens). */
    interface Connections {
        Connection open() throws SQLException;
    }

    private final ApiKeyStore keys;
    private final Connections connections;
    private final Thread thread;
    private volatile boolean closed;
    private volatile Connection current;

    KeyChangeListener(ApiKeyStore keys, Connections connections) {
        this.keys = keys;
        this.connections = connections;
        this.thread = new Thread(this::run, "fairq-key-listener");
        this.thread.setDaemon(true);
    }

    KeyChangeListener start() {
        thread.start();
        return this;
    }

    private void run() {
        while (!closed) {
            try (Connection c = connections.open()) {
                current = c;
                if (closed) return;
                listen(c);
            } catch (SQLException | RuntimeException e) {
                if (!closed) log.warn("listening for key changes failed; remembered keys are trusted for {} until it is back",
                        ApiKeyStore.VERIFIED_TTL, e);
            } finally {
                current = null;
                keys.listening(false);
            }
            if (!closed) pause(RETRY_AFTER);
        }
    }

    private void listen(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute("LISTEN " + CHANNEL);
        }
        keys.listening(true);
        PGConnection pg = c.unwrap(PGConnection.class);
        long checkEveryNanos = CHECK_EVERY.toNanos(), lastCheck = System.nanoTime();
        while (!closed) {
            // a wait of 2 ms or more: on this connection a 1 ms wait returns at once (ListenSocketFactory)
            PGNotification[] heard = pg.getNotifications((int) Math.max(2, CHECK_EVERY.toMillis() / 5));
            if (heard != null) {
                for (PGNotification n : heard) keys.keyChanged(n.getParameter());
            }
            if (System.nanoTime() - lastCheck >= checkEveryNanos) {
                if (!c.isValid(CHECK_TIMEOUT_SECONDS)) throw new SQLException("the listening connection stopped answering");
                lastCheck = System.nanoTime();
            }
        }
    }

    private void pause(Duration d) {
        try {
            Thread.sleep(d.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            closed = true;
        }
    }

    /** Whether the connection is up and listening (tests). */
    boolean listening() {
        return keys.listening() && current != null;
    }

    @Override
    public void close() {
        closed = true;
        Connection c = current;
        if (c != null) {
            try {
                c.abort(Runnable::run); // ends a wait for notifications at once
            } catch (SQLException e) {
                log.debug("aborting the key listener's connection", e);
            }
        }
        thread.interrupt();
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        keys.listening(false);
    }
}

package dev.fairq.api;

import io.dropwizard.lifecycle.Managed;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The zero-setup default: a PostgreSQL started by this process with its data under
 * {@code <dataDirectory>/postgres} (default {@code ./.fairq/postgres}). The data directory is kept, so jobs,
 * tenants and keys survive a restart; initdb runs only the first time.
 *
 * <p>It listens on localhost, where any user of the machine can connect, and initdb (as zonky runs it) trusts every
 * local connection. So every start makes sure the superuser has a password, generated once and kept in
 * {@code <dataDirectory>/db-password} (owner-only), and that pg_hba.conf asks for it on every connection, TCP and
 * unix socket alike. A data directory from before this (trust) is locked down at its next start.
 */
final class EmbeddedDatabase implements Managed {
    private static final Logger log = LoggerFactory.getLogger(EmbeddedDatabase.class);
    static final String PASSWORD_FILE = "db-password";
    private static final String HBA_MARKER = "# fairq: every connection needs the password in ";
    private final EmbeddedPostgres postgres;
    private final Path dataDirectory;
    private final String password;

    private EmbeddedDatabase(EmbeddedPostgres postgres, Path dataDirectory, String password) {
        this.postgres = postgres;
        this.dataDirectory = dataDirectory;
        this.password = password;
    }

    static EmbeddedDatabase start(Path root) throws IOException {
        Path data = root.resolve("postgres").toAbsolutePath();
        Files.createDirectories(data.getParent());
        Path passwordFile = root.resolve(PASSWORD_FILE).toAbsolutePath();
        String password = password(passwordFile, data);
        log.info("no FAIRQ_DATABASE_URL: starting the embedded PostgreSQL with its data in {}", data);
        stopOrphanedPostmaster(data);
        EmbeddedPostgres pg;
        try {
            pg = EmbeddedPostgres.builder()
                .setDataDirectory(data)
                .setCleanDataDirectory(false)
                .setServerConfig("max_connections", "100")
                // zonky defaults to synchronous_commit=off; an accepted job must survive a crash
                .setServerConfig("synchronous_commit", "on")
                // room for a bulk enqueue's WAL: with the default (1/32 of shared_buffers, 4 MB here) WAL insertion
                // waited for the flush once the buffers filled, and every transaction with it (README, "Wake-ups")
                .setServerConfig("wal_buffers", "64MB")
                // zonky's own readiness check connects with these properties
                .setConnectConfig("password", password)
                .start();
        } catch (IllegalStateException e) {
            if (e.getMessage() == null || !e.getMessage().startsWith("could not lock")) throw e;
            // zonky's own lock on the data directory: another live process (a second server) has it
            throw new IllegalStateException("the embedded PostgreSQL in " + data + " is in use by another fairq process "
                    + "(FAIRQ_DATA_DIR " + root + "): stop it, or give this one a FAIRQ_DATA_DIR of its own", e);
        }
        try {
            lockDown(pg, data, passwordFile, password);
        } catch (IOException | SQLException | RuntimeException e) {
            pg.close();
            throw new IOException("could not set the embedded PostgreSQL's password: " + e.getMessage(), e);
        }
        return new EmbeddedDatabase(pg, data, password);
    }

    /**
     * A server killed with SIGKILL leaves its postmaster running (it is a child process, not a thread), holding
     * postmaster.pid: the next start failed with "lock file postmaster.pid already exists" (and only its clean-up
     * stopped the orphan, so the start after that worked). When no live process holds zonky's lock on the data
     * directory (every fairq server holds it while it runs), a postmaster still running there is such an orphan:
     * it is asked to stop (SIGINT, PostgreSQL's fast shutdown: it has no clients left worth waiting for) first.
     */
    static void stopOrphanedPostmaster(Path data) throws IOException {
        Path pidFile = data.resolve("postmaster.pid");
        if (!Files.exists(pidFile)) return;
        long pid;
        try {
            pid = Long.parseLong(Files.readAllLines(pidFile, StandardCharsets.UTF_8).get(0).strip());
        } catch (RuntimeException e) {
            return; // not a postmaster.pid we can read: PostgreSQL itself says what is wrong
        }
        java.util.Optional<ProcessHandle> postmaster = ProcessHandle.of(pid).filter(ProcessHandle::isAlive)
                .filter(p -> p.info().commandLine().map(c -> c.contains("postgres") && c.contains(data.toString())).orElse(false));
        if (postmaster.isEmpty()) return; // a stale file of a dead postmaster: PostgreSQL removes it itself
        try (java.nio.channels.FileChannel lock = java.nio.channels.FileChannel.open(data.resolve("epg-lock"),
                java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.WRITE);
             java.nio.channels.FileLock held = lock.tryLock()) {
            if (held == null) return; // a live fairq process owns it: reported as such by the start
        }
        log.warn("the embedded PostgreSQL (pid {}) in {} outlived the process that started it: stopping it", pid, data);
        try {
            new ProcessBuilder("kill", "-INT", Long.toString(pid)).inheritIO().start().waitFor();
            postmaster.get().onExit().get(60, java.util.concurrent.TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while stopping the orphaned PostgreSQL " + pid, e);
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            throw new IOException("the orphaned embedded PostgreSQL (pid " + pid + ") in " + data
                    + " did not stop within 60 s: stop it, then start again", e);
        }
    }

    /**
     * The password kept in {@code file}, or a new one (256 random bits) when there is none: owner-only on POSIX file
     * systems, written before the database first uses it. A missing file for a locked data directory cannot be
     * recovered from here, so it stops start-up saying so.
     */
    static String password(Path file, Path data) throws IOException {
        if (Files.exists(file)) return Files.readString(file, StandardCharsets.UTF_8).strip();
        Path hba = data.resolve("pg_hba.conf");
        if (Files.exists(hba) && Files.readString(hba, StandardCharsets.UTF_8).contains(HBA_MARKER)) {
            throw new IllegalStateException(file + " is missing, and the embedded PostgreSQL in " + data + " asks for the "
                    + "password it held. Restore the file, or move " + data.getParent() + " away to start with an empty database.");
        }
        String password = Tokens.generate("");
        Path tmp = file.resolveSibling(PASSWORD_FILE + ".tmp");
        Files.deleteIfExists(tmp);
        if (FileSystems.getDefault().supportedFileAttributeViews().contains("posix")) {
            Files.createFile(tmp, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        } else {
            Files.createFile(tmp);
        }
        Files.writeString(tmp, password + "\n", StandardCharsets.UTF_8);
        Files.move(tmp, file, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        return password;
    }

    /** Sets the password (idempotent) and makes pg_hba.conf require it everywhere, then reloads the configuration. */
    private static void lockDown(EmbeddedPostgres pg, Path data, Path passwordFile, String password) throws IOException, SQLException {
        Path hba = data.resolve("pg_hba.conf");
        String wanted = HBA_MARKER + passwordFile + "\n"
                + "local all all scram-sha-256\n"
                + "host  all all 127.0.0.1/32 scram-sha-256\n"
                + "host  all all ::1/128 scram-sha-256\n";
        if (Files.exists(hba) && Files.readString(hba, StandardCharsets.UTF_8).equals(wanted)) return;
        try (Connection c = pg.getPostgresDatabase().getConnection(); Statement s = c.createStatement()) {
            // the password is base64url (no quote can occur); scram-sha-256 is PostgreSQL 17's password_encryption
            s.execute("SET password_encryption = 'scram-sha-256'");
            s.execute("ALTER ROLE postgres PASSWORD '" + password + "'");
            Files.writeString(hba, wanted, StandardCharsets.UTF_8);
            s.execute("SELECT pg_reload_conf()");
        }
        log.info("the embedded PostgreSQL now asks every connection for the password in {}", passwordFile);
    }

    DatabaseTarget target() {
        return new DatabaseTarget(postgres.getJdbcUrl("postgres", "postgres"), "postgres", password, true);
    }

    @Override
    public void stop() throws IOException {
        log.info("stopping the embedded PostgreSQL ({})", dataDirectory);
        postgres.close();
    }
}

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
        EmbeddedPostgres pg = EmbeddedPostgres.builder()
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
        try {
            lockDown(pg, data, passwordFile, password);
        } catch (IOException | SQLException | RuntimeException e) {
            pg.close();
            throw new IOException("could not set the embedded PostgreSQL's password: " + e.getMessage(), e);
        }
        return new EmbeddedDatabase(pg, data, password);
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

package dev.fairq.api;

import io.dropwizard.lifecycle.Managed;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The zero-setup default: a PostgreSQL started by this process with its data under
 * {@code <dataDirectory>/postgres} (default {@code ./.fairq/postgres}). The data directory is kept, so jobs,
 * tenants and keys survive a restart; initdb runs only the first time.
 */
final class EmbeddedDatabase implements Managed {
    private static final Logger log = LoggerFactory.getLogger(EmbeddedDatabase.class);
    private final EmbeddedPostgres postgres;
    private final Path dataDirectory;

    private EmbeddedDatabase(EmbeddedPostgres postgres, Path dataDirectory) {
        this.postgres = postgres;
        this.dataDirectory = dataDirectory;
    }

    static EmbeddedDatabase start(Path root) throws IOException {
        Path data = root.resolve("postgres").toAbsolutePath();
        Files.createDirectories(data.getParent());
        log.info("no FAIRQ_DATABASE_URL: starting the embedded PostgreSQL with its data in {}", data);
        EmbeddedPostgres pg = EmbeddedPostgres.builder()
                .setDataDirectory(data)
                .setCleanDataDirectory(false)
                .setServerConfig("max_connections", "100")
                // zonky defaults to synchronous_commit=off; an accepted job must survive a crash
                .setServerConfig("synchronous_commit", "on")
                .start();
        return new EmbeddedDatabase(pg, data);
    }

    DatabaseTarget target() {
        return new DatabaseTarget(postgres.getJdbcUrl("postgres", "postgres"), "postgres", null, true);
    }

    @Override
    public void stop() throws IOException {
        log.info("stopping the embedded PostgreSQL ({})", dataDirectory);
        postgres.close();
    }
}

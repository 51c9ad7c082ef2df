package dev.fairq.testing;

import com.zaxxer.hikari.HikariDataSource;
import dev.fairq.schema.Database;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.jooq.DSLContext;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.PostgreSQLContainer;

import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * The real PostgreSQL the tests run against, one per test JVM:
 * <ol>
 *   <li>the one named by {@code FAIRQ_TEST_DATABASE_URL} (with {@code FAIRQ_TEST_DATABASE_USER} and
 *       {@code FAIRQ_TEST_DATABASE_PASSWORD}) when set;</li>
 *   <li>else a Testcontainers PostgreSQL 17 when a Docker engine answers;</li>
 *   <li>else an embedded PostgreSQL 17 (zonky), which needs nothing installed.</li>
 * </ol>
 * Never H2, never a mock. The schema is migrated once; {@link #reset()} empties the tables between tests.
 */
public final class TestDatabase {
    private static TestDatabase instance;

    public final String jdbcUrl;
    public final String user;
    public final String password;
    public final String source;
    private final HikariDataSource pool;

    private TestDatabase(String jdbcUrl, String user, String password, String source) {
        this.jdbcUrl = jdbcUrl;
        this.user = user;
        this.password = password;
        this.source = source;
        this.pool = Database.pool(jdbcUrl, user, password, 24, "fairq-test");
        // Tests open up to 20 connections at once; on a loaded machine creating them one by one can take longer
        // than the product's 10 s wait (seen once: "not every thread got a connection").
        this.pool.setConnectionTimeout(60_000);
        Database.migrate(pool);
    }

    public static synchronized TestDatabase get() {
        if (instance == null) instance = start();
        return instance;
    }

    private static TestDatabase start() {
        String url = System.getenv("FAIRQ_TEST_DATABASE_URL");
        if (url != null && !url.isBlank()) {
            return new TestDatabase(url, envOr("FAIRQ_TEST_DATABASE_USER", "postgres"),
                    System.getenv("FAIRQ_TEST_DATABASE_PASSWORD"), "FAIRQ_TEST_DATABASE_URL");
        }
        if (dockerAvailable()) {
            PostgreSQLContainer<?> container = new PostgreSQLContainer<>("postgres:17-alpine");
            container.start();
            Runtime.getRuntime().addShutdownHook(new Thread(container::stop));
            return new TestDatabase(container.getJdbcUrl(), container.getUsername(), container.getPassword(),
                    "testcontainers");
        }
        try {
            EmbeddedPostgres pg = EmbeddedPostgres.builder()
                    .setServerConfig("max_connections", "300")
                    .setServerConfig("fsync", "off")
                    .start();
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try {
                    pg.close();
                } catch (IOException ignored) {
                    // the JVM is going away; the temp directory goes with it
                }
            }));
            return new TestDatabase(pg.getJdbcUrl("postgres", "postgres"), "postgres", null, "embedded");
        } catch (IOException e) {
            throw new UncheckedIOException("could not start an embedded PostgreSQL", e);
        }
    }

    private static boolean dockerAvailable() {
        // Ask Testcontainers only when there is a Docker endpoint to ask; its probe otherwise logs errors.
        boolean endpoint = System.getenv("DOCKER_HOST") != null
                || java.nio.file.Files.exists(java.nio.file.Path.of("/var/run/docker.sock"))
                || java.nio.file.Files.exists(java.nio.file.Path.of(System.getProperty("user.home"), ".docker", "run", "docker.sock"));
        if (!endpoint) return false;
        try {
            return DockerClientFactory.instance().isDockerAvailable();
        } catch (Throwable e) {
            return false;
        }
    }

    private static String envOr(String name, String fallback) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? fallback : v;
    }

    public HikariDataSource dataSource() {
        return pool;
    }

    public DSLContext dsl() {
        return Database.dsl(pool);
    }

    /** Empties every fairq table (and the tests' own tables) so each test starts from nothing. */
    public void reset() {
        dsl().execute("DROP TABLE IF EXISTS test_runs");
        dsl().execute("TRUNCATE jobs, workers, queues, tenants RESTART IDENTITY CASCADE");
        dsl().execute("""
                CREATE TABLE test_runs (
                    run_id     bigserial PRIMARY KEY,
                    job_id     bigint NOT NULL,
                    attempt    integer NOT NULL,
                    worker     text,
                    ordering_key text,
                    started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
                    ended_at   timestamptz
                )""");
    }

    /** The one number a query returns (a count, an attempt, an id); a missing row or a null fails the test. */
    public long count(String sql, Object... binds) {
        Object v = dsl().fetchValue(sql, binds);
        if (!(v instanceof Number n)) throw new AssertionError("expected a number from: " + sql + ", got " + v);
        return n.longValue();
    }

    /** A tenant with limits high enough not to matter unless a test sets them. */
    public void createTenant(String id) {
        createTenant(id, 1, 1_000_000, 1_000_000, 100_000);
    }

    public void createTenant(String id, int weight, double ratePerSecond, int burst, int maxRunning) {
        dsl().execute("INSERT INTO tenants (id, weight, rate_per_second, burst, max_running, max_queued) "
                + "VALUES (?, ?, ?, ?, ?, 10000000)", id, weight, ratePerSecond, burst, maxRunning);
    }
}

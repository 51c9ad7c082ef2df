package dev.fairq.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.fairq.schema.Database;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.jooq.DSLContext;

import java.net.URI;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The PostgreSQL a benchmark runs on: a scratch database created on the server of {@code FAIRQ_DATABASE_URL}
 * (dropped afterwards, so a benchmark never touches real data), or a fresh embedded PostgreSQL.
 */
public final class BenchDatabase implements AutoCloseable {
    public final String jdbcUrl;
    public final String user;
    public final String password;
    public final String host;
    public final int port;
    public final String databaseName;
    private final EmbeddedPostgres embedded;
    private final String adminUrl;
    private final HikariDataSource pool;

    private BenchDatabase(String jdbcUrl, String user, String password, String adminUrl, EmbeddedPostgres embedded) {
        this.jdbcUrl = jdbcUrl;
        this.user = user;
        this.password = password;
        this.adminUrl = adminUrl;
        this.embedded = embedded;
        URI uri = URI.create(jdbcUrl.substring("jdbc:".length()));
        this.host = uri.getHost();
        this.port = uri.getPort() < 0 ? 5432 : uri.getPort();
        this.databaseName = uri.getPath().substring(1);
        this.pool = Database.pool(jdbcUrl, user, password, 8, "fairq-bench");
        Database.migrate(pool);
    }

    static BenchDatabase open() throws Exception {
        String url = System.getenv("FAIRQ_DATABASE_URL");
        String user = env("FAIRQ_DATABASE_USER", "postgres");
        String password = System.getenv("FAIRQ_DATABASE_PASSWORD");
        if (url == null || url.isBlank()) {
            EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder()
                    .setServerConfig("max_connections", "200")
                    .setServerConfig("shared_buffers", "256MB")
                    // zonky turns synchronous_commit off by default; a benchmark measures the real thing
                    .setServerConfig("synchronous_commit", "on");
            // to see each statement's mean time while a benchmark runs (CREATE EXTENSION pg_stat_statements, then
            // read the view on the port the embedded server prints): the binaries ship the module
            // more server settings for a diagnosis run, "name=value,name=value" (e.g. wal_init_zero=off)
            for (String setting : env("FAIRQ_BENCH_PG_CONFIG", "").split(",")) {
                int eq = setting.indexOf('=');
                if (eq > 0) builder.setServerConfig(setting.substring(0, eq).trim(), setting.substring(eq + 1).trim());
            }
            if (Boolean.parseBoolean(env("FAIRQ_BENCH_PG_STAT_STATEMENTS", "false"))) {
                builder.setServerConfig("shared_preload_libraries", "pg_stat_statements")
                        .setServerConfig("pg_stat_statements.track_planning", "on"); // planning counts too
            }
            EmbeddedPostgres pg = builder.start();
            return new BenchDatabase(pg.getJdbcUrl("postgres", "postgres"), "postgres", null, null, pg);
        }
        String scratch = "fairq_bench_" + ProcessHandle.current().pid();
        try (Connection c = Database.dedicated(url, user, password, "fairq-bench-admin");
             Statement s = c.createStatement()) {
            s.execute("CREATE DATABASE " + scratch);
        }
        URI uri = URI.create(url.substring("jdbc:".length()));
        String scratchUrl = "jdbc:postgresql://" + uri.getHost() + ":" + (uri.getPort() < 0 ? 5432 : uri.getPort())
                + "/" + scratch + (uri.getQuery() == null ? "" : "?" + uri.getQuery());
        return new BenchDatabase(scratchUrl, user, password, url, null);
    }

    private static String env(String name, String fallback) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? fallback : v;
    }

    public String description() {
        return embedded != null ? "embedded PostgreSQL 17 (fresh)" : "scratch database on " + host + ":" + port;
    }

    public HikariDataSource pool() {
        return pool;
    }

    public DSLContext dsl() {
        return Database.dsl(pool);
    }

    /**
     * The processes of this benchmark's PostgreSQL server on this machine, alive now: the postmaster (the parent of a
     * session's backend) and every process under it. Empty when the server is not on this machine (the backend's pid
     * names no local postgres process). Not every postgres process of the machine, which counted another server's
     * load too (the machine's PostgreSQL 15 beside an embedded run). Other databases of the same server still count.
     */
    public java.util.List<ProcessHandle> serverProcesses() {
        return serverProcesses(((Number) dsl().fetchValue("SELECT pg_backend_pid()")).longValue());
    }

    /** {@link #serverProcesses()} from one session's backend pid (a pid that names no local postgres: empty). */
    static java.util.List<ProcessHandle> serverProcesses(long backend) {
        return ProcessHandle.of(backend)
                .filter(h -> h.info().command().map(c -> c.endsWith("postgres")).orElse(true))
                .flatMap(ProcessHandle::parent)
                .map(postmaster -> java.util.stream.Stream.concat(java.util.stream.Stream.of(postmaster), postmaster.descendants()).toList())
                .orElse(java.util.List.of());
    }

    public void createTenant(String id, int weight, double rate, int burst, int maxRunning) {
        dsl().execute("INSERT INTO tenants (id, weight, rate_per_second, burst, max_running, max_queued) "
                + "VALUES (?, ?, ?, ?, ?, 100000000)", id, weight, rate, burst, maxRunning);
    }

    /**
     * A tenant of weight 1 that no limit of its own holds back (1,000,000 starts per second and burst, 100,000
     * running: more than any benchmark reaches), so only the scheduler's fairness and the workers pace it.
     */
    public void createUnlimitedTenant(String id) {
        createTenant(id, 1, 1_000_000, 1_000_000, 100_000);
    }

    /** Empties the jobs, keeps tenants and the worker registry. */
    public void truncateJobs() {
        dsl().execute("TRUNCATE jobs RESTART IDENTITY");
    }

    /**
     * Empties everything but the worker registry: for a worker process that lives across a benchmark's phases. Job ids
     * go on from where they were, so that no id the worker has seen comes back as another job.
     */
    public void truncateKeepingWorkers() {
        dsl().execute("TRUNCATE jobs, queues, tenants CASCADE");
    }

    public void truncate() {
        dsl().execute("TRUNCATE jobs, workers, queues, tenants RESTART IDENTITY CASCADE");
    }

    @Override
    public void close() throws Exception {
        pool.close();
        if (embedded != null) {
            embedded.close();
        } else {
            try (Connection c = Database.dedicated(adminUrl, user, password, "fairq-bench-admin");
                 Statement s = c.createStatement()) {
                s.execute("DROP DATABASE IF EXISTS " + databaseName + " WITH (FORCE)");
            } catch (SQLException e) {
                System.err.println("could not drop scratch database " + databaseName + ": " + e.getMessage());
            }
        }
    }
}

package dev.fairq.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.fairq.schema.Database;
import org.jooq.DSLContext;

import java.net.URI;

/**
 * A fresh database for one phase of a benchmark, on the bench's PostgreSQL server (embedded or the scratch
 * server of {@code FAIRQ_DATABASE_URL}): created empty, migrated, dropped at close. Fresh tables, fresh
 * statistics, no leftovers from an earlier phase.
 */
final class PhaseDatabase implements AutoCloseable {
    final String name;
    final String jdbcUrl;
    final String user;
    final String password;
    private final BenchDatabase server;
    private final HikariDataSource pool;

    private PhaseDatabase(BenchDatabase server, String name) {
        this.server = server;
        this.name = name;
        this.user = server.user;
        this.password = server.password;
        URI uri = URI.create(server.jdbcUrl.substring("jdbc:".length()));
        this.jdbcUrl = "jdbc:postgresql://" + server.host + ":" + server.port + "/" + name
                + (uri.getQuery() == null ? "" : "?" + uri.getQuery());
        server.dsl().execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
        server.dsl().execute("CREATE DATABASE " + name);
        this.pool = Database.pool(jdbcUrl, user, password, 8, "fairq-bench-" + name);
        Database.migrate(pool);
    }

    /** {@code phase}: lower case letters and digits (it becomes part of the database's name). */
    static PhaseDatabase create(BenchDatabase server, String phase) {
        if (!phase.matches("[a-z0-9]+")) throw new IllegalArgumentException("phase name: " + phase);
        return new PhaseDatabase(server, server.databaseName + "_" + phase);
    }

    DSLContext dsl() {
        return Database.dsl(pool);
    }

    /** Seconds since the epoch on the database clock (clock_timestamp(), not the transaction's start). */
    double now() {
        return ((Number) dsl().fetchValue("SELECT fairq_epoch(clock_timestamp())")).doubleValue();
    }

    long count(String sql, Object... args) {
        return ((Number) dsl().fetchValue(sql, args)).longValue();
    }

    /**
     * Whether any job matches: a poll that stops at the first row. The trickle phase polled a count of the flood's
     * waiting jobs ten times a second: 31 ms of the database's CPU each over 30,000 rows (pg_stat_statements on
     * PG15), a third of a core taken from the platform it measures, only while the flood waited.
     */
    boolean anyJob(String where, Object... args) {
        return Boolean.TRUE.equals(dsl().fetchValue("SELECT EXISTS (SELECT 1 FROM jobs WHERE " + where + ")", args));
    }

    /**
     * Whether any job matching {@code where} waits (pending or ready), one status a branch: "status IN ('pending',
     * 'ready')" matches none of the partial indexes, and on PostgreSQL 15 under the trickle's flood that poll took 27 ms
     * of the database's CPU (pg_stat_statements), five times a second.
     */
    boolean anyWaiting(String where) {
        return Boolean.TRUE.equals(dsl().fetchValue("SELECT EXISTS (SELECT 1 FROM jobs WHERE status = 'pending' AND " + where
                + ") OR EXISTS (SELECT 1 FROM jobs WHERE status = 'ready' AND " + where + ")"));
    }

    @Override
    public void close() {
        pool.close();
        // a diagnosis run can keep the phase's database to read its jobs' timestamps afterwards
        if ("1".equals(System.getenv("FAIRQ_BENCH_KEEP_DATABASE"))) {
            System.err.println("kept phase database " + name + " (FAIRQ_BENCH_KEEP_DATABASE=1)");
            return;
        }
        try {
            server.dsl().execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
        } catch (RuntimeException e) {
            System.err.println("could not drop phase database " + name + ": " + e.getMessage());
        }
    }
}

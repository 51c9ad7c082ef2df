package dev.fairq.schema;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import org.flywaydb.core.Flyway;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.conf.Settings;
import org.jooq.impl.DSL;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;

/** Connection plumbing: pools, dedicated connections, migrations and the jOOQ context. */
public final class Database {
    static {
        System.setProperty("org.jooq.no-logo", "true");
        System.setProperty("org.jooq.no-tips", "true");
    }

    private Database() {}

    /**
     * JIT off for fairq's sessions: its statements are short, and a server with jit on (the default where
     * LLVM is installed) compiled the dashboard rollup and even PgJDBC's type lookups for 0.1-0.5 s each.
     */
    private static final String NO_JIT = "-c jit=off";

    /**
     * The queue pool's planner (the workers' claim, completion and heartbeat): no sequential scan, no sort, as on the
     * scheduler's session (Admission#PLANNER_SETTINGS); each of their statements has an index made for it. A prepared
     * statement's generic plan is made once, on the table as it was then: made on a nearly empty jobs table it walked
     * the whole table ever after (no ANALYZE invalidated it), the completion's 31,599 rows and 19.5 ms a call at 12 jobs
     * a call after two minutes of 16 POST /v1/jobs callers on PostgreSQL 15 (auto_explain), 0.3 ms before.
     */
    static final String QUEUE_PLANNER = " -c enable_seqscan=off -c enable_sort=off";

    /**
     * The other pools' planner (the API: enqueues and reads): no sequential scan either. The single-job enqueue's
     * generic plans made on an empty table walked it twice a round of three submits once it held 40,000 rows (the
     * room count, the keyed probes; WorkerGenericPlansTest). Sorts stay allowed: some reads order by what no index
     * holds, and without a sequential scan to feed it a sort is over an index's rows anyway.
     */
    static final String API_PLANNER = " -c enable_seqscan=off";

    /** A pool sized by the caller: a worker needs its claim, completion and heartbeat connections, no more. */
    public static HikariDataSource pool(String jdbcUrl, String user, String password, int maxSize, String name) {
        return pool(jdbcUrl, user, password, maxSize, name, true);
    }

    /**
     * A pool whose commits do not wait for the WAL flush ({@code synchronous_commit = off}), for the queue's
     * own state transitions (admit, claim, heartbeat, finish, reap). Safe for at-least-once: a job is durable
     * from its enqueue, which keeps the caller's (synchronous) setting (the API's is durable from its answer:
     * {@link JobStore#enqueueAllUnflushed}). A PostgreSQL crash can only lose the
     * last few hundred milliseconds of transitions after that, and each such loss is one at-least-once
     * already covers: a lost admission is admitted again, a lost claim or completion means the job runs
     * again. What it buys is every claim and completion not waiting for an fsync.
     */
    public static HikariDataSource queuePool(String jdbcUrl, String user, String password, int maxSize, String name) {
        return pool(jdbcUrl, user, password, maxSize, name, false);
    }

    private static HikariDataSource pool(String jdbcUrl, String user, String password, int maxSize, String name,
                                         boolean synchronousCommit) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(jdbcUrl);
        config.setUsername(user);
        config.setPassword(password);
        config.setMaximumPoolSize(maxSize);
        config.setMinimumIdle(Math.min(2, maxSize));
        config.setPoolName(name);
        config.setConnectionTimeout(10_000);
        // Server-side prepared statements from the first execution: the hot queue statements are few.
        config.addDataSourceProperty("prepareThreshold", "1");
        config.addDataSourceProperty("ApplicationName", name);
        config.addDataSourceProperty("options", NO_JIT + (synchronousCommit ? API_PLANNER : QUEUE_PLANNER));
        if (!synchronousCommit) config.setConnectionInitSql("SET synchronous_commit = off");
        return new HikariDataSource(config);
    }

    /**
     * A connection outside any pool, for what must not share one: the scheduler's advisory lock (the lock
     * lives and dies with this session) and LISTEN (notifications arrive on the session that listens).
     */
    public static Connection dedicated(String jdbcUrl, String user, String password, String name) throws SQLException {
        return DriverManager.getConnection(jdbcUrl, dedicatedProperties(jdbcUrl, user, password, name));
    }

    static java.util.Properties dedicatedProperties(String jdbcUrl, String user, String password, String name) {
        java.util.Properties props = new java.util.Properties();
        if (user != null) props.setProperty("user", user);
        if (password != null) props.setProperty("password", password);
        props.setProperty("ApplicationName", name);
        props.setProperty("tcpKeepAlive", "true");
        props.setProperty("options", NO_JIT);
        // notifications reach the listener without PgJDBC's 1 ms wait for a next message (ListenSocketFactory);
        // a URL that names its own socket factory (a Unix socket, say) keeps it
        if (!jdbcUrl.contains("socketFactory=")) props.setProperty("socketFactory", ListenSocketFactory.class.getName());
        return props;
    }

    public static void migrate(DataSource dataSource) {
        Flyway.configure().dataSource(dataSource).locations("classpath:db/migration").load().migrate();
    }

    public static DSLContext dsl(DataSource dataSource) {
        return DSL.using(dataSource, SQLDialect.POSTGRES, settings());
    }

    public static DSLContext dsl(Connection connection) {
        return DSL.using(connection, SQLDialect.POSTGRES, settings());
    }

    private static Settings settings() {
        return new Settings().withExecuteLogging(false).withRenderSchema(false);
    }
}

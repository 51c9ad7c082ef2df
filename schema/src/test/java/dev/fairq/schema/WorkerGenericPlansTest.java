package dev.fairq.schema;

import com.zaxxer.hikari.HikariDataSource;
import org.jooq.DSLContext;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A worker's statements are prepared once per connection, and PostgreSQL keeps a generic plan made on the table as
 * it was then. Made while jobs was nearly empty, the completion's plan walked the whole table at every call once it
 * had grown (a sequential scan, 31,599 rows and 19.5 ms a completion after two minutes of a POST /v1/jobs load on
 * PostgreSQL 15 with autovacuum off): no ANALYZE came to make it plan again. On the queue pool's sessions the planner
 * has no sequential scan to choose. Counted by the session's own statistics (pg_stat_xact_user_tables), in a
 * transaction rolled back.
 */
class WorkerGenericPlansTest extends StoreTestSupport {

    @Test
    void claimCompletionAndHeartbeatPlannedOnAnEmptyTableNeverWalkItOnceItGrew() throws Exception {
        dsl.execute("DELETE FROM jobs");
        dsl.execute("VACUUM jobs"); // trailing empty pages go: the table is as small as a fresh one
        try (HikariDataSource pool = Database.queuePool(db.jdbcUrl, db.user, db.password, 1, "generic-plans-test");
             Connection c = pool.getConnection()) {
            DSLContext worker = Database.dsl(c);
            try (Statement st = c.createStatement()) {
                st.execute("SET plan_cache_mode = force_generic_plan"); // what PostgreSQL settles on after five calls
            }
            Runnable calls = () -> {
                store.leases().claim(worker, "w", 1, LEASE, null, null);
                store.finish(worker, "w", List.of(new JobOutcome.Succeeded(1, 1, 10)));
                store.heartbeat(worker, "w", 8, Map.of(1L, 1), LEASE);
            };
            calls.run(); // the generic plans are made now, on the empty table

            dsl.execute("""
                    INSERT INTO jobs (tenant_id, type, status, attempts, locked_by, locked_until, started_at)
                    SELECT ?, 'noop', 'running', 1, 'other', now() + interval '1 hour', now() FROM generate_series(1, 20000)""", T1);
            dsl.execute("INSERT INTO jobs (tenant_id, type, status, ready_rank, admitted_at) SELECT ?, 'noop', 'ready', g, now() "
                    + "FROM generate_series(1, 20) g", T2);

            c.setAutoCommit(false);
            try {
                calls.run();
                try (Statement st = c.createStatement();
                     ResultSet rs = st.executeQuery("SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relname = 'jobs'")) {
                    rs.next();
                    assertEquals(0, rs.getLong(1), "a worker statement walked the jobs table");
                }
            } finally {
                c.rollback();
                c.setAutoCommit(true);
            }
        }
    }

    /** The same for an enqueue on the API's pool: a single job, its tenant's room counted, a keyed job. */
    @Test
    void theEnqueuePlannedOnAnEmptyTableNeverWalksItOnceItGrew() throws Exception {
        dsl.execute("DELETE FROM jobs");
        dsl.execute("VACUUM jobs");
        try (HikariDataSource pool = Database.pool(db.jdbcUrl, db.user, db.password, 1, "generic-plans-api-test");
             Connection c = pool.getConnection()) {
            DSLContext api = Database.dsl(c);
            try (Statement st = c.createStatement()) {
                st.execute("SET plan_cache_mode = force_generic_plan");
            }
            java.util.concurrent.atomic.AtomicInteger n = new java.util.concurrent.atomic.AtomicInteger();
            Runnable calls = () -> {
                store.submit(api, job(T1).jobKey("k" + n.incrementAndGet()).build());
                store.submit(api, job(T1).fairnessKey("f" + n.get()).build());
                store.submit(api, List.of(job(T2).build(), job(T2).build()));
            };
            calls.run();
            dsl.execute("INSERT INTO jobs (tenant_id, type) SELECT ?, 'noop' FROM generate_series(1, 20000)", T1);
            dsl.execute("INSERT INTO jobs (tenant_id, type, status, attempts, started_at, finished_at) "
                    + "SELECT ?, 'noop', 'succeeded', 1, now(), now() FROM generate_series(1, 20000)", T2);
            calls.run(); // the same statements again, on their generic plans made on the empty table
            // each statement the session prepared, explained on its cached generic plan (no value needed to show it)
            List<String> walks = new java.util.ArrayList<>();
            int explained = 0;
            try (Statement st = c.createStatement();
                 ResultSet rs = st.executeQuery("SELECT name, cardinality(parameter_types), statement FROM pg_prepared_statements "
                         + "WHERE statement LIKE '%INSERT INTO jobs%'")) {
                List<String[]> prepared = new java.util.ArrayList<>();
                while (rs.next()) prepared.add(new String[]{rs.getString(1), rs.getString(2), rs.getString(3)});
                for (String[] p : prepared) {
                    String nulls = String.join(", ", java.util.Collections.nCopies(Integer.parseInt(p[1]), "NULL"));
                    StringBuilder plan = new StringBuilder();
                    try (ResultSet e = st.executeQuery("EXPLAIN EXECUTE \"" + p[0] + "\"" + (nulls.isEmpty() ? "" : "(" + nulls + ")"))) {
                        while (e.next()) plan.append(e.getString(1)).append('\n');
                    }
                    explained++;
                    if (plan.toString().contains("Seq Scan on jobs")) walks.add(plan + "\n" + p[2]);
                }
            }
            assertEquals(true, explained >= 3, "the single, keyed and batch enqueues were prepared: " + explained);
            assertEquals(List.of(), walks, "an enqueue's plan walks the jobs table");
        }
    }

}

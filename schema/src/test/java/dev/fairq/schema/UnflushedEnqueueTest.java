package dev.fairq.schema;

import dev.fairq.schema.generated.enums.JobStatus;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The API's enqueue: visible at its commit, which does not wait for the WAL flush, and durable once
 * {@link JobStore#awaitDurable} returned, which the API calls before it answers (JobStore#enqueueAllUnflushed).
 */
class UnflushedEnqueueTest extends StoreTestSupport {

    private static String setting(DSLContext ctx) {
        return (String) ctx.fetchValue("SELECT current_setting('synchronous_commit')");
    }

    private static boolean flushedUpTo(DSLContext ctx, String lsn) {
        return (Boolean) ctx.fetchValue("SELECT pg_current_wal_flush_lsn() >= ?::pg_lsn", lsn);
    }

    private static long nextXid(DSLContext ctx) {
        return ((Number) ctx.fetchValue("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint")).longValue();
    }

    @Test
    void theCommitOfABatchDoesNotWaitForTheFlushAndTheSettingEndsWithIt() throws Exception {
        try (Connection c = Database.dedicated(db.jdbcUrl, db.user, db.password, "unflushed-test")) {
            DSLContext ctx = DSL.using(c, SQLDialect.POSTGRES);
            ctx.execute("SET synchronous_commit = on"); // the API pool's setting, whatever the test server's

            ctx.transaction(t -> {
                store.enqueueAllUnflushed(t.dsl(), List.of(job(T1).build(), job(T2).build()));
                assertEquals("off", setting(t.dsl()), "the batch's commit does not wait for the flush");
            });
            assertEquals("on", setting(ctx), "transaction-local: the session's next commit waits again");
            // the keyed statement in autocommit: the setting ends with that statement's own transaction
            store.enqueueAllUnflushed(ctx, List.of(job(T1).fairnessKey("customer-1").build()));
            assertEquals("on", setting(ctx));
            ctx.transaction(t -> {
                store.enqueueAllUnflushed(t.dsl(), List.of(job(T1).fairnessKey("customer-2").build()));
                assertEquals("off", setting(t.dsl()));
            });
            // an application's own enqueue keeps its transaction's setting, and so does the API's with
            // FAIRQ_SUBMIT_START=flush
            ctx.transaction(t -> {
                store.enqueueAll(t.dsl(), List.of(job(T2).build()));
                assertEquals("on", setting(t.dsl()));
            });
            ctx.transaction(t -> {
                store.enqueueAllWakingAfterCommit(t.dsl(), List.of(job(T2).build()));
                assertEquals("on", setting(t.dsl()));
            });
            ctx.transaction(t -> {
                store.enqueueAllWakingAfterCommit(t.dsl(), List.of(job(T1).fairnessKey("customer-3").build()));
                assertEquals("on", setting(t.dsl()));
            });
        }
        assertEquals(7, countJobs());
    }

    @Test
    void awaitDurableReturnsOnceTheEnqueuesCommitIsFlushed() throws Exception {
        try (Connection c = Database.dedicated(db.jdbcUrl, db.user, db.password, "unflushed-test")) {
            DSLContext ctx = DSL.using(c, SQLDialect.POSTGRES);
            for (String session : List.of("on", "off")) {
                // "off": a session (a queue pool's) that turned it off still gets a durable answer
                ctx.execute("SET synchronous_commit = " + session);
                List<EnqueueResult> r = store.enqueueAllUnflushed(ctx, List.of(job(T1).build()));
                assertEquals(JobStatus.pending, r.get(0).job().getStatus());
                // everything the enqueue's commit wrote lies before this point of the WAL
                String afterCommit = (String) ctx.fetchValue("SELECT pg_current_wal_insert_lsn()::text");
                long nextXid = nextXid(ctx);
                store.awaitDurable(ctx);
                // a commit flushes only when its transaction has an id and wrote WAL; the WAL writer may also have
                // flushed meanwhile, so the flush alone would not prove the wait
                assertTrue(nextXid(ctx) > nextXid, "awaitDurable committed a transaction with an id");
                assertTrue(flushedUpTo(ctx, afterCommit), "flushed past the enqueue's commit (session " + session + ")");
                assertEquals(session, setting(ctx), "awaitDurable leaves the session's setting as it was");
            }
        }
        assertEquals(2, countJobs(T1));
    }
}

package dev.fairq.schema;

import com.zaxxer.hikari.HikariDataSource;
import dev.fairq.testing.TestDatabase;
import org.jooq.DSLContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A parameter that is null at one call and not at the next keeps its statement prepared once (PgJDBC prepares a
 * statement for the types of its values: an untyped null after a varchar made it prepare again, and PostgreSQL
 * plan again, at every switch). Counted on the server: pg_prepared_statements' plans of a statement are its
 * executions, so every execution of a statement prepared once shows there, and one prepared again leaves only
 * the executions since.
 */
class NullBindingTest {
    private static final int EXECUTIONS = 10;
    private static final AtomicInteger MARKERS = new AtomicInteger();
    private static HikariDataSource pool;

    @BeforeAll
    static void pool() {
        TestDatabase db = TestDatabase.get();
        pool = Database.pool(db.jdbcUrl, db.user, db.password, 1, "null-binding-test"); // the production pool's settings
    }

    @AfterAll
    static void close() {
        pool.close();
    }

    private record Case(String cast, Object value) {}

    private static final List<Case> CASES = List.of(
            new Case("text", "x"), new Case("jsonb", "{}"), new Case("text[]", new String[]{"a"}),
            new Case("bigint", 5L), new Case("integer", 5), new Case("smallint", (short) 5), new Case("boolean", true),
            new Case("double precision", 1.5), new Case("timestamptz", OffsetDateTime.parse("2026-12-06T18:00:00Z")),
            new Case("bigint[]", new Long[]{1L}), new Case("integer[]", new Integer[]{1}), new Case("boolean[]", new Boolean[]{true}),
            new Case("double precision[]", new Double[]{1.0}), new Case("smallint[]", new Short[]{1}));

    @Test
    void aParameterNullAtEveryOtherCallIsPreparedOnceThroughPlainJdbc() throws SQLException {
        try (Connection c = pool.getConnection()) {
            DSLContext ctx = Database.dsl(c);
            for (Case k : CASES) {
                String marker = marker();
                NamedSql sql = NamedSql.of("SELECT /*" + marker + "*/ :v::" + k.cast() + " IS NULL");
                for (int i = 0; i < EXECUTIONS; i++) {
                    Object v = i % 2 == 0 ? k.value() : null;
                    List<Boolean> isNull = sql.bind().set("v", v).query(ctx, rs -> rs.getBoolean(1));
                    assertEquals(List.of(v == null), isNull, k.cast());
                }
                assertEquals(EXECUTIONS, executions(c, marker), k.cast() + ": every execution on the one prepared statement");
            }
        }
    }

    @Test
    void aStringParameterNullAtEveryOtherCallIsPreparedOnceThroughJooq() throws SQLException {
        try (Connection c = pool.getConnection()) {
            DSLContext ctx = Database.dsl(c);
            for (String cast : List.of("text", "jsonb")) {
                String marker = marker();
                NamedSql fetch = NamedSql.of("SELECT /*" + marker + "*/ :v::" + cast + " IS NULL");
                NamedSql execute = NamedSql.of("UPDATE tenants /*" + marker + "*/ SET weight = weight WHERE false AND :v::" + cast + " IS NULL");
                for (int i = 0; i < EXECUTIONS; i++) {
                    Object v = i % 2 == 0 ? "{}" : null;
                    assertEquals(v == null, fetch.bind().set("v", v).fetch(ctx).get(0).get(0, Boolean.class), cast);
                    assertEquals(0, execute.bind().set("v", v).execute(ctx), cast);
                }
                assertEquals(2 * EXECUTIONS, executions(c, marker), cast + ": no statement prepared again");
            }
        }
    }

    /** The driver's behaviour the binding works around: without a typed null the statement is prepared at each switch. */
    @Test
    void anUntypedNullAfterAStringPreparesTheStatementAgain() throws SQLException {
        try (Connection c = pool.getConnection()) {
            String marker = marker();
            for (int i = 0; i < EXECUTIONS; i++) {
                try (PreparedStatement ps = c.prepareStatement("SELECT /*" + marker + "*/ ?::text IS NULL")) {
                    if (i % 2 == 0) ps.setObject(1, "x");
                    else ps.setNull(1, Types.OTHER);
                    ps.executeQuery().close();
                }
            }
            assertTrue(executions(c, marker) < EXECUTIONS / 2,
                    "this driver version no longer prepares again on a null of no type: NamedSql's typed nulls may go");
        }
    }

    @Test
    void theNullTypeComesFromTheFirstCastAfterTheName() {
        NamedSql sql = NamedSql.of("SELECT :a::double precision[], :b, :c::uuid, :d::TEXT, :now, :a::text");
        assertEquals(new NamedSql.NullType(Types.ARRAY, "_float8"), sql.nullType("a"));
        assertEquals(null, sql.nullType("b"), "no cast: an untyped null");
        assertEquals(null, sql.nullType("c"), "a type without a mapping: an untyped null");
        assertEquals(new NamedSql.NullType(Types.VARCHAR, null), sql.nullType("d"));
        assertEquals(new NamedSql.NullType(Types.TIMESTAMP_WITH_TIMEZONE, "timestamptz"), sql.nullType("now"));
    }

    private static String marker() {
        return "nullbinding" + MARKERS.incrementAndGet() + "x";
    }

    /** Executions of this session's prepared statements whose text holds the marker. */
    private static long executions(Connection c, String marker) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT coalesce(sum(generic_plans + custom_plans), 0) FROM pg_prepared_statements "
                + "WHERE statement LIKE '%' || ? || '%' AND statement NOT LIKE '%pg_prepared_statements%'")) {
            ps.setString(1, marker);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }
}

package dev.fairq.schema;

import org.jooq.DSLContext;
import org.jooq.Record;
import org.jooq.Result;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One SQL statement with named parameters ({@code :tenant_ids::text[]}), parsed once into positional JDBC
 * parameters. The one way the queue's statements are bound: a statement's text says what each value is, and
 * {@link #bind()} fails fast when a name is missing, unknown, or set twice, so a value can never slide into
 * the wrong position (the old statements had up to 13 positional arrays matched to Java code far below).
 *
 * <p>{@code :now} is the queue's clock: it expands to {@code coalesce(?::timestamptz, now())} and is bound
 * from the {@link QueueClock} the statement runs with, so production uses the database's clock (null) and a
 * {@link SettableClock} moves time in tests without waiting (River's {@code coalesce(@now, now())}).
 *
 * <p>Casts ({@code ::bigint[]}) and quoted text are left alone; a name may appear several times.
 *
 * <p>A null is bound with the type its parameter's cast names (the first cast written after the name), as the
 * driver binds a value of it: PgJDBC prepares a statement for the types of its values, and a string bound as
 * {@code varchar} one time and a null of no type the next made it prepare the statement again, and PostgreSQL
 * plan it again, at every switch. The single-job enqueue, whose start slot and keys are null or not from one call
 * to the next, was planned at 49% of its calls (3,779 plans of 7,666, 0.73 ms each: a fifth of PostgreSQL's time
 * under 16 callers of {@code POST /v1/jobs}, pg_stat_statements on PostgreSQL 15).
 */
public final class NamedSql {
    private static final String NOW = "now";

    private final String sql;
    private final List<String> positions;
    private final Set<String> names;
    /** Per parameter, how a null of it is bound (from its cast; absent: as a null of no type). */
    private final Map<String, NullType> nullTypes;

    private NamedSql(String sql, List<String> positions, Map<String, NullType> nullTypes) {
        this.sql = sql;
        this.positions = List.copyOf(positions);
        this.names = new LinkedHashSet<>(positions);
        this.nullTypes = Map.copyOf(nullTypes);
    }

    /**
     * A null's JDBC type, chosen so that PgJDBC sends the same parameter type as for a value of the cast's type: a
     * Java String goes as {@code varchar} (so text and jsonb nulls do too), a String[] as {@code varchar[]}.
     */
    record NullType(int sqlType, String typeName) {
        static NullType forCast(String cast) {
            return switch (cast) {
                case "text", "varchar", "jsonb", "json" -> new NullType(Types.VARCHAR, null);
                case "text[]", "varchar[]" -> new NullType(Types.ARRAY, "_varchar");
                case "bigint" -> new NullType(Types.BIGINT, null);
                case "integer", "int" -> new NullType(Types.INTEGER, null);
                case "smallint" -> new NullType(Types.SMALLINT, null);
                case "boolean" -> new NullType(Types.BOOLEAN, null);
                case "float", "double precision" -> new NullType(Types.DOUBLE, null);
                case "timestamptz" -> new NullType(Types.TIMESTAMP_WITH_TIMEZONE, "timestamptz");
                case "bigint[]" -> new NullType(Types.ARRAY, "_int8");
                case "integer[]" -> new NullType(Types.ARRAY, "_int4");
                case "smallint[]" -> new NullType(Types.ARRAY, "_int2");
                case "boolean[]" -> new NullType(Types.ARRAY, "_bool");
                case "double precision[]" -> new NullType(Types.ARRAY, "_float8");
                default -> null; // uuid and the rest: a null of no type, as before
            };
        }

        void bind(PreparedStatement ps, int index) throws SQLException {
            if (typeName == null) ps.setNull(index, sqlType);
            else ps.setNull(index, sqlType, typeName);
        }
    }

    public static NamedSql of(String text) {
        StringBuilder out = new StringBuilder(text.length());
        List<String> positions = new ArrayList<>();
        Map<String, NullType> nullTypes = new HashMap<>();
        int i = 0, n = text.length();
        while (i < n) {
            char c = text.charAt(i);
            if (c == '\'') { // a quoted literal, '' escapes included, copied as is
                int end = i + 1;
                while (end < n) {
                    if (text.charAt(end) == '\'') {
                        if (end + 1 < n && text.charAt(end + 1) == '\'') {
                            end += 2;
                            continue;
                        }
                        break;
                    }
                    end++;
                }
                out.append(text, i, Math.min(n, end + 1));
                i = end + 1;
            } else if (c == '-' && i + 1 < n && text.charAt(i + 1) == '-') { // a comment, to the end of the line
                int end = text.indexOf('\n', i);
                end = end < 0 ? n : end;
                out.append(text, i, end);
                i = end;
            } else if (c == ':' && i + 1 < n && text.charAt(i + 1) == ':') { // a cast
                out.append("::");
                i += 2;
            } else if (c == ':' && i + 1 < n && isNameStart(text.charAt(i + 1))) {
                int end = i + 1;
                while (end < n && isNamePart(text.charAt(end))) end++;
                String name = text.substring(i + 1, end);
                positions.add(name);
                out.append(name.equals(NOW) ? "coalesce(?::timestamptz, now())" : "?");
                String cast = name.equals(NOW) ? "timestamptz" : castAt(text, end);
                if (cast != null && !nullTypes.containsKey(name)) {
                    NullType type = NullType.forCast(cast);
                    if (type != null) nullTypes.put(name, type);
                }
                i = end;
            } else if (c == '?') {
                throw new IllegalArgumentException("positional '?' in a named statement: " + text);
            } else {
                out.append(c);
                i++;
            }
        }
        return new NamedSql(out.toString(), positions, nullTypes);
    }

    /** The type named by a cast that starts at {@code at} ({@code ::double precision[]}), or null when none does. */
    static String castAt(String text, int at) {
        if (!text.startsWith("::", at)) return null;
        int i = at + 2, n = text.length();
        int start = i;
        while (i < n && (Character.isLetterOrDigit(text.charAt(i)) || text.charAt(i) == '_')) i++;
        String type = text.substring(start, i).toLowerCase(java.util.Locale.ROOT);
        if (type.equals("double") && text.startsWith(" precision", i)) {
            type = "double precision";
            i += " precision".length();
        }
        if (text.startsWith("[]", i)) type += "[]";
        return type.isEmpty() ? null : type;
    }

    /** For tests: how a null of {@code name} is bound (null: as a null of no type). */
    NullType nullType(String name) {
        return nullTypes.get(name);
    }

    /**
     * {@code text} with {@code part} replaced, for a statement that is a variant of another (ADMIT_QUIETLY of ADMIT):
     * fails at class load, not silently, when the statement it derives from no longer contains the part exactly once.
     */
    static String variant(String text, String part, String replacement) {
        int at = text.indexOf(part);
        if (at < 0) throw new IllegalStateException("no '" + part + "' in the statement to vary: " + text);
        if (text.indexOf(part, at + 1) >= 0) throw new IllegalStateException("'" + part + "' more than once in: " + text);
        return text.substring(0, at) + replacement + text.substring(at + part.length());
    }

    private static boolean isNameStart(char c) {
        return (c >= 'a' && c <= 'z') || c == '_';
    }

    private static boolean isNamePart(char c) {
        return isNameStart(c) || (c >= '0' && c <= '9');
    }

    /** The statement with positional parameters, for tools and plan tests. */
    public String sql() {
        return sql;
    }

    public Binding bind() {
        return new Binding();
    }

    /** The values of one execution. */
    public final class Binding {
        private final Map<String, Object> values = new HashMap<>();

        private Binding() {}

        public Binding set(String name, Object value) {
            if (!names.contains(name)) throw new IllegalArgumentException("no parameter :" + name + " in " + sql);
            if (values.containsKey(name)) throw new IllegalArgumentException(":" + name + " bound twice");
            values.put(name, value);
            return this;
        }

        /** Binds {@code :now} from the clock (null: the database's own now()). */
        public Binding clock(QueueClock clock) {
            return set(NOW, clock.sqlNow());
        }

        Object[] args() {
            if (values.size() != names.size()) {
                Set<String> missing = new LinkedHashSet<>(names);
                missing.removeAll(values.keySet());
                throw new IllegalArgumentException("unbound parameters " + missing + " in " + sql);
            }
            Object[] args = new Object[positions.size()];
            for (int i = 0; i < args.length; i++) args[i] = values.get(positions.get(i));
            return args;
        }

        public Result<Record> fetch(DSLContext ctx) {
            return ctx.resultQuery(sql, jooqArgs()).fetch();
        }

        public int execute(DSLContext ctx) {
            return ctx.execute(sql, jooqArgs());
        }

        /**
         * The values for jOOQ: a null string as a typed one (jOOQ binds a String as varchar and an untyped null as
         * no type, the switch {@link NamedSql} avoids). jOOQ binds other values with casts or types of their own, so
         * a null of them at worst prepares the statement once more.
         */
        private Object[] jooqArgs() {
            Object[] args = args();
            for (int i = 0; i < args.length; i++) {
                NullType type = args[i] == null ? nullTypes.get(positions.get(i)) : null;
                if (type != null && type.sqlType() == Types.VARCHAR) args[i] = DSL.val((Object) null, SQLDataType.VARCHAR);
            }
            return args;
        }

        /** One row of a {@link #query}'s result, mapped. */
        @FunctionalInterface
        public interface RowMapper<T> {
            T map(java.sql.ResultSet rs) throws SQLException;
        }

        /**
         * The rows, read with plain JDBC on a connection of the context: for the API's per-request reads, where
         * jOOQ's work per statement (rendering the plain SQL, a type lookup per column of the result's metadata,
         * records mapped by name) was about a quarter of a read request's CPU (JFR, tenants bench, stats phase).
         */
        public <T> List<T> query(DSLContext ctx, RowMapper<T> mapper) {
            return ctx.connectionResult(c -> {
                try (PreparedStatement ps = prepare(c); java.sql.ResultSet rs = ps.executeQuery()) {
                    List<T> out = new ArrayList<>();
                    while (rs.next()) out.add(mapper.map(rs));
                    return out;
                }
            });
        }

        /**
         * Runs the statement for its effect with plain JDBC and drops its rows. jOOQ's fetch looks the result's
         * column types up by name, and for one it does not know (pg_lsn, void) it throws and catches an exception:
         * awaitDurable's pg_lsn did so on every API submit (114 of the 158 exception allocations JFR sampled in the
         * server over 15 s of the tenants bench's trickle).
         */
        public void run(DSLContext ctx) {
            ctx.connection(c -> {
                try (PreparedStatement ps = prepare(c)) {
                    ps.execute();
                }
            });
        }

        /** A prepared statement with the values set, for the few hot paths read with plain JDBC. */
        public PreparedStatement prepare(Connection c) throws SQLException {
            PreparedStatement ps = c.prepareStatement(sql);
            Object[] args = args();
            for (int i = 0; i < args.length; i++) {
                NullType type = args[i] == null ? nullTypes.get(positions.get(i)) : null;
                if (type != null) type.bind(ps, i + 1);
                else ps.setObject(i + 1, args[i]);
            }
            return ps;
        }
    }
}

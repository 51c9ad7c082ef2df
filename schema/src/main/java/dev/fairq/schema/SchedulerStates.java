package dev.fairq.schema;

import org.jooq.DSLContext;

import java.time.OffsetDateTime;
import java.util.List;
import java.util.Optional;

/**
 * What the active scheduler knows in memory per tenant (tokens, virtual time, place in the fair order),
 * published so that explain can read it from any process (scheduler_tenant_state, V2__api.sql).
 */
public final class SchedulerStates {
    /** One tenant's scheduler state. {@code nextTokenInMs} 0 when a token is available. */
    public record State(String tenantId, double tokensAvailable, long nextTokenInMs, double pass,
                        Integer position, int competing, OffsetDateTime nextTokenAt, OffsetDateTime updatedAt) {}

    /** Many tenants in one statement (upsert from arrays). */
    static final NamedSql PUBLISH = NamedSql.of("""
            INSERT INTO scheduler_tenant_state AS s (tenant_id, tokens_available, next_token_at, pass, position,
                                                     competing, updated_at)
            SELECT u.tenant_id, u.tokens, :now + u.next_ms * interval '1 millisecond', u.pass, u.position,
                   u.competing, :now
            FROM unnest(:tenant_ids::text[], :tokens::float8[], :next_ms::bigint[], :passes::float8[],
                        :positions::integer[], :competing::integer[])
                 AS u(tenant_id, tokens, next_ms, pass, position, competing)
            WHERE EXISTS (SELECT 1 FROM tenants t WHERE t.id = u.tenant_id)
            ON CONFLICT (tenant_id) DO UPDATE
            SET tokens_available = excluded.tokens_available, next_token_at = excluded.next_token_at,
                pass = excluded.pass, position = excluded.position, competing = excluded.competing,
                updated_at = excluded.updated_at
            """);

    static final NamedSql READ = NamedSql.of("""
            SELECT tenant_id, tokens_available, pass, position, competing, next_token_at, updated_at,
                   greatest(0, (fairq_epoch(next_token_at) - fairq_epoch(:now)) * 1000)
            FROM scheduler_tenant_state WHERE tenant_id = :tenant_id
            """);

    private final QueueClock clock;

    SchedulerStates(QueueClock clock) {
        this.clock = clock;
    }

    public void publish(DSLContext ctx, List<State> states) {
        if (states.isEmpty()) return;
        int n = states.size();
        String[] ids = new String[n];
        Double[] tokens = new Double[n], pass = new Double[n];
        Long[] next = new Long[n];
        Integer[] position = new Integer[n], competing = new Integer[n];
        for (int i = 0; i < n; i++) {
            State s = states.get(i);
            ids[i] = s.tenantId();
            tokens[i] = s.tokensAvailable();
            next[i] = s.nextTokenInMs();
            pass[i] = s.pass();
            position[i] = s.position();
            competing[i] = s.competing();
        }
        PUBLISH.bind().clock(clock).set("tenant_ids", ids).set("tokens", tokens).set("next_ms", next)
                .set("passes", pass).set("positions", position).set("competing", competing).execute(ctx);
    }

    static final NamedSql FORGET = NamedSql.of("DELETE FROM scheduler_tenant_state WHERE tenant_id = ANY(:tenant_ids::text[])");

    static final NamedSql KEEP_ONLY = NamedSql.of("DELETE FROM scheduler_tenant_state WHERE NOT (tenant_id = ANY(:tenant_ids::text[]))");

    /** Deletes every row but the given tenants' (a new leader: rows of an earlier term describe nobody's memory). */
    public void keepOnly(DSLContext ctx, List<String> tenants) {
        KEEP_ONLY.bind().set("tenant_ids", tenants.toArray(String[]::new)).execute(ctx);
    }

    /** Deletes the rows of tenants the scheduler no longer holds. */
    public void forget(DSLContext ctx, List<String> tenants) {
        if (tenants.isEmpty()) return;
        FORGET.bind().set("tenant_ids", tenants.toArray(String[]::new)).execute(ctx);
    }

    public Optional<State> read(DSLContext ctx, String tenantId) {
        return READ.bind().clock(clock).set("tenant_id", tenantId).fetch(ctx).stream().findFirst()
                .map(r -> {
                    Double nextMs = r.get(7, Double.class);
                    return new State(r.get(0, String.class), r.get(1, Double.class),
                            nextMs == null ? 0 : Math.round(nextMs), r.get(2, Double.class), r.get(3, Integer.class),
                            r.get(4, Integer.class), r.get(5, OffsetDateTime.class), r.get(6, OffsetDateTime.class));
                });
    }
}

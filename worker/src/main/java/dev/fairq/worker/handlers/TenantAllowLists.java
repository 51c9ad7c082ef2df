package dev.fairq.worker.handlers;

import org.jooq.DSLContext;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * Each tenant's {@code webhook_allow} list, cached for a short time: an admin's change applies within the
 * TTL, and a busy tenant costs at most one load per TTL however many jobs it runs (concurrent misses of one
 * tenant wait for a single load instead of each issuing their own). A failed load is not cached; the
 * exception reaches the handler, which logs it and retries the job
 * with a message of its own (the exception's text, SQL and database address, stays out of last_error).
 */
final class TenantAllowLists implements Function<String, List<String>> {
    static final Duration DEFAULT_TTL = Duration.ofSeconds(1);

    private final Function<String, List<String>> loader;
    private final long ttlNanos;
    private final LongSupplier nanoTime;
    private final Map<String, Slot> slots = new ConcurrentHashMap<>();

    TenantAllowLists(Function<String, List<String>> loader, Duration ttl, LongSupplier nanoTime) {
        this.loader = loader;
        this.ttlNanos = ttl.toNanos();
        this.nanoTime = nanoTime;
    }

    static TenantAllowLists fromDatabase(DSLContext db) {
        return new TenantAllowLists(tenant -> List.copyOf(
                db.resultQuery("SELECT unnest(webhook_allow) FROM tenants WHERE id = ?", tenant).fetch(0, String.class)),
                DEFAULT_TTL, System::nanoTime);
    }

    @Override
    public List<String> apply(String tenant) {
        return slots.computeIfAbsent(tenant, t -> new Slot()).get(tenant);
    }

    private final class Slot {
        private List<String> value;
        private long loadedAt;

        synchronized List<String> get(String tenant) {
            long now = nanoTime.getAsLong();
            if (value == null || now - loadedAt >= ttlNanos) {
                value = loader.apply(tenant);
                loadedAt = nanoTime.getAsLong();
            }
            return value;
        }
    }
}

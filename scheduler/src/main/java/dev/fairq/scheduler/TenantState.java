package dev.fairq.scheduler;

import dev.fairq.schema.TenantLimits;

import java.util.function.LongSupplier;

/**
 * What the active scheduler keeps in memory per tenant: its limits, its token bucket and its virtual time
 * ({@code pass}) for weighted fair queueing. All of it can be rebuilt from the tables: a new leader starts
 * with full buckets and equal passes.
 */
public final class TenantState {
    private TenantLimits limits;
    private final TokenBucket bucket;
    /** Stride scheduling's virtual time: grows by 1/weight per admitted job. */
    double pass;
    /** Whether the tenant was eligible at the previous admission round (a newcomer is lifted to the pack). */
    boolean eligibleLastRound;
    /** When a job of the tenant was last admitted or took a grant (Long.MIN_VALUE: never, as leader). */
    long lastActiveNanos = Long.MIN_VALUE;

    TenantState(TenantLimits limits, LongSupplier nanoTime) {
        this.limits = limits;
        this.bucket = new TokenBucket(limits.ratePerSecond(), limits.burst(), nanoTime);
    }

    /** Bumped at every re-read of changed limits: a changed tenant's state is published again. */
    long limitsVersion;

    void update(TenantLimits newLimits) {
        if (newLimits.equals(limits)) return; // the scheduler's sweep re-reads unchanged tenants
        limitsVersion++;
        if (newLimits.ratePerSecond() != limits.ratePerSecond() || newLimits.burst() != limits.burst()) {
            bucket.reconfigure(newLimits.ratePerSecond(), newLimits.burst());
        }
        this.limits = newLimits;
    }

    public TenantLimits limits() {
        return limits;
    }

    public TokenBucket bucket() {
        return bucket;
    }

    public String id() {
        return limits.id();
    }

    public int weight() {
        return limits.weight();
    }

    public double pass() {
        return pass;
    }
}

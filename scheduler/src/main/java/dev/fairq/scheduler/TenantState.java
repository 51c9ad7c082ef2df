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
    /** When the scheduler last saw one of its grants used, and until when it gets spares (Scheduler#SPARE_KEEP_NANOS). */
    long lastGrantUseNanos = Long.MIN_VALUE;
    long spareUntilNanos = Long.MIN_VALUE;
    /**
     * How many tenant grants it is to hold while it gets spares (2 to Scheduler#MAX_TENANT_GRANTS): twice as many
     * each time a round admits one of its jobs meanwhile (it found every grant used), one less for each spare that
     * goes back unused.
     */
    int grantsWanted = 2;
    /** When it last started getting spares (a round admitting its job at that very tick is not a miss of one). */
    long sparesSinceNanos = Long.MIN_VALUE;
    /** One above the highest grant slot it was ever seen holding: the slots a count of its grants looks at. */
    int slotsSeen = 1;
    /** Its grants' ids by slot (Admission#grantId), made once: rounds look them up for every tenant they read. */
    private String[] grantIds;
    /**
     * What one of its jobs costs the virtual clock before the weight, for plans and grants: 1 when shares are
     * by jobs; with shares by worker time, its estimated seconds per job (all types; see WorkerTimeCosts).
     */
    double unitCost = 1.0;
    /** The charge of its last pick: how far ahead of the virtual time its pass may be after it. */
    double lastCharge = 1.0;
    /**
     * Fair queueing among the tenant's fairness keys, one level down: each key's virtual time, only for keys
     * ahead of {@link #keyVirtualTime} (a key at or behind it would be lifted to it anyway, so it is dropped: the
     * map holds the keys with work lately, never every key seen).
     */
    final java.util.Map<String, Double> keyPass = new java.util.HashMap<>();
    /** The key virtual time at which the tenant's latest pick was made. */
    double keyVirtualTime;
    /** Its candidates had fairness keys (a full buffer may take a newly active key's first job). */
    boolean usesFairnessKeys;
    /**
     * Its fairness keys with a job admitted lately, with when (the scheduler's clock; the last two): the keys that
     * may get a key grant once quiet. At most {@link Scheduler#RECENT_KEYS} of them, the most recent.
     */
    final java.util.Map<String, long[]> recentKeys = new java.util.HashMap<>();

    /** A job of the key was admitted (or took its key grant): {last, the one before} admission times. */
    void keyAdmitted(String key, long nanos) {
        long[] at = recentKeys.get(key);
        if (at == null) {
            recentKeys.put(key, new long[]{nanos, Long.MIN_VALUE / 2});
        } else if (at[0] != nanos) {
            at[1] = at[0];
            at[0] = nanos;
        }
        if (recentKeys.size() > Scheduler.RECENT_KEYS) {
            String oldest = null;
            for (java.util.Map.Entry<String, long[]> e : recentKeys.entrySet()) {
                if (oldest == null || e.getValue()[0] < recentKeys.get(oldest)[0]) oldest = e.getKey();
            }
            recentKeys.remove(oldest);
        }
    }
    /** With shares by worker time: estimates and charges not yet settled, per job type (WorkerTimeCosts). */
    final java.util.Map<String, WorkerTimeCosts.TypeCost> costs = new java.util.HashMap<>();
    /** With shares by worker time: grants charged and not yet settled (a grant's job type is not known). */
    final WorkerTimeCosts.Charges grantCharges = new WorkerTimeCosts.Charges();

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

    String grantId(int slot) {
        if (slot == 0) return id(); // every round asks for it; no array for a tenant that never gets a spare
        if (grantIds == null) grantIds = new String[Scheduler.MAX_TENANT_GRANTS];
        String id = grantIds[slot];
        if (id == null) grantIds[slot] = id = dev.fairq.schema.Admission.grantId(id(), slot);
        return id;
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

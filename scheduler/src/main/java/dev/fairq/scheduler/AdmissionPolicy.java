package dev.fairq.scheduler;

import java.util.List;
import java.util.Map;

/**
 * Decides which waiting jobs go next, across tenants, and in what order workers will start them. The
 * candidates respect every tenant's limits already (tokens, max_running, paused); a policy orders and cuts
 * them, and gives each pick a rank: workers claim ready jobs lowest rank first.
 */
public interface AdmissionPolicy {
    /** A chosen job, its claim rank, and what it cost its tenant's virtual clock before the weight. */
    record Pick(String tenantId, long jobId, double rank, double cost) {
        public Pick(String tenantId, long jobId, double rank) {
            this(tenantId, jobId, rank, 1.0);
        }
    }

    /**
     * What admitting a job costs its tenant's virtual clock before the weight: 1 per job
     * ({@code FAIRQ_FAIR_SHARE=jobs}), or its estimated seconds of worker time ({@code time}).
     */
    @FunctionalInterface
    interface Cost {
        double of(TenantState tenant, long jobId);

        Cost PER_JOB = (tenant, jobId) -> 1.0;
    }

    /**
     * @param candidates per tenant, its admissible jobs in its own aging order
     * @param n          how many to pick at most
     * @param nextRank   the lowest rank in the ready buffer (the next job to start), null when it is empty
     * @param lastRank   the highest rank in the ready buffer, null when it is empty
     * @return the picks in admission order
     */
    List<Pick> choose(Map<String, List<Long>> candidates, Map<String, TenantState> tenants, int n,
                      Double nextRank, Double lastRank, Cost cost);

    /** {@link #choose(Map, Map, int, Double, Double, Cost)} with one unit per job. */
    default List<Pick> choose(Map<String, List<Long>> candidates, Map<String, TenantState> tenants, int n,
                              Double nextRank, Double lastRank) {
        return choose(candidates, tenants, n, nextRank, lastRank, Cost.PER_JOB);
    }

    /**
     * How many candidates to fetch per tenant for a round of {@code n} picks, given what each may take at
     * most: a policy that can tell its picks from the counts alone answers exactly, so the scheduler does
     * not read (and discard) candidates that would not be picked (each tenant's picks cost its
     * {@code unitCost}; with per-job costs the plan is close, and the scheduler tops a short round up once).
     * The default fetches every tenant's limit.
     */
    default Map<String, Integer> fetchPlan(Map<String, Integer> limits, Map<String, TenantState> tenants, int n,
                                           Double nextRank) {
        return limits;
    }

    /**
     * Accounts one admission granted in advance to a tenant with nothing waiting as a pick of that tenant
     * (see Scheduler, admission grants), at its {@code unitCost}; the granted job itself is ranked at the front
     * of the claim order.
     */
    void chargeGrant(TenantState tenant, Double nextRank);

    /**
     * The virtual time a tenant that becomes active would start at: a cached tenant whose pass is not ahead
     * of it can be forgotten without losing anything.
     */
    double virtualTime(Double nextRank);

    /**
     * Moves a tenant's virtual time by a correction (an attempt's actual worker time minus what was charged for
     * it, over the weight); a policy without virtual time ignores it. {@code nextRank} as in {@link #choose}.
     */
    default void correct(TenantState tenant, double costDelta, Double nextRank) {
    }

    /** A new term as leader: forget the virtual time. */
    void reset();
}

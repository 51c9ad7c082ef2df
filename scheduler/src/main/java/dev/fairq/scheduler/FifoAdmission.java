package dev.fairq.scheduler;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * Plain first-in-first-out across tenants (by job id), weights ignored: what a queue without fairness does.
 * Tenant limits still apply (they shaped the candidates). Kept as the baseline of the fairness benchmark
 * and for operators who want strict global FIFO. Ranks only grow, so the ready buffer is FIFO too.
 */
public final class FifoAdmission implements AdmissionPolicy {
    private double nextRankToGive;

    @Override
    public List<Pick> choose(Map<String, List<Long>> candidates, Map<String, TenantState> tenants, int n,
                             Double nextRank, Double lastRank, Cost cost) {
        if (lastRank != null) nextRankToGive = Math.max(nextRankToGive, lastRank + 1);
        List<long[]> all = new ArrayList<>();
        List<String> tenantOf = new ArrayList<>();
        candidates.forEach((tenant, ids) -> ids.forEach(id -> {
            all.add(new long[]{id, tenantOf.size()});
            tenantOf.add(tenant);
        }));
        all.sort(Comparator.comparingLong(a -> a[0]));
        List<Pick> picks = new ArrayList<>(Math.min(n, all.size()));
        for (long[] a : all.subList(0, Math.min(n, all.size()))) {
            picks.add(new Pick(tenantOf.get((int) a[1]), a[0], nextRankToGive++));
        }
        return picks;
    }

    /** No virtual time to charge: FIFO ignores weights. */
    @Override
    public void chargeGrant(TenantState tenant, Double nextRank) {
    }

    /** FIFO keeps no per-tenant credit: any idle tenant can be forgotten. */
    @Override
    public double virtualTime(Double nextRank) {
        return Double.POSITIVE_INFINITY;
    }

    @Override
    public void reset() {
        nextRankToGive = 0;
    }
}

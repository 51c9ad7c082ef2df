package dev.fairq.scheduler;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * Plain first-in-first-out across tenants (by job id), weights ignored: what a queue without fairness does.
 * Tenant limits still apply (they shaped the candidates). Kept as the baseline of the fairness benchmark
 * and for operators who want strict global FIFO.
 */
public final class FifoAdmission implements AdmissionPolicy {
    @Override
    public List<Pick> choose(Map<String, List<Long>> candidates, Map<String, TenantState> tenants, int n) {
        List<Pick> all = new ArrayList<>();
        candidates.forEach((tenant, ids) -> ids.forEach(id -> all.add(new Pick(tenant, id))));
        all.sort(Comparator.comparingLong(Pick::jobId));
        return all.size() <= n ? all : all.subList(0, n);
    }
}

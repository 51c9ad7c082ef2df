package dev.fairq.scheduler;

import java.util.List;
import java.util.Map;

/**
 * Decides which waiting jobs go next, across tenants. The candidates respect every tenant's limits already
 * (tokens, max_running, paused); a policy only orders and cuts them.
 */
public interface AdmissionPolicy {
    /** A chosen job. */
    record Pick(String tenantId, long jobId) {}

    /**
     * @param candidates per tenant, its admissible jobs in its own aging order
     * @param n          how many to pick at most
     * @return the picks in admission order
     */
    List<Pick> choose(Map<String, List<Long>> candidates, Map<String, TenantState> tenants, int n);
}

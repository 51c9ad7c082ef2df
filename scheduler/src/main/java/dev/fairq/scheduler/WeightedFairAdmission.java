package dev.fairq.scheduler;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;

/**
 * Weighted fair queueing by stride scheduling. Each tenant has a virtual time (pass) that advances by
 * 1/weight per admitted job; the eligible tenant with the lowest pass goes next (ties by tenant id, so the
 * order is deterministic). Over any stretch where tenants stay eligible, their admissions split in the
 * ratio of their weights.
 *
 * <p>No credit is hoarded: a tenant that becomes eligible (new, back from idle, or no longer held back by
 * its own rate or concurrency limit) starts at the lowest pass among the tenants already eligible, so it
 * gets its fair share at once but cannot claim the turns it did not use.
 *
 * <p>Work-conserving: only eligible tenants are considered, so capacity never idles while any tenant has
 * admissible work.
 */
public final class WeightedFairAdmission implements AdmissionPolicy {
    /**
     * The system's virtual time: the pass at which the latest pick was made. A newcomer that finds no tenant
     * still eligible from the previous round (the incumbents momentarily held back by their rate or cap, or
     * out of due work) starts here; starting at its own old pass would hand it every turn taken meanwhile.
     */
    private double virtualTime;

    @Override
    public List<Pick> choose(Map<String, List<Long>> candidates, Map<String, TenantState> tenants, int n) {
        List<TenantState> eligible = new ArrayList<>();
        for (Map.Entry<String, List<Long>> e : candidates.entrySet()) {
            TenantState t = tenants.get(e.getKey());
            if (t != null && !e.getValue().isEmpty()) eligible.add(t);
        }
        liftNewcomers(eligible, tenants, virtualTime);

        record Cursor(TenantState tenant, List<Long> jobs, int[] next) {}
        PriorityQueue<Cursor> queue = new PriorityQueue<>(Comparator
                .comparingDouble((Cursor c) -> c.tenant().pass).thenComparing(c -> c.tenant().id()));
        for (TenantState t : eligible) queue.add(new Cursor(t, candidates.get(t.id()), new int[]{0}));

        List<Pick> picks = new ArrayList<>(n);
        while (picks.size() < n && !queue.isEmpty()) {
            Cursor c = queue.poll();
            virtualTime = Math.max(virtualTime, c.tenant().pass);
            picks.add(new Pick(c.tenant().id(), c.jobs().get(c.next()[0]++)));
            c.tenant().pass += 1.0 / c.tenant().weight();
            if (c.next()[0] < c.jobs().size()) queue.add(c);
        }
        return picks;
    }

    private static void liftNewcomers(List<TenantState> eligible, Map<String, TenantState> tenants,
                                      double virtualTime) {
        double floor = Double.POSITIVE_INFINITY;
        for (TenantState t : eligible) if (t.eligibleLastRound) floor = Math.min(floor, t.pass);
        if (floor == Double.POSITIVE_INFINITY) floor = virtualTime;
        for (TenantState t : tenants.values()) t.eligibleLastRound = false;
        for (TenantState t : eligible) {
            if (t.pass < floor) t.pass = floor;
            t.eligibleLastRound = true;
        }
    }
}

package dev.fairq.scheduler;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;

/**
 * Weighted fair queueing by stride scheduling. Each tenant has a virtual time (pass) that advances by
 * cost/weight per admitted job (cost: 1, or the job's estimated seconds of worker time; see {@link Cost});
 * the eligible tenant with the lowest pass goes next (ties by tenant id, so the
 * order is deterministic). Over any stretch where tenants stay eligible, their admissions split in the
 * ratio of their weights.
 *
 * <p>Each pick's rank is its start tag (the tenant's pass when picked), and workers claim ready jobs in rank
 * order. So fairness holds at the point where jobs start, not only where they are admitted: a tenant that
 * becomes eligible starts at the system's virtual time, which is the rank of the next job to start, and its
 * jobs interleave by weight with those already waiting in the ready buffer instead of queueing behind them.
 *
 * <p>No credit is hoarded: a tenant that becomes eligible (new, back from idle, or no longer held back by
 * its own rate or concurrency limit) is lifted to the system's virtual time, so it gets its fair share at
 * once but cannot claim the turns it did not use. Work-conserving: only eligible tenants are considered.
 */
public final class WeightedFairAdmission implements AdmissionPolicy {
    /**
     * The pass at which the latest pick was made: the system's virtual time when the ready buffer is empty
     * (everything admitted has started).
     */
    private double lastPicked;

    /** The tenants that were eligible at the last round (their flags are cleared when they drop out). */
    private Set<String> eligibleBefore = new HashSet<>();

    @Override
    public List<Pick> choose(Map<String, List<Long>> candidates, Map<String, TenantState> tenants, int n,
                             Double nextRank, Double lastRank, Cost cost) {
        List<TenantState> eligible = new ArrayList<>();
        Set<String> eligibleNow = new HashSet<>();
        for (Map.Entry<String, List<Long>> e : candidates.entrySet()) {
            TenantState t = tenants.get(e.getKey());
            if (t != null && !e.getValue().isEmpty()) {
                eligible.add(t);
                eligibleNow.add(t.id());
            }
        }
        // Only the tenants eligible now or at the last round are touched: a pass over every cached tenant per
        // round (with a list lookup inside) cost O(tenants^2), the largest part of a tick at 10,000 tenants.
        double virtualTime = virtualTime(nextRank);
        for (String id : eligibleBefore) {
            TenantState t = tenants.get(id);
            if (t != null && !eligibleNow.contains(id)) t.eligibleLastRound = false;
        }
        for (TenantState t : eligible) {
            if (!t.eligibleLastRound && t.pass < virtualTime) t.pass = virtualTime;
            t.eligibleLastRound = true;
        }
        eligibleBefore = eligibleNow;

        record Cursor(TenantState tenant, List<Long> jobs, int[] next) {}
        PriorityQueue<Cursor> queue = new PriorityQueue<>(Comparator
                .comparingDouble((Cursor c) -> c.tenant().pass).thenComparing(c -> c.tenant().id()));
        for (TenantState t : eligible) queue.add(new Cursor(t, candidates.get(t.id()), new int[]{0}));

        List<Pick> picks = new ArrayList<>(n);
        while (picks.size() < n && !queue.isEmpty()) {
            Cursor c = queue.poll();
            TenantState t = c.tenant();
            lastPicked = Math.max(lastPicked, t.pass);
            long job = c.jobs().get(c.next()[0]++);
            double charge = cost.of(t, job);
            picks.add(new Pick(t.id(), job, t.pass, charge));
            t.pass += charge / t.weight();
            t.lastCharge = charge;
            if (c.next()[0] < c.jobs().size()) queue.add(c);
        }
        return picks;
    }

    /**
     * The picks {@link #choose} would make if every tenant had its limit of candidates, counted per tenant:
     * the same stride order on copies of the passes (nothing changes here). Without it each tenant's full
     * limit was read every round, about ten times the jobs admitted with ten busy tenants.
     */
    @Override
    public Map<String, Integer> fetchPlan(Map<String, Integer> limits, Map<String, TenantState> tenants, int n,
                                          Double nextRank) {
        Map<String, Integer> plan = new java.util.HashMap<>();
        if (n <= 0) return plan;
        double virtualTime = virtualTime(nextRank);
        record Slot(String id, double stride, int limit, double[] pass, int[] taken) {}
        Comparator<Slot> order = Comparator.comparingDouble((Slot s) -> s.pass()[0]).thenComparing(Slot::id);
        // Only the n lowest passes can receive any of n picks (a tenant behind n others is reached only after
        // each of them was picked once), so the rest never enter the queue: with 10,000 tenants of a few jobs
        // each and ~300 picks a round, building the queue of all of them was most of fetchPlan's time.
        PriorityQueue<Slot> lowest = new PriorityQueue<>(Math.min(n, Math.max(1, limits.size())), order.reversed());
        limits.forEach((id, limit) -> {
            TenantState t = tenants.get(id);
            if (t == null || limit <= 0) return;
            double pass = !t.eligibleLastRound && t.pass < virtualTime ? virtualTime : t.pass;
            Slot slot = new Slot(id, t.unitCost / t.weight(), limit, new double[]{pass}, new int[]{0});
            if (lowest.size() < n) lowest.add(slot);
            else if (order.compare(slot, lowest.peek()) < 0) {
                lowest.poll();
                lowest.add(slot);
            }
        });
        PriorityQueue<Slot> queue = new PriorityQueue<>(Math.max(1, lowest.size()), order);
        queue.addAll(lowest);
        for (int picked = 0; picked < n && !queue.isEmpty(); picked++) {
            Slot s = queue.poll();
            s.taken()[0]++;
            plan.merge(s.id(), 1, Integer::sum);
            s.pass()[0] += s.stride();
            if (s.taken()[0] < s.limit()) queue.add(s);
        }
        return plan;
    }

    /** A quiet tenant starts at the system's virtual time, like any tenant that becomes eligible. */
    @Override
    public void chargeGrant(TenantState t, Double nextRank) {
        double virtualTime = virtualTime(nextRank);
        if (t.pass < virtualTime) t.pass = virtualTime;
        t.pass += t.unitCost / t.weight();
        t.lastCharge = t.unitCost;
    }

    /**
     * An attempt took more (or less) worker time than its charge: the difference moves the tenant's pass. A
     * tenant that is not competing is lifted to the virtual time when it returns anyway, so a credit cannot be
     * hoarded; a debt is paid by waiting, as if the estimate had been right. A credit takes a tenant's pass down
     * to the virtual time (the claim point) and no further: below it the tenant's next jobs would be ranked ahead
     * of jobs already waiting at the claim point, and a tenant that becomes active, which starts there, would
     * wait behind all of them. Measured: a fresh leader charged a flood's first 2,000 jobs its 10 ms guess for
     * 5 ms jobs; the credit, seconds of virtual time, ranked the flood's next jobs ahead of a trickling tenant's
     * for 0.5 s (fairness bench, b's slowest job 376 ms behind 567 of the flood's).
     */
    @Override
    public void correct(TenantState t, double costDelta, Double nextRank) {
        double after = t.pass + costDelta / t.weight();
        if (costDelta < 0) {
            double floor = Math.min(t.pass, virtualTime(nextRank));
            if (after < floor) after = floor;
        }
        t.pass = after;
    }

    /** The rank of the next job to start, or the latest pick's pass when the buffer is empty. */
    @Override
    public double virtualTime(Double nextRank) {
        return nextRank != null ? nextRank : lastPicked;
    }

    @Override
    public void reset() {
        lastPicked = 0;
        eligibleBefore = new HashSet<>();
    }
}

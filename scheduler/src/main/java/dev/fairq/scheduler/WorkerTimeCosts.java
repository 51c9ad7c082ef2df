package dev.fairq.scheduler;

import dev.fairq.schema.Admission;

import java.util.Map;

/**
 * Shares by worker time ({@code FAIRQ_FAIR_SHARE=time}): what a job is charged at admission, and how the charge
 * is settled once its attempt has ended.
 *
 * <p>A job is charged the estimate of its tenant and type: an exponentially weighted mean of the worker time of
 * that pair's finished attempts (weight {@link #ALPHA} per attempt, so about the last ten count). A pair never
 * seen is charged the tenant's mean over its types, else the mean of every finished attempt the scheduler has
 * seen. Charges are clamped to [{@link #MIN_SECONDS}, {@link #MAX_SECONDS}]: a job that takes no measurable time
 * still costs a turn (its claim and completion are work too), and one estimate cannot push a tenant more than a
 * minute of worker time down the order.
 *
 * <p>When attempts end, the scheduler reads their worker time (Admission.FINISHED_WORK) and settles: the
 * actual time minus what was charged for them (the mean of the pair's unsettled charges) moves the tenant's
 * virtual time. The actual time of each attempt counts at least {@link #MIN_SECONDS}, as its charge did: refunded
 * to a no-op's 10 us, busy tenants' virtual times stood still, and a tenant lifted to the virtual time waited
 * behind them: in the latency benchmark, behind ten streaming tenants, created to admitted p50 170 ms, p99 2.6 s.
 * So the estimate only decides the order while jobs run; over time a tenant pays what its jobs actually took.
 * What an estimate error costs: a tenant whose jobs suddenly take k times longer gets up to
 * (one buffer of its jobs) x k worth of extra worker time before the correction lands, which it then pays back
 * by waiting.
 *
 * <p>Memory: a few numbers per (active tenant, job type), at most {@link #MAX_TYPES_PER_TENANT} types per tenant;
 * dropped with the tenant when it leaves the scheduler's cache.
 */
final class WorkerTimeCosts {
    /** Each finished attempt moves its pair's estimate a fifth of the way: about the last ten attempts count. */
    static final double ALPHA = 0.2;
    /** 1 ms: a job is never free (its claim and completion take about that of a worker thread). */
    static final double MIN_SECONDS = 0.001;
    /** A minute: the most one job moves its tenant down the order before its actual time is known. */
    static final double MAX_SECONDS = 60.0;
    /** What a job is charged before anything has finished: 10 ms, a typical short job. */
    static final double DEFAULT_SECONDS = 0.010;
    /** Types per tenant with an estimate of their own; more share the tenant's mean (bounded memory). */
    static final int MAX_TYPES_PER_TENANT = 64;

    /** Charges made and not yet settled: how many, and their seconds in all. */
    static final class Charges {
        long count;
        double seconds;

        void add(double charge) {
            count++;
            seconds += charge;
        }

        /** Settles up to {@code n} of the charges at their mean; returns the seconds settled. */
        double settle(long n) {
            long settling = Math.min(count, n);
            if (settling <= 0) return 0;
            double settled = settling * (seconds / count);
            count -= settling;
            seconds = count == 0 ? 0 : Math.max(0, seconds - settled);
            return settled;
        }
    }

    /** A (tenant, type) pair's estimate and its charges not yet settled. */
    static final class TypeCost {
        double estimate;
        final Charges unsettled = new Charges();
        /** Attempts learnt from: the first ones replace the guess outright. */
        long observed;

        TypeCost(double estimate) {
            this.estimate = estimate;
        }
    }

    private double globalEstimate = DEFAULT_SECONDS;

    /** The charge of a job of this type of the tenant, in seconds of worker time (clamped). */
    double estimate(TenantState t, String type) {
        TypeCost c = type == null ? null : t.costs.get(type);
        double e = c != null ? c.estimate : tenantMean(t);
        return clamp(e);
    }

    /** The tenant's mean estimate over its types, or the global one: its unit cost for plans and grants. */
    double tenantMean(TenantState t) {
        if (t.costs.isEmpty()) return clamp(globalEstimate);
        double sum = 0;
        for (TypeCost c : t.costs.values()) sum += c.estimate;
        return clamp(sum / t.costs.size());
    }

    /** Records a charge made at admission (to be settled when the attempt's time is read). */
    void charged(TenantState t, String type, double seconds) {
        TypeCost c = pair(t, type);
        if (c == null) return;
        c.unsettled.add(seconds);
    }

    /** Records a grant's charge: its job's type is known only once it ran, so it settles any type's attempt. */
    void chargedGrant(TenantState t, double seconds) {
        t.grantCharges.add(seconds);
    }

    /** A grant taken back unused: its charge stays on the tenant's clock, but no attempt will settle it. */
    void grantRevoked(TenantState t) {
        t.grantCharges.settle(1);
    }

    /**
     * Learns from attempts that finished and settles their charges; returns the correction in seconds (actual
     * minus charged) to move the tenant's virtual time by. Attempts beyond the pair's unsettled charges settle
     * the tenant's grant charges (a granted job was charged when the grant was made). Attempts admitted by an
     * earlier leader have no charge here: they are charged their actual time in full. Without the grants, a quiet
     * tenant whose jobs took grants paid each twice, and its clock ran ahead of the busy tenants' (fairness
     * bench: its last job queued 51 ms behind 111 of the flooding tenant's).
     */
    double finished(TenantState t, Admission.FinishedWork w) {
        if (w.attempts() <= 0) return 0;
        double mean = w.seconds() / w.attempts();
        double weightOfBatch = 1 - Math.pow(1 - ALPHA, Math.min(w.attempts(), 1000));
        globalEstimate += (mean - globalEstimate) * weightOfBatch; // a new pair's first guess
        TypeCost c = pair(t, w.type());
        double charged = 0;
        long settled = 0;
        if (c != null) {
            c.estimate = c.observed == 0 ? mean : c.estimate + (mean - c.estimate) * weightOfBatch;
            c.observed += w.attempts();
            settled = Math.min(c.unsettled.count, w.attempts());
            charged = c.unsettled.settle(settled);
        }
        charged += t.grantCharges.settle(w.attempts() - settled);
        t.unitCost = tenantMean(t);
        return w.seconds() - charged;
    }

    /** Forgets the unsettled charges (a new term as leader: passes start over). */
    void reset() {
        globalEstimate = DEFAULT_SECONDS;
    }

    /** The pair's record, created at the tenant's mean; null once the tenant has too many types. */
    private TypeCost pair(TenantState t, String type) {
        if (type == null) return null;
        TypeCost c = t.costs.get(type);
        if (c == null && t.costs.size() < MAX_TYPES_PER_TENANT) {
            c = new TypeCost(tenantMean(t));
            t.costs.put(type, c);
        }
        return c;
    }

    /** Copies of the estimates of a tenant, type -> seconds (explain and tests). */
    static Map<String, Double> estimates(TenantState t) {
        Map<String, Double> out = new java.util.TreeMap<>();
        t.costs.forEach((type, c) -> out.put(type, c.estimate));
        return out;
    }

    private static double clamp(double seconds) {
        return Math.max(MIN_SECONDS, Math.min(MAX_SECONDS, seconds));
    }
}

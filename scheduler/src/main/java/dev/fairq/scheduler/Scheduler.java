package dev.fairq.scheduler;

import dev.fairq.schema.Admission;
import dev.fairq.schema.JobStore;
import dev.fairq.schema.QueueClock;
import dev.fairq.schema.SchedulerStates;
import dev.fairq.schema.TenantLimits;
import dev.fairq.schema.generated.tables.records.TenantsRecord;
import org.jooq.DSLContext;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.HashSet;
import java.util.Set;

import static dev.fairq.schema.generated.Tables.TENANTS;

/**
 * One admission round at a time ({@link #tick}): how many jobs the ready buffer needs, which tenants may
 * start jobs (tokens, max_running, paused), which of their jobs go next (the policy), then one statement
 * that admits them; then the admission grants of quiet tenants are kept up to date. No leadership here:
 * {@link SchedulerService} runs ticks only while it holds the lock, and tests call {@link #tick} directly
 * with an injected clock.
 */
public final class Scheduler {
    private final JobStore store;
    private final SchedulerConfig config;
    private final AdmissionPolicy policy;
    private final QueueClock clock;

    private final Map<String, TenantState> tenants = new HashMap<>();
    private long tenantsLoadedAt = Long.MIN_VALUE;
    /** Recent admissions (nanoTime, count), to size the buffer from what the workers actually consume. */
    private final ArrayDeque<long[]> recent = new ArrayDeque<>();
    private long recentTotal;
    /** The tenants that held an admission grant after the last round: one missing now has used it. */
    private Set<String> grantsAfterLastTick = Set.of();

    /** A grant goes to a tenant active this recently, and is taken back when unused this long. */
    static final long GRANT_WINDOW_NANOS = 60_000_000_000L;

    /** What one round did. */
    public record TickResult(int wanted, int admitted, List<String> admittedTenants, long nanosUntilNextToken,
                             boolean fetchCutShort) {
        static TickResult none(int wanted, long nanosUntilNextToken) {
            return new TickResult(wanted, 0, List.of(), nanosUntilNextToken, false);
        }

        /**
         * There was room in the buffer and jobs filled all of it, or a tenant that got fewer jobs than the
         * fetch plan expected left room other tenants' unfetched jobs can fill: more are probably waiting.
         */
        public boolean saturated() {
            return wanted > 0 && (admitted == wanted || fetchCutShort);
        }
    }

    /** A scheduler on the store's clock (the one clock of the queue; a {@link dev.fairq.schema.SettableClock} in tests). */
    public Scheduler(JobStore store, SchedulerConfig config) {
        this.store = store;
        this.config = config;
        this.policy = config.fair() ? new WeightedFairAdmission() : new FifoAdmission();
        this.clock = store.clock();
    }

    /** Forget everything (a new term as leader): state is rebuilt from the tables at the next tick. */
    public synchronized void reset() {
        tenants.clear();
        tenantsLoadedAt = Long.MIN_VALUE;
        recent.clear();
        recentTotal = 0;
        grantsAfterLastTick = Set.of();
    }

    /** A read-only view of the tenants' in-memory state (limits, tokens, pass), for metrics and explain. */
    public synchronized Map<String, TenantState> tenants() {
        return Collections.unmodifiableMap(new HashMap<>(tenants));
    }

    /**
     * What explain needs from memory, per tenant: tokens, time to the next token, pass, and the tenant's place
     * in the weighted-fair order among the tenants that competed in the last admission round (1 = next).
     */
    public synchronized List<SchedulerStates.State> snapshot() {
        List<TenantState> competing = new ArrayList<>();
        for (TenantState t : tenants.values()) if (t.eligibleLastRound) competing.add(t);
        competing.sort(java.util.Comparator.comparingDouble(TenantState::pass).thenComparing(TenantState::id));
        List<SchedulerStates.State> out = new ArrayList<>(tenants.size());
        for (TenantState t : tenants.values()) {
            int rank = competing.indexOf(t);
            out.add(new SchedulerStates.State(t.id(), t.bucket().available(),
                    t.bucket().nanosUntilNextToken() / 1_000_000, t.pass(), rank < 0 ? null : rank + 1,
                    competing.size(), null, null));
        }
        return out;
    }

    public synchronized TickResult tick(DSLContext ctx) {
        long now = clock.nanoTime();
        if (tenantsLoadedAt == Long.MIN_VALUE || now - tenantsLoadedAt >= config.tenantReload().toNanos()) {
            loadTenants(ctx);
            tenantsLoadedAt = now;
        }
        Admission.QueueLoad load = store.load(ctx, config.workerLiveness());

        List<String> pausedWithReady = new ArrayList<>();
        int unadmitted = 0;
        for (TenantState t : tenants.values()) {
            if (t.limits().paused() && load.ready(t.id()) > 0) {
                pausedWithReady.add(t.id());
                unadmitted += load.ready(t.id());
            }
        }
        store.admission().unadmitPaused(ctx, pausedWithReady);

        Set<String> withWork = new HashSet<>(load.tenantsWithWork());
        Map<String, Double> grants = keepValidGrants(ctx, now, load, withWork);
        int capacity = config.fixedCapacity() > 0 ? config.fixedCapacity() : load.workerCapacity();
        TickResult result = admit(ctx, now, load, capacity, unadmitted, grants);
        if (grantsOn()) grantToQuietTenants(ctx, now, load, withWork, capacity, grants, result);
        grantsAfterLastTick = grants.keySet();
        return result;
    }

    /**
     * One admission round: how many jobs the ready buffer needs, which tenants may start jobs (tokens,
     * max_running (a grant holds one place), paused), which of their jobs go next (the policy), then one
     * statement that admits them.
     */
    private TickResult admit(DSLContext ctx, long now, Admission.QueueLoad load, int capacity, int unadmitted,
                             Map<String, Double> grants) {
        int free = Math.max(0, capacity - load.totalRunning());
        int target = free + bufferSlack(now);
        int wanted = Math.min(config.maxBatch(), target - (load.totalReady() - unadmitted));
        if (wanted <= 0) return TickResult.none(0, Long.MAX_VALUE);

        Map<String, Integer> limits = new LinkedHashMap<>();
        long nextToken = Long.MAX_VALUE; // when a tenant held back only by its rate gets its next token
        for (String tenantId : load.tenantsWithWork()) {
            TenantState t = tenants.get(tenantId);
            if (t == null || t.limits().paused()) continue;
            int room = room(t, load) - (grants.containsKey(tenantId) ? 1 : 0);
            int tokens = t.bucket().available();
            if (room > 0 && tokens == 0) nextToken = Math.min(nextToken, t.bucket().nanosUntilNextToken());
            int lim = Math.min(Math.min(room, tokens), wanted);
            if (lim > 0) limits.put(tenantId, lim);
        }
        if (limits.isEmpty()) return TickResult.none(wanted, nextToken);

        Candidates fetched = fetchCandidates(ctx, limits, wanted, load.nextRank());
        Map<String, List<Long>> candidates = fetched.byTenant();
        boolean fetchCutShort = fetched.cutShort();
        List<AdmissionPolicy.Pick> picks = policy.choose(candidates, tenants, wanted, load.nextRank(), load.lastRank());
        if (picks.isEmpty()) return TickResult.none(wanted, nextToken);

        // Tokens are taken for every pick before the write: a pick that then drops out (cancelled meanwhile)
        // costs its tenant a token, which can only make the rate bound tighter, never looser.
        List<Long> ids = new ArrayList<>(picks.size());
        List<Double> ranks = new ArrayList<>(picks.size());
        Map<Long, String> tenantOf = new HashMap<>();
        for (AdmissionPolicy.Pick p : picks) {
            tenants.get(p.tenantId()).bucket().take(1);
            ids.add(p.jobId());
            ranks.add(p.rank());
            tenantOf.put(p.jobId(), p.tenantId());
        }
        List<Long> admitted = store.admit(ctx, ids, ranks);
        noteAdmissions(now, admitted.size());
        for (AdmissionPolicy.Pick p : picks) tenants.get(p.tenantId()).lastActiveNanos = now;
        List<String> admittedTenants = new ArrayList<>(admitted.size());
        java.util.Set<Long> admittedSet = new java.util.HashSet<>(admitted);
        for (Long id : ids) if (admittedSet.contains(id)) admittedTenants.add(tenantOf.get(id));
        return new TickResult(wanted, admitted.size(), admittedTenants, nextToken,
                fetchCutShort && admitted.size() < wanted);
    }


    /** Each tenant's admissible jobs for a round, and whether the fetch left room unfilled (see below). */
    private record Candidates(Map<String, List<Long>> byTenant, boolean cutShort) {}

    /**
     * Reads the round's candidates: as many per tenant as the policy's plan says it will pick (reading every
     * tenant's whole limit cost ten times the rows admitted with ten busy tenants), topped up once when a
     * tenant had fewer due jobs than planned.
     */
    private Candidates fetchCandidates(DSLContext ctx, Map<String, Integer> limits, int wanted, Double nextRank) {
        Map<String, Integer> fetch = new HashMap<>(policy.fetchPlan(limits, tenants, wanted, nextRank));
        Map<String, List<Long>> candidates = new HashMap<>(store.admissionCandidates(ctx, fetch));
        // A tenant that returned fewer jobs than planned has no more due now (its jobs may all be scheduled
        // later): if that left the round short, fetch once more from every other tenant, up to the whole
        // shortfall each (what every round read before the plan existed), so that however many tenants have
        // only later jobs, a tenant with due jobs is never left out of a round; the policy then picks fairly.
        int fetched = 0;
        for (List<Long> c : candidates.values()) fetched += c.size();
        if (fetched < wanted) {
            Map<String, Integer> rest = new LinkedHashMap<>();
            for (Map.Entry<String, Integer> l : limits.entrySet()) {
                int planned = fetch.getOrDefault(l.getKey(), 0);
                int got = candidates.getOrDefault(l.getKey(), List.of()).size();
                if (got == planned && l.getValue() > got) rest.put(l.getKey(), l.getValue() - got);
            }
            if (!rest.isEmpty()) {
                int shortfall = wanted - fetched;
                Map<String, Integer> refetch = new LinkedHashMap<>();
                rest.forEach((t, n) -> refetch.put(t, fetch.getOrDefault(t, 0) + Math.min(n, shortfall)));
                fetch.putAll(refetch);
                candidates.putAll(store.admissionCandidates(ctx, refetch)); // the first ones again, plus more
            }
        }
        // Tenants cut at their planned share (more jobs than fetched) while another came up short: room was
        // left that the next round can fill, so come back soon.
        boolean underfilled = false, cutAtPlan = false;
        for (Map.Entry<String, Integer> f : fetch.entrySet()) {
            int got = candidates.getOrDefault(f.getKey(), List.of()).size();
            if (got < f.getValue()) underfilled = true;
            else if (f.getValue() < limits.get(f.getKey())) cutAtPlan = true;
        }
        return new Candidates(candidates, underfilled && cutAtPlan);
    }

    /** Jobs the tenant may still have admitted or running under max_running, before this round. */
    private static int room(TenantState t, Admission.QueueLoad load) {
        return t.limits().maxRunning() - load.running(t.id()) - load.ready(t.id());
    }

    /** Grants put a job at the front of the claim order, so plain FIFO (strict global order) has none. */
    private boolean grantsOn() {
        return config.grants() && config.fair();
    }

    /**
     * The grants LOAD found, minus those taken back now: a paused tenant's, one whose tenant has jobs
     * waiting again (its slot goes back to ordinary admission, where aging order decides), and one unused
     * for a minute. A grant that disappeared since the last round was used: its token is spent and its
     * tenant is active. A grant this scheduler did not make (it just became the leader) reserves a token.
     */
    private Map<String, Double> keepValidGrants(DSLContext ctx, long now, Admission.QueueLoad load,
                                                Set<String> withWork) {
        Map<String, Double> grants = new HashMap<>(load.grantAgeSeconds());
        for (String used : grantsAfterLastTick) {
            TenantState t = tenants.get(used);
            if (t != null && !grants.containsKey(used)) {
                t.bucket().settleReservation(true);
                t.lastActiveNanos = now;
            }
        }
        for (String adopted : grants.keySet()) {
            TenantState t = tenants.get(adopted);
            if (t != null && !grantsAfterLastTick.contains(adopted)) t.bucket().reserve();
        }
        List<String> revoke = new ArrayList<>();
        grants.forEach((tenantId, ageSeconds) -> {
            TenantState t = tenants.get(tenantId);
            if (!grantsOn() || t == null || t.limits().paused() || withWork.contains(tenantId)
                    || ageSeconds * 1e9 > GRANT_WINDOW_NANOS) {
                revoke.add(tenantId);
            }
        });
        // a grant an enqueue is taking right now is not revoked (SKIP LOCKED): it stays counted until it is gone
        for (String revoked : store.admission().revokeGrants(ctx, revoke)) {
            grants.remove(revoked);
            TenantState t = tenants.get(revoked);
            if (t != null) t.bucket().settleReservation(false);
        }
        return grants;
    }

    /**
     * Admission grants: one admission made in advance for each quiet tenant (nothing admissible waiting,
     * active in the last minute), so that its next job is inserted ready and starts without waiting for a
     * scheduler round trip (see V4__admission_grants.sql). A grant is an admission like any other: it
     * reserves a token, counts against max_running, and is charged to the tenant by the policy. At most a
     * buffer's worth (the worker capacity) is outstanding, most recently active tenants first.
     */
    private void grantToQuietTenants(DSLContext ctx, long now, Admission.QueueLoad load, Set<String> withWork,
                                     int capacity, Map<String, Double> grants, TickResult admitted) {
        int budget = Math.max(config.minBuffer(), capacity) - grants.size();
        if (budget <= 0) return;
        Map<String, Integer> admittedNow = new HashMap<>();
        for (String t : admitted.admittedTenants()) admittedNow.merge(t, 1, Integer::sum);
        List<TenantState> quiet = new ArrayList<>();
        for (TenantState t : tenants.values()) {
            boolean active = load.running(t.id()) + load.ready(t.id()) > 0
                    || (t.lastActiveNanos != Long.MIN_VALUE && now - t.lastActiveNanos < GRANT_WINDOW_NANOS);
            if (active && !grants.containsKey(t.id()) && !withWork.contains(t.id()) && !t.limits().paused()) {
                quiet.add(t);
            }
        }
        quiet.sort(java.util.Comparator.comparingLong((TenantState t) -> t.lastActiveNanos).reversed()
                .thenComparing(TenantState::id));
        List<String> ids = new ArrayList<>();
        for (TenantState t : quiet) {
            if (ids.size() >= budget) break;
            int room = room(t, load) - admittedNow.getOrDefault(t.id(), 0);
            if (room < 1 || t.bucket().available() < 1) continue;
            t.bucket().reserve();
            ids.add(t.id());
            policy.chargeGrant(t, load.nextRank());
        }
        store.admission().grant(ctx, ids);
        for (String id : ids) grants.put(id, 0.0);
    }

    private void loadTenants(DSLContext ctx) {
        Map<String, TenantLimits> fresh = new HashMap<>();
        for (TenantsRecord r : ctx.selectFrom(TENANTS).fetch()) fresh.put(r.getId(), TenantLimits.of(r));
        tenants.keySet().retainAll(fresh.keySet());
        fresh.forEach((id, limits) -> {
            TenantState state = tenants.get(id);
            if (state == null) tenants.put(id, new TenantState(limits, clock::nanoTime));
            else state.update(limits);
        });
    }

    /** minBuffer, or what the workers consumed over the lookahead at the rate of the last second. */
    private int bufferSlack(long now) {
        long windowStart = now - 1_000_000_000L;
        while (!recent.isEmpty() && recent.peekFirst()[0] < windowStart) recentTotal -= recent.pollFirst()[1];
        long lookaheadJobs = (long) Math.ceil(recentTotal * config.lookahead().toNanos() / 1e9);
        return (int) Math.max(config.minBuffer(), Math.min(config.maxBatch(), lookaheadJobs));
    }

    private void noteAdmissions(long now, int count) {
        if (count == 0) return;
        recent.addLast(new long[]{now, count});
        recentTotal += count;
    }
}

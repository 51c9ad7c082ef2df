package dev.fairq.scheduler;

import dev.fairq.schema.Admission;
import dev.fairq.schema.JobStore;
import dev.fairq.schema.QueueClock;
import dev.fairq.schema.SchedulerStates;
import dev.fairq.schema.TenantLimits;
import dev.fairq.schema.TenantStore;
import dev.fairq.schema.Waker;
import dev.fairq.schema.WorkerRoute;
import dev.fairq.schema.generated.tables.records.TenantsRecord;
import org.jooq.DSLContext;

import java.time.OffsetDateTime;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.PriorityQueue;
import java.util.Set;

/**
 * One admission round at a time ({@link #tick}): how many jobs the ready buffer needs, which tenants may
 * start jobs (tokens, max_running, paused), which of their jobs go next (the policy), then one statement
 * that admits them; then the admission grants of quiet tenants are kept up to date. No leadership here:
 * {@link SchedulerService} runs ticks only while it holds the lock, and tests call {@link #tick} directly
 * on a settable clock.
 *
 * <p><b>Cost follows the active tenants.</b> A tick never reads the tenants table or looks for work among all
 * tenants. The scheduler keeps in memory the set of tenants that may have due work ({@link #wake}: enqueues,
 * retries, reaped leases, promoted ordering heads and replays name their tenant in a wake-up that the
 * database sends at commit), a timer per tenant whose next job is due later (a probe of jobs_due_later_idx),
 * and a bounded cache of the limits, token buckets and virtual times of the tenants that are active or were in
 * the last minute. A tenant leaves the set when a probe finds nothing due; an idle tenant leaves the cache once
 * forgetting it loses nothing (full bucket, no credit). The set is rebuilt from a loose index scan of the
 * tenants with work when a scheduler becomes the leader and, as a safety net, every
 * {@link SchedulerConfig#activeRescan()}.
 */
public final class Scheduler {
    private final JobStore store;
    private final TenantStore tenantStore = new TenantStore();
    private final SchedulerConfig config;
    private final AdmissionPolicy policy;
    private final QueueClock clock;

    /** The cache: limits, token bucket and virtual time of the tenants active now or lately. */
    private final Map<String, TenantState> tenants = new HashMap<>();
    /** Tenants that may have admissible jobs due now: probed when they may take jobs, dropped when found empty. */
    private final Set<String> maybeWork = new LinkedHashSet<>();
    /** The claim point of the last tick's load: the virtual time the snapshot lifts waiting tenants to. */
    private Double lastNextRank;
    /**
     * Tenants in maybeWork whose last candidate read found no job with a concurrency or fairness key: their
     * next reads skip the lane probe (with 10,000 tenants draining, each picked for one job a round, that probe
     * doubled the round's index probes). Forgotten whenever the tenant is named again (see mayHaveWork) or leaves.
     */
    private final Set<String> noKeyedJobs = new HashSet<>();
    /** Tenants that joined maybeWork without limits in the cache: read at the next tick (as few as woke up). */
    private final Set<String> uncached = new HashSet<>();
    /** Tenants whose next job is due later, by due time (one entry per tenant: the earliest). */
    private final PriorityQueue<Timer> timers = new PriorityQueue<>(Comparator.comparingLong(Timer::dueNanos));
    private final Map<String, Long> timerOf = new HashMap<>();
    private long lastRescan = Long.MIN_VALUE;
    private long lastEviction = Long.MIN_VALUE;
    private long lastGrantPass = Long.MIN_VALUE;
    /** Database time of the last read of changed limits, and when (monotonic) it was made. */
    private OffsetDateTime tenantsReadAt;
    private long tenantsLoadedAt = Long.MIN_VALUE;
    /** The sweep's round: the cached tenants when it began, and how far it got. */
    private List<String> sweep = List.of();
    private int swept;
    /** Recent admissions (nanoTime, count), to size the buffer from what the workers actually consume. */
    private final ArrayDeque<long[]> recent = new ArrayDeque<>();
    private long recentTotal;
    /**
     * The admission grants after the last round ({@link Admission#grantId}: one missing now was used), with each grant's
     * age in seconds at that round, {@link #lastTickNanos}: the ticks that do not read the grants age these.
     */
    private Map<String, Double> grantsAfterLastTick = Map.of();
    private long lastTickNanos;
    /** When the tenant grants were last read from the table (LOAD with them). */
    private long lastGrantRead = Long.MIN_VALUE;
    /**
     * Grants the last grant pass made in the round that admitted their tenant's last waiting job. The wake-up of
     * that job can arrive after the round (it was read before its notification was): it must not take the new
     * grant back, or the tenant's next enqueue finds none, and the next grant meets the next late wake-up
     * (measured: a tenant trickling every 30 ms under a flood lost every grant, p50 3.3 -> 21.5 ms).
     */
    private Set<String> grantedWithLastAdmission = Set.of();
    /** Positions in the fair order as of the last {@link #snapshot} (explain's fair_share). */
    private Map<String, Integer> positions = Map.of();
    private int competing;
    private final TickStats tickStats = new TickStats();
    /** Routing: the live workers' routes, read every {@link #ROUTES_EVERY_NANOS}; the set of them as last seen. */
    private List<WorkerRoute.Live> routes = List.of();
    private Set<WorkerRoute> routeSet;
    private long routesReadAt = Long.MIN_VALUE;
    /** The live routes changed and parked jobs may have a worker now: un-park in batches until done. */
    private boolean unparkPending;
    /** Whether a live worker serves a queue and type, per pair met since the routes were last read. */
    private final Map<String, Boolean> routableCache = new HashMap<>();
    /** Candidates of this round that no live worker can run, and their tenants (parked after the fetch). */
    private final Set<Long> toPark = new LinkedHashSet<>();
    private final Set<String> parkedTenants = new HashSet<>();
    /** Shares by worker time: estimates and charges (null when shares are by jobs). */
    private final WorkerTimeCosts costs;
    /** The end of the last read of finished attempts (database time), and when (monotonic) it was made. */
    private OffsetDateTime finishedReadUntil;
    private long finishedReadAt = Long.MIN_VALUE;
    /** Tenants seen with jobs ready or running lately: whose finished attempts to read, and from where. */
    private final Map<String, Settling> settling = new HashMap<>();

    /** A busy tenant's finished-attempt reads: last seen busy and last read (monotonic), read up to (database). */
    private static final class Settling {
        long seen;
        long readAt;
        OffsetDateTime until;

        Settling(long now, OffsetDateTime until) {
            this.seen = this.readAt = now;
            this.until = until;
        }
    }
    /**
     * Tenants taken out of the active set while a concurrency key of theirs was full, with those keys: the
     * LOAD of every tick counts each key's ready and running jobs, and the tenant comes back as soon as one of
     * them has room (a completion is the wake-up). Cost: the tenants held by a key, and their full keys.
     */
    private final Map<String, Set<String>> heldByKeys = new HashMap<>();
    /** Tenants a wake-up named since the last round: new work, maybe a fairness key that was not active. */
    private Set<String> wokenSinceLastRound = new HashSet<>();

    /** The key grants after the last round (tenant + '\0' + grant id): one missing now was used by an enqueue. */
    private Set<String> keyGrantsAfterLastTick = Set.of();
    /** This tick's key grants per tenant (key + '\0' + slot, Admission.KeyGrant.id): LOAD's, minus those taken back. */
    private Map<String, Set<String>> keyGrants = new HashMap<>();
    /** Per tenant the round read: its fairness keys with a job read and not admitted (not quiet). */
    private final Map<String, Set<String>> keysBusy = new HashMap<>();
    /** Per tenant: the lowest rank this round admitted a job of it at (with LOAD's, where its buffered jobs start). */
    private final Map<String, Double> roundFirstRank = new HashMap<>();
    /** Per tenant + '\0' + fairness key: the highest rank this round admitted a job of the key at. */
    private final Map<String, Double> roundLastRankOfKey = new HashMap<>();
    /** The key grants enqueues used since the last round, per tenant: those keys had no job waiting then. */
    private final Map<String, Set<String>> keyGrantsUsed = new HashMap<>();

    /** How many of a tenant's fairness keys are remembered as recently admitted (candidates for key grants). */
    static final int RECENT_KEYS = 8;
    /** Most key grants a tenant holds at once: each holds a place of max_running and a token. */
    static final int MAX_KEY_GRANTS_PER_TENANT = 8;
    /**
     * Key grants a key holds at once (V13, V19): spares cover the renewal's race with the key's next jobs. Under the
     * subkeys bench's flood a tick renewed a used one 30-70 ms after the use, two of a 30 ms trickle's intervals: with
     * two slots 15-28 of y's 50 jobs found none (in runs: a miss made the key busy and took its other grant back),
     * with four 2-9, all among its first jobs.
     */
    static final int KEY_GRANT_SLOTS = 4;
    /** Key grants a key may hold whatever its tenant's room (V13's two): the rest are spares, given with room only. */
    static final int BASE_KEY_GRANT_SLOTS = 2;
    /** A tenant's free places under max_running from which its keys get the spares beyond two: at most a quarter. */
    static final int SPARE_KEY_GRANT_ROOM = 4 * KEY_GRANT_SLOTS;
    /**
     * A key grant goes to a key with a job admitted this recently, and is taken back when unused this long: a key
     * that trickles every 30 ms (subkeys) is always within it; one that went quiet gives its place back soon.
     */
    static final long KEY_GRANT_WINDOW_NANOS = 2_000_000_000L;
    /** How long a key admitted only once lately keeps an unused key grant: its next job within 200 ms uses it. */
    static final long KEY_GRANT_FIRST_NANOS = 200_000_000L;

    /** A grant goes to a tenant active this recently, and is taken back when unused this long. */
    static final long GRANT_WINDOW_NANOS = 60_000_000_000L;
    /**
     * A tenant whose grants are seen used this close together gets a spare (V16__spare_tenant_grants.sql) for the next
     * {@link #SPARE_KEEP_NANOS}: it enqueues faster than one grant is renewed (a tick sees the use, the grant pass after
     * renews it: 20-50 ms under the latency bench's background load, where a tenant enqueueing every 20 ms found no
     * grant at 60-70% of its enqueues). 4 jobs a second and more; a slower tenant's grant is renewed in time anyway.
     */
    static final long SPARE_AFTER_USES_WITHIN_NANOS = 250_000_000L;
    /** How long a tenant keeps getting a spare after its last quick use, and how long an unused spare is kept. */
    static final long SPARE_KEEP_NANOS = 1_000_000_000L;
    /**
     * Most tenant grants (its first and its spares) a tenant holds at once (V17__more_spare_grants.sql allows slots
     * 0-7). A tenant starts with one spare, and is to hold twice as many grants each time a round admits one of its
     * jobs while it gets spares, that is each time it found them all used: one spare covered 60-80% of the enqueues
     * of a tenant enqueueing every 20 ms under the latency bench's load, where a tick renewed a used grant 25-90 ms
     * after the use (bench/RESULTS.md stop 36); eight cover 160 ms at that rate, and took it to 99-100% (stop 38).
     */
    static final int MAX_TENANT_GRANTS = 8;
    /**
     * Above this many cached tenants, grants are handed out at most every {@link #GRANT_PASS_EVERY_NANOS} per
     * this many tenants cached (10,000: every 200 ms; at most every 500 ms): the pass looks at every cached tenant,
     * so its cost per second stays that of 1,000 tenants every 20 ms up to 25,000 cached. Every 20 ms at any size,
     * it took 45-164 ms of every 2 s of ticks at the tenants benchmark's 10,000-tenant drain (per-step timing,
     * bench/RESULTS.md stop 52), against a quiet tenant's next job seconds away; one enqueueing faster holds spares.
     */
    static final int GRANT_PASS_EVERY_TENANTS = 1_000;
    static final long GRANT_PASS_EVERY_NANOS = 20_000_000L;
    static final long GRANT_PASS_MAX_NANOS = 500_000_000L;

    /** How long the grant pass waits after the last one, with this many tenants cached (see above). */
    static long grantPassIntervalNanos(int cachedTenants) {
        return cachedTenants <= GRANT_PASS_EVERY_TENANTS ? 0
                : Math.min(GRANT_PASS_MAX_NANOS, GRANT_PASS_EVERY_NANOS * (cachedTenants / GRANT_PASS_EVERY_TENANTS));
    }
    /**
     * Above this many tenant grants outstanding, LOAD reads the unused ones at most every
     * {@link #GRANT_READ_EVERY_NANOS}, and the ticks between take them from memory: the scheduler alone makes and
     * revokes them, and every LOAD reads the used ones (V15: an enqueue marks the grant it takes, and the grant pass
     * clears it), so a used grant is noticed at the next tick whatever the cadence. The full read is a safety net (a
     * grant gone another way: its tenant deleted, SQL) and what a new leader starts from. Each unused grant is a row
     * of the full read: with the tenants bench's 1,000 trickling tenants holding one each, LOAD took 3.1 ms of
     * PostgreSQL 15 against 0.5 ms without them (pgbench), and decoding and hashing them was most of the scheduler
     * thread's tick (JFR), at 130 ticks a second. Before V15 they were read every 20 ms, because a used grant was
     * noticed only there. With few grants, every tick reads them.
     */
    static final int GRANT_READ_EVERY_TICK_UP_TO = 64;
    static final long GRANT_READ_EVERY_NANOS = 1_000_000_000L;
    /**
     * With shares by worker time, finished attempts are read this often: corrections land within it plus the
     * read's one-second lag (plus a turn of SETTLE_BATCH with more busy tenants), and the read costs one index
     * range per tenant it covers (4 reads a second).
     */
    static final long FINISHED_READ_EVERY_NANOS = 250_000_000L;
    /** The most tenants one read of finished attempts covers (shares by worker time). */
    static final int SETTLE_BATCH = 256;
    /** A tenant's finished attempts are read this long after it was last seen busy (covers the lag). */
    static final long BUSY_MEMORY_NANOS = 3_000_000_000L;
    /**
     * A read made this long after a tenant was last seen busy covers all its attempts: the read's window ends a
     * second behind, and its last attempt ended before the next tick that did not see it (ticks come at least
     * every idle interval, 250 ms; a slow tick or commit takes the rest).
     */
    static final long COVERED_NANOS = 2_000_000_000L;
    /** How often idle tenants are looked for in the cache (a pass over the cache, which holds the active ones). */
    static final long EVICTION_EVERY_NANOS = 1_000_000_000L;
    /**
     * Limit changes are re-read with this much overlap: updated_at is the writer's transaction start, so a
     * change committed after a read can carry an earlier time; an admin write takes milliseconds. A writer
     * slower than this (a bulk registration) is caught by the sweep below. The overlap was 60 s: with 10,000
     * tenants registered just before a drain, every reload of that minute probed all of them (627 ms of
     * ticks in a 3.3 s drain, measured).
     */
    static final java.time.Duration TENANT_CHANGE_OVERLAP = java.time.Duration.ofSeconds(5);
    /** Every cached tenant is re-read at least this often, a slice at each reload, whatever updated_at says. */
    static final long TENANT_SWEEP_NANOS = 60_000_000_000L;

    /**
     * The live routes are re-read once a second: a worker that starts is served within a second of its
     * registration, and the read costs one row per live worker process.
     */
    static final long ROUTES_EVERY_NANOS = 1_000_000_000L;
    /** Parked jobs un-parked per statement when a worker brings their route (a few ms of database time). */
    static final int UNPARK_BATCH = 5000;

    private record Timer(long dueNanos, String tenantId) {}

    /** What one round did. */
    public record TickResult(int wanted, int admitted, List<String> admittedTenants, long nanosUntilNextEvent,
                             boolean fetchCutShort) {
        static TickResult none(int wanted, long nanosUntilNextEvent) {
            return new TickResult(wanted, 0, List.of(), nanosUntilNextEvent, false);
        }

        /**
         * There was room in the buffer and jobs filled all of it, or a tenant that got fewer jobs than the
         * fetch plan expected left room other tenants' unfetched jobs can fill: more are probably waiting.
         */
        public boolean saturated() {
            return wanted > 0 && (admitted == wanted || fetchCutShort);
        }
    }

    /**
     * Where an admission's wake-up for the workers goes: null (the default) sends it in the admitting statement,
     * so it holds the notification queue's lock through that commit; the service sends it off the tick's thread.
     */
    private volatile Waker workersWaker;

    /** Sends the workers' wake-up after each admission through {@code waker} (null: in the admitting statement). */
    public void wakeWorkersWith(Waker waker) {
        this.workersWaker = waker;
    }

    /** A scheduler on the store's clock (the one clock of the queue; a {@link dev.fairq.schema.SettableClock} in tests). */
    public Scheduler(JobStore store, SchedulerConfig config) {
        this.store = store;
        this.config = config;
        this.policy = config.fair() ? new WeightedFairAdmission() : new FifoAdmission();
        this.clock = store.clock();
        this.costs = config.fair() && config.fairShare() == SchedulerConfig.FairShare.TIME ? new WorkerTimeCosts() : null;
    }

    /** Forget everything (a new term as leader): state is rebuilt from the tables at the next tick. */
    public synchronized void reset() {
        tenants.clear();
        maybeWork.clear();
        noKeyedJobs.clear();
        uncached.clear();
        timers.clear();
        timerOf.clear();
        lastRescan = Long.MIN_VALUE;
        tenantsReadAt = null;
        tenantsLoadedAt = Long.MIN_VALUE;
        sweep = List.of();
        swept = 0;
        lastGrantPass = Long.MIN_VALUE;
        recent.clear();
        recentTotal = 0;
        grantsAfterLastTick = Map.of();
        lastGrantRead = Long.MIN_VALUE;
        grantedWithLastAdmission = Set.of();
        keyGrantsAfterLastTick = Set.of();
        keyGrants = new HashMap<>();
        keysBusy.clear();
        keyGrantsUsed.clear();
        positions = Map.of();
        competing = 0;
        routes = List.of();
        routableCache.clear();
        routeSet = null;
        routesReadAt = Long.MIN_VALUE;
        unparkPending = false;
        policy.reset();
        settling.clear();
        heldByKeys.clear();
        wokenSinceLastRound = new HashSet<>();
        finishedReadUntil = null;
        finishedReadAt = Long.MIN_VALUE;
        if (costs != null) costs.reset();
    }

    /** Wake-ups that name a tenant: 't:' + the tenant id (see V7__tenant_scale.sql). */
    static final String TENANT_WAKE_UP = "t:";

    /** A wake-up named this tenant: it may have admissible work (new, retried, reaped, promoted or replayed). */
    public synchronized void wake(String tenantId) {
        mayHaveWork(tenantId);
        wokenSinceLastRound.add(tenantId);
    }

    /**
     * A tenant may have admissible work: it joins the set of tenants a round looks at, and whatever was known
     * of its keyed jobs is forgotten (this is how any of its jobs, keyed or not, becomes admissible again).
     */
    private void mayHaveWork(String tenantId) {
        if (maybeWork.add(tenantId) && !tenants.containsKey(tenantId)) uncached.add(tenantId);
        noKeyedJobs.remove(tenantId);
    }

    /**
     * A notification on the fairq_jobs channel: one that names a tenant wakes it; others only end a wait ('g:' + a
     * tenant: an enqueue used a key grant, which the tick this wait ends then renews; 'drained': a worker found none).
     */
    public synchronized void onWakeUp(String payload) {
        if (payload != null && payload.startsWith(TENANT_WAKE_UP)) wake(payload.substring(TENANT_WAKE_UP.length()));
    }

    /** A wake-up that named nobody (a worker found the buffer dry, an operator action): nothing to remember. */
    public synchronized void rescanSoon() {
        lastRescan = Long.MIN_VALUE;
    }

    /** With shares by worker time: the tenant's estimate for a job type, in seconds; for tests. */
    synchronized double estimateOf(String tenantId, String type) {
        return costs.estimate(tenants.get(tenantId), type);
    }

    /** Tenants whose last candidate read found no keyed job (their reads skip the lane probe); for tests. */
    synchronized Set<String> knownWithoutKeyedJobs() {
        return Set.copyOf(noKeyedJobs);
    }

    /** How many tenants are in memory now (the cache), and how many may have work; for metrics and tests. */
    public synchronized int cachedTenants() {
        return tenants.size();
    }

    /** A copy of the cache: the tenants held in memory, with their limits, buckets and virtual times. */
    public synchronized Map<String, TenantState> tenants() {
        return Map.copyOf(tenants);
    }

    public synchronized Set<String> tenantsWithWork() {
        return Set.copyOf(maybeWork);
    }

    /** Tenants that had jobs admitted, ready or running within {@code windowNanos}: what the rollup recomputes. */
    public synchronized Set<String> recentlyActive(long windowNanos) {
        long now = clock.nanoTime();
        Set<String> out = new HashSet<>(maybeWork);
        for (TenantState t : tenants.values()) {
            if (t.lastActiveNanos != Long.MIN_VALUE && now - t.lastActiveNanos <= windowNanos) out.add(t.id());
        }
        return out;
    }

    /** Tick durations, for the benchmark and the metrics. */
    public TickStats tickStats() {
        return tickStats;
    }

    /** A tenant's state, and how many times its limits were re-read (a changed limit is published again). */
    public record Snapshot(SchedulerStates.State state, long limitsVersion) {}

    /**
     * What explain needs from memory, per cached tenant: tokens, time to the next token, pass, and the
     * tenant's place in the weighted-fair order among the tenants with work (the active set, unpaused; 1 = next),
     * passes lifted as {@link #lowestPasses} lifts them. Not only those the last round read: a round reads just
     * the tenants its picks go to, so a waiting tenant had no position. Also remembers the positions for
     * {@link #stateOf}.
     */
    public synchronized List<Snapshot> snapshot() {
        double virtualTime = policy.virtualTime(lastNextRank);
        List<TenantState> order = new ArrayList<>();
        Map<String, Double> passes = new HashMap<>();
        for (String id : maybeWork) {
            TenantState t = tenants.get(id);
            if (t == null || t.limits().paused()) continue;
            order.add(t);
            passes.put(id, !t.eligibleLastRound && t.pass < virtualTime ? virtualTime : t.pass);
        }
        order.sort(Comparator.comparingDouble((TenantState t) -> passes.get(t.id())).thenComparing(TenantState::id));
        Map<String, Integer> pos = new HashMap<>(order.size() * 2);
        for (int i = 0; i < order.size(); i++) pos.put(order.get(i).id(), i + 1);
        positions = pos;
        competing = order.size();
        List<Snapshot> out = new ArrayList<>(tenants.size());
        for (TenantState t : tenants.values()) out.add(new Snapshot(state(t), t.limitsVersion));
        return out;
    }

    /** One tenant's state, if the scheduler holds it (positions as of the last snapshot). */
    public synchronized Optional<SchedulerStates.State> stateOf(String tenantId) {
        TenantState t = tenants.get(tenantId);
        return t == null ? Optional.empty() : Optional.of(state(t));
    }

    private SchedulerStates.State state(TenantState t) {
        return new SchedulerStates.State(t.id(), t.bucket().available(), t.bucket().nanosUntilNextToken() / 1_000_000,
                t.pass(), positions.get(t.id()), competing, null, null);
    }

    public synchronized TickResult tick(DSLContext ctx) {
        long started = System.nanoTime(); // wall time of the tick itself, whatever clock the queue runs on
        try {
            return tickOnce(ctx);
        } finally {
            long end = System.nanoTime();
            tickStats.record(end, end - started);
        }
    }

    private TickResult tickOnce(DSLContext ctx) {
        long now = clock.nanoTime();
        if (lastRescan == Long.MIN_VALUE || now - lastRescan >= config.activeRescan().toNanos()) {
            for (String id : store.admission().tenantsWithWork(ctx)) mayHaveWork(id);
            lastRescan = now;
        }
        while (!timers.isEmpty() && timers.peek().dueNanos() <= now) {
            Timer due = timers.poll();
            if (timerOf.remove(due.tenantId(), due.dueNanos())) mayHaveWork(due.tenantId());
        }
        boolean readGrants = grantsAfterLastTick.size() <= GRANT_READ_EVERY_TICK_UP_TO || lastGrantRead == Long.MIN_VALUE
                || now - lastGrantRead >= GRANT_READ_EVERY_NANOS;
        Admission.QueueLoad load = store.load(ctx, config.workerLiveness(), readGrants);
        lastNextRank = load.nextRank();
        // keyed jobs that waited out of their lanes (V20) and came due: LOAD moved them into their lanes
        for (String id : load.promoted()) mayHaveWork(id);
        Map<String, Double> grantAges;
        if (readGrants) {
            grantAges = load.grantAgeSeconds();
            lastGrantRead = now;
        } else { // the grants as the last tick left them, aged in memory, less those an enqueue has taken since
            double since = (now - lastTickNanos) / 1e9;
            Map<String, Double> aged = new HashMap<>(grantsAfterLastTick.size() * 2);
            grantsAfterLastTick.forEach((t, ageSeconds) -> aged.put(t, ageSeconds + since));
            aged.keySet().removeAll(load.usedGrants());
            grantAges = aged;
        }
        refreshRoutes(ctx, now);
        refreshLimits(ctx, now, load);
        releaseKeyHolds(load);
        if (costs != null) settleFinished(ctx, now, load);

        List<String> pausedWithReady = new ArrayList<>();
        int unadmitted = 0;
        for (Map.Entry<String, Integer> r : load.readyByTenant().entrySet()) {
            TenantState t = tenants.get(r.getKey());
            if (t != null && t.limits().paused()) {
                pausedWithReady.add(t.id());
                unadmitted += r.getValue();
            }
        }
        store.admission().unadmitPaused(ctx, pausedWithReady);
        unadmitted += unadmitUnroutable(ctx, load, pausedWithReady);

        Set<String> deferred = new HashSet<>();
        Map<String, Double> grants = keepValidGrants(ctx, now, grantAges, deferred, load.nextRank());
        keepValidKeyGrants(ctx, now, load);
        revokeBeyondRoom(ctx, load, grants);
        int capacity = config.fixedCapacity() > 0 ? config.fixedCapacity() : load.workerCapacity();
        keysBusy.clear();
        roundFirstRank.clear();
        roundLastRankOfKey.clear();
        TickResult result = admit(ctx, now, load, capacity, unadmitted, grants);
        // the round found work waiting after all: the grant goes back now
        deferred.removeIf(id -> !maybeWork.contains(Admission.tenantOfGrant(id)));
        if (!deferred.isEmpty()) revoke(ctx, new ArrayList<>(deferred), grants, load.nextRank());
        revokeKeyGrantsOfBusyKeys(ctx, load);
        if (grantsOn()) grantToQuietKeys(ctx, now, load, capacity, grants, result);
        Set<String> pairs = new HashSet<>();
        keyGrants.forEach((tenant, keys) -> keys.forEach(k -> pairs.add(tenant + '\0' + k)));
        keyGrantsAfterLastTick = pairs;
        // the grant pass walks the whole cache: with many tenants cached, less often (grantPassIntervalNanos)
        if (grantsOn() && (lastGrantPass == Long.MIN_VALUE || now - lastGrantPass >= grantPassIntervalNanos(tenants.size()))) {
            grantToQuietTenants(ctx, now, load, capacity, grants, result);
            lastGrantPass = now;
        } else if (!grantsOn() && !load.usedGrants().isEmpty()) {
            store.admission().grant(ctx, List.of(), load.usedGrants()); // grants made before they were turned off
        }
        grantsAfterLastTick = grants; // ages as of now (a grant made this tick: 0)
        lastTickNanos = now;
        if (lastEviction == Long.MIN_VALUE || now - lastEviction >= EVICTION_EVERY_NANOS) {
            evictIdle(now, load, grants);
            lastEviction = now;
        }
        long untilTimer = timers.isEmpty() ? Long.MAX_VALUE : Math.max(0, timers.peek().dueNanos() - now);
        return new TickResult(result.wanted(), result.admitted(), result.admittedTenants(),
                Math.min(result.nanosUntilNextEvent(), untilTimer), result.fetchCutShort());
    }

    /**
     * Limits of the tenants the tick will look at: those that may have work, hold a grant, or have jobs
     * ready or running, read once when they first appear; and every {@link SchedulerConfig#tenantReload()}
     * the tenants whose row changed since the last read (an admin's live change applies within it).
     */
    private void refreshLimits(DSLContext ctx, long now, Admission.QueueLoad load) {
        if (tenantsReadAt == null || now - tenantsLoadedAt >= config.tenantReload().toNanos()) {
            // the first read of a term only learns the database time: limits are read as tenants turn up
            OffsetDateTime since = tenantsReadAt == null ? null : tenantsReadAt.minus(TENANT_CHANGE_OVERLAP);
            TenantStore.Changes changes = tenantStore.changedSince(ctx, since, tenants.keySet());
            List<TenantsRecord> read = new ArrayList<>(changes.tenants());
            if (since != null) read.addAll(tenantStore.byIds(ctx, sweepSlice()));
            for (TenantsRecord r : read) {
                TenantState t = tenants.get(r.getId());
                if (t == null) continue; // not cached: read when it turns up
                boolean wasPaused = t.limits().paused();
                t.update(TenantLimits.of(r));
                if (wasPaused && !t.limits().paused()) mayHaveWork(t.id()); // its jobs may start again
                if (heldByKeys.remove(t.id()) != null) mayHaveWork(t.id()); // a key limit may have grown
            }
            tenantsReadAt = changes.readAt();
            tenantsLoadedAt = now;
        }
        Set<String> missing = new HashSet<>();
        addMissing(missing, uncached); // not all of maybeWork: a tenant in it is never evicted from the cache
        uncached.clear();
        addMissing(missing, load.readyByTenant().keySet());
        addMissing(missing, load.runningByTenant().keySet());
        for (String grant : load.grantAgeSeconds().keySet()) {
            String id = Admission.tenantOfGrant(grant);
            if (!tenants.containsKey(id)) missing.add(id);
        }
        addMissing(missing, load.keyGrantAgeSeconds().keySet());
        if (missing.isEmpty()) return;
        for (TenantsRecord r : tenantStore.byIds(ctx, missing)) {
            TenantState t = new TenantState(TenantLimits.of(r), clock::nanoTime);
            if (costs != null) t.unitCost = t.lastCharge = costs.tenantMean(t);
            tenants.put(r.getId(), t);
            missing.remove(r.getId());
        }
        maybeWork.removeAll(missing); // a tenant deleted meanwhile has nothing to admit
        noKeyedJobs.removeAll(missing);
    }

    /**
     * The next cached tenants to re-read whatever their updated_at: a round covers the cache as it was when the
     * round began, in TENANT_SWEEP_NANOS / tenantReload slices (120 at the defaults: 84 ids a reload with
     * 10,000 cached).
     */
    private List<String> sweepSlice() {
        if (swept >= sweep.size()) {
            sweep = new ArrayList<>(tenants.keySet());
            swept = 0;
        }
        long slices = Math.max(1, TENANT_SWEEP_NANOS / Math.max(1, config.tenantReload().toNanos()));
        int n = (int) Math.min(sweep.size() - swept, sweep.size() / slices + 1);
        List<String> slice = sweep.subList(swept, swept + n);
        swept += n;
        return slice;
    }

    /**
     * Routing: the live workers' routes, re-read every {@link #ROUTES_EVERY_NANOS}. When they changed (a worker
     * came, went or changed what it serves; and at the start of a term), parked jobs that a live worker can run
     * now are un-parked, a batch per tick, and their tenants become work again. Cost: the live worker
     * processes, and the parked jobs of the routes that came, once.
     */
    private void refreshRoutes(DSLContext ctx, long now) {
        if (routesReadAt == Long.MIN_VALUE || now - routesReadAt >= ROUTES_EVERY_NANOS) {
            routes = store.leases().liveRoutes(ctx, config.workerLiveness());
            routesReadAt = now;
            routableCache.clear();
            Set<WorkerRoute> set = new HashSet<>();
            for (WorkerRoute.Live w : routes) set.add(w.route());
            if (!set.equals(routeSet)) unparkPending = true;
            routeSet = set;
        }
        if (unparkPending) {
            List<String> tenantsOfUnparked = store.admission().unpark(ctx, routes, UNPARK_BATCH);
            for (String id : tenantsOfUnparked) mayHaveWork(id);
            unparkPending = tenantsOfUnparked.size() >= UNPARK_BATCH;
        }
    }

    /** True while some live worker cannot run everything: only then is a job's route checked. */
    private boolean routingRestricts() {
        if (routes.isEmpty()) return false;
        for (WorkerRoute.Live w : routes) if (w.route().queues() == null && w.route().types() == null) return false;
        return true;
    }

    /** One lookup per candidate: the answer per (queue, type) is kept until the routes are read again. */
    private boolean routable(String queue, String type) {
        return routableCache.computeIfAbsent(queue + '\u0000' + type, k -> WorkerRoute.anyServes(routes, queue, type));
    }

    /**
     * Ready jobs no live worker can run (a grant inserted one, or the only worker serving them died) go back to
     * pending, parked. Reads nothing more than LOAD did; returns how many left the buffer.
     */
    private int unadmitUnroutable(DSLContext ctx, Admission.QueueLoad load, List<String> pausedHandled) {
        if (!routingRestricts() || load.readyGroups().isEmpty()) return 0;
        List<Admission.ReadyGroup> stranded = new ArrayList<>();
        int jobs = 0;
        for (Admission.ReadyGroup g : load.readyGroups()) {
            if (pausedHandled.contains(g.tenantId()) || routable(g.queue(), g.type())) continue;
            stranded.add(g);
            jobs += g.count();
        }
        if (stranded.isEmpty()) return 0;
        store.admission().unadmitUnroutable(ctx, stranded);
        return jobs;
    }

    private void addMissing(Set<String> missing, Collection<String> ids) {
        for (String id : ids) if (!tenants.containsKey(id)) missing.add(id);
    }

    /**
     * One admission round: how many jobs the ready buffer needs, which tenants may start jobs (tokens,
     * max_running (a grant holds one place), paused), which of their jobs go next (the policy), then one
     * statement that admits them.
     *
     * <p>A full buffer still takes a job of a tenant that has none in it (at most a buffer's worth a round):
     * fair queueing ranks that job ahead of the buffered ones, so waiting for room would only delay a
     * newcomer behind jobs it is meant to pass. Measured: with 1,000 trickling tenants under a flood the
     * newcomers' p99 was 6-12 times their p99 alone while they waited for room.
     */
    private TickResult admit(DSLContext ctx, long now, Admission.QueueLoad load, int capacity, int unadmitted,
                             Map<String, Double> grants) {
        int free = Math.max(0, capacity - load.totalRunning());
        int target = free + bufferSlack(now);
        int wanted = Math.min(config.maxBatch(), target - (load.totalReady() - unadmitted));
        boolean newcomersOnly = false;
        if (wanted <= 0) {
            if (!config.fair()) return TickResult.none(0, Long.MAX_VALUE); // FIFO ranks newcomers last anyway
            wanted = Math.max(config.minBuffer(), capacity);
            newcomersOnly = true;
        }

        Map<String, Integer> limits = new LinkedHashMap<>();
        long[] nextToken = {Long.MAX_VALUE}; // when a tenant held back only by its rate gets its next token
        Set<String> woken = wokenSinceLastRound;
        wokenSinceLastRound = new HashSet<>();
        // A full buffer takes the first job of a fairness key that became active too, as it takes a newcomer
        // tenant's: only of tenants with fairness keys that a wake-up named since the last round (new work), so
        // the rounds of a full buffer do not read every busy tenant's keys.
        Set<String> keyNewcomersOnly = new HashSet<>();
        int shortList = Math.max(2 * wanted, SHORT_LIST_MIN);
        if (config.fair() && !newcomersOnly && maybeWork.size() > 2 * shortList) {
            // Only the `wanted` lowest passes among the tenants that may take a job can get one of this round's
            // picks (stride order), and every tenant off the short list has a pass at least as high as all on it.
            // So if the short list has `wanted` tenants that may take a job, nobody else can get a pick.
            limitsOf(lowestPasses(shortList, load.nextRank()), load, grants, wanted, false, woken, keyNewcomersOnly,
                    limits, nextToken);
            if (limits.size() < wanted) {
                limits.clear();
                nextToken[0] = Long.MAX_VALUE;
            }
        }
        if (limits.isEmpty()) {
            limitsOf(maybeWork, load, grants, wanted, newcomersOnly, woken, keyNewcomersOnly, limits, nextToken);
        }
        if (limits.isEmpty()) return TickResult.none(newcomersOnly ? 0 : wanted, nextToken[0]);

        Map<String, Map<String, Integer>> keyRooms = keyRooms(limits.keySet(), load);
        Map<Long, Admission.Candidate> jobs = new HashMap<>();
        AdmissionPolicy.Cost cost = costs == null ? AdmissionPolicy.Cost.PER_JOB
                : (t, id) -> costs.estimate(t, jobs.get(id).type());
        Map<String, List<KeyStep>> keySteps = new HashMap<>();
        Candidates fetched = fetchCandidates(ctx, limits, keyRooms, wanted, load, jobs, cost, keySteps,
                keyNewcomersOnly);
        Map<String, List<Long>> candidates = fetched.byTenant();
        List<AdmissionPolicy.Pick> picks = policy.choose(candidates, tenants, wanted, load.nextRank(), load.lastRank(), cost);
        commitKeySteps(picks, keySteps);
        noteBusyKeys(fetched, picks);
        forgetEmpty(ctx, now, fetched, picks, keyRooms);
        // jobs parked this round may have hidden admissible ones behind them: come back soon (saturated)
        boolean parkedSome = parkUnroutable(ctx);
        if (picks.isEmpty()) {
            return new TickResult(newcomersOnly ? 0 : wanted, 0, List.of(), nextToken[0], parkedSome && !newcomersOnly);
        }
        if (costs != null) {
            for (AdmissionPolicy.Pick p : picks) {
                costs.charged(tenants.get(p.tenantId()), fetched.job(p.jobId()).type(), p.cost());
                // a charge is read back when it is settled: a quiet tenant whose job starts and ends between two
                // LOADs is never seen ready or running, and its estimate kept the guess it was first charged
                // (10 ms against 1 ms for the busy tenants' no-ops: it fell a tenfold share behind them)
                seen(p.tenantId(), now);
            }
        }

        // Tokens are taken for every pick before the write: a pick that then drops out (cancelled meanwhile)
        // costs its tenant a token, which can only make the rate bound tighter, never looser.
        List<Long> ids = new ArrayList<>(picks.size());
        List<Double> ranks = new ArrayList<>(picks.size());
        Map<Long, String> tenantOf = new HashMap<>();
        KeyPlacement placement = new KeyPlacement(load, fetched);
        for (AdmissionPolicy.Pick p : picks) {
            TenantState t = tenants.get(p.tenantId());
            t.bucket().take(1);
            ids.add(p.jobId());
            String fairnessKey = fetched.job(p.jobId()).fairnessKey();
            double rank = placement.rank(p, fairnessKey);
            ranks.add(rank);
            roundFirstRank.merge(p.tenantId(), rank, Math::min);
            if (fairnessKey != null) {
                roundLastRankOfKey.merge(p.tenantId() + '\0' + fairnessKey, rank, Math::max);
                t.keyAdmitted(fairnessKey, now);
            }
            tenantOf.put(p.jobId(), p.tenantId());
        }
        List<Long> admitted;
        Waker waker = workersWaker;
        if (waker == null) {
            admitted = store.admit(ctx, ids, ranks);
        } else {
            admitted = store.admitQuietly(ctx, ids, ranks);
            if (!admitted.isEmpty()) waker.wake();
        }
        noteAdmissions(now, admitted.size());
        for (AdmissionPolicy.Pick p : picks) tenants.get(p.tenantId()).lastActiveNanos = now;
        List<String> admittedTenants = new ArrayList<>(admitted.size());
        Set<Long> admittedSet = new HashSet<>(admitted);
        for (Long id : ids) if (admittedSet.contains(id)) admittedTenants.add(tenantOf.get(id));
        return new TickResult(newcomersOnly ? 0 : wanted, admitted.size(), admittedTenants, nextToken[0],
                (fetched.cutShort() || parkedSome) && admitted.size() < wanted);
    }

    /** How many tenants a round's short list holds at the least (twice the jobs wanted, or this). */
    static final int SHORT_LIST_MIN = 256;

    /** How many jobs each of {@code ids} may have admitted this round (room under max_running, tokens). */
    private void limitsOf(Collection<String> ids, Admission.QueueLoad load, Map<String, Double> grants, int wanted,
                          boolean newcomersOnly, Set<String> woken, Set<String> keyNewcomersOnly,
                          Map<String, Integer> limits, long[] nextToken) {
        for (String tenantId : ids) {
            TenantState t = tenants.get(tenantId);
            if (t == null || t.limits().paused()) continue;
            if (newcomersOnly && load.ready(tenantId) > 0) {
                if (!woken.contains(tenantId) || !t.usesFairnessKeys) continue;
                keyNewcomersOnly.add(tenantId);
            }
            int room = room(t, load) - grantsOf(t, grants) - keyGrantsOf(tenantId);
            int tokens = t.bucket().available();
            if (room > 0 && tokens == 0) nextToken[0] = Math.min(nextToken[0], t.bucket().nanosUntilNextToken());
            // a tenant read for its keys' newcomers reads two a lane: its newcomers' prefix is still all a round takes
            // of it, and a lane that returns one job is known to have no more (read one, a lane always looked full,
            // and a trickling key admitted so never got a key grant for its next job: subkeys, streaks of misses)
            int lim = Math.min(Math.min(room, tokens), newcomersOnly ? (keyNewcomersOnly.contains(tenantId) ? 2 : 1) : wanted);
            if (lim > 0) limits.put(tenantId, lim);
        }
    }

    /**
     * The {@code k} tenants that may have work with the lowest passes as the policy will see them (a tenant
     * that was not eligible last round is lifted to the virtual time), ties by id: the policy's own order.
     * Checking room and tokens of 10,000 tenants each round, for the ~300 that get a job, was a fifth of a
     * tick at the tenants benchmark's 10,000-tenant drain.
     */
    private List<String> lowestPasses(int k, Double nextRank) {
        double virtualTime = policy.virtualTime(nextRank);
        String[] ids = new String[maybeWork.size()];
        double[] passes = new double[ids.length];
        int n = 0;
        for (String id : maybeWork) {
            TenantState t = tenants.get(id);
            if (t == null || t.limits().paused()) continue;
            ids[n] = id;
            passes[n++] = !t.eligibleLastRound && t.pass < virtualTime ? virtualTime : t.pass;
        }
        List<String> out = new ArrayList<>(Math.min(k, n));
        if (n <= k) {
            for (int i = 0; i < n; i++) out.add(ids[i]);
            return out;
        }
        // the k-th lowest pass by selection on a copy, then one pass over the arrays: primitive doubles, no
        // object per tenant (a heap of records allocated one per tenant, 10,000 a round while 10,000 drain)
        double bound = kthSmallest(Arrays.copyOf(passes, n), k - 1);
        List<String> atBound = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            if (passes[i] < bound) out.add(ids[i]);
            else if (passes[i] == bound) atBound.add(ids[i]);
        }
        atBound.sort(null); // ties by id, the policy's own order
        for (int i = 0; out.size() < k; i++) out.add(atBound.get(i));
        return out;
    }

    /** The value that would stand at index {@code k} of {@code a} sorted (Hoare's selection; reorders {@code a}). */
    static double kthSmallest(double[] a, int k) {
        int lo = 0, hi = a.length - 1;
        while (lo < hi) {
            double pivot = a[(lo + hi) >>> 1];
            int i = lo, j = hi;
            while (i <= j) {
                while (a[i] < pivot) i++;
                while (a[j] > pivot) j--;
                if (i <= j) {
                    double tmp = a[i];
                    a[i++] = a[j];
                    a[j--] = tmp;
                }
            }
            if (k <= j) hi = j;
            else if (k >= i) lo = i;
            else return a[k];
        }
        return a[k];
    }

    /**
     * A tenant whose probe returned fewer jobs than asked, all of which this round picked, has nothing more due
     * now: it leaves the set of tenants that may have work, and gets a timer when its next job is due later
     * (one probe for all of them). New work brings it back by a wake-up. A tenant one of whose concurrency keys
     * is full after this round (its room was 0, or this round's picks filled it) may have jobs waiting behind
     * the key that the probe did not read: it is held by those keys and comes back when one has room.
     */
    private void forgetEmpty(DSLContext ctx, long now, Candidates fetched, List<AdmissionPolicy.Pick> picks,
                             Map<String, Map<String, Integer>> keyRooms) {
        Map<String, Integer> picked = new HashMap<>();
        Map<String, Map<String, Integer>> pickedPerKey = new HashMap<>();
        for (AdmissionPolicy.Pick p : picks) {
            picked.merge(p.tenantId(), 1, Integer::sum);
            String key = fetched.job(p.jobId()).concurrencyKey();
            if (key != null) pickedPerKey.computeIfAbsent(p.tenantId(), k -> new HashMap<>()).merge(key, 1, Integer::sum);
        }
        List<String> empty = new ArrayList<>();
        fetched.asked().forEach((tenant, asked) -> {
            int got = fetched.byTenant().getOrDefault(tenant, List.of()).size();
            // a tenant some of whose candidates were parked may have more behind them, and one whose lane was
            // cut at its cap may have more than it got: either stays
            if (got < asked && picked.getOrDefault(tenant, 0) == got && !parkedTenants.contains(tenant)
                    && !fetched.cutAtLaneCap().contains(tenant)) {
                empty.add(tenant);
            }
        });
        if (empty.isEmpty()) return;
        for (String tenant : empty) {
            maybeWork.remove(tenant);
            noKeyedJobs.remove(tenant);
            Set<String> full = new HashSet<>();
            Map<String, Integer> pickedHere = pickedPerKey.getOrDefault(tenant, Map.of());
            keyRooms.getOrDefault(tenant, Map.of()).forEach((key, room) -> {
                if (room - pickedHere.getOrDefault(key, 0) <= 0) full.add(key);
            });
            if (!full.isEmpty()) heldByKeys.put(tenant, full);
        }
        Set<String> emptySet = new HashSet<>(empty);
        List<Long> pickedIds = new ArrayList<>();
        for (AdmissionPolicy.Pick p : picks) if (emptySet.contains(p.tenantId())) pickedIds.add(p.jobId());
        store.admission().nextDueInMs(ctx, empty, pickedIds).forEach((tenant, ms) -> setTimer(tenant, now + ms * 1_000_000L));
    }

    /**
     * How many more jobs of each limited concurrency key each tenant may have admitted: its limit minus its
     * jobs ready or running, as this tick's LOAD counted them. Only tenants with limits have entries.
     */
    private Map<String, Map<String, Integer>> keyRooms(Collection<String> tenantIds, Admission.QueueLoad load) {
        Map<String, Map<String, Integer>> out = new HashMap<>();
        for (String id : tenantIds) {
            TenantState t = tenants.get(id);
            if (t == null || t.limits().concurrencyLimits().isEmpty()) continue;
            Map<String, Integer> rooms = new HashMap<>();
            t.limits().concurrencyLimits().forEach((key, limit) -> rooms.put(key, limit - load.active(id, key)));
            out.put(id, rooms);
        }
        return out;
    }

    /** Tenants held by full concurrency keys come back once one of those keys has room (or its limit is gone). */
    private void releaseKeyHolds(Admission.QueueLoad load) {
        if (heldByKeys.isEmpty()) return;
        heldByKeys.entrySet().removeIf(e -> {
            TenantState t = tenants.get(e.getKey());
            boolean room = t == null;
            for (String key : e.getValue()) {
                Integer limit = t == null ? null : t.limits().concurrencyLimits().get(key);
                if (limit == null || load.active(e.getKey(), key) < limit) room = true;
            }
            if (room) mayHaveWork(e.getKey());
            return room;
        });
    }

    /**
     * Shares by worker time: reads the attempts that finished since each tenant's last read, for the tenants
     * seen busy lately (one index range each), learns the estimates from them and settles their charges: a
     * tenant at every read while it is busy, then once more when a read can cover its last attempts. At
     * most {@link #SETTLE_BATCH} tenants a read, those read longest ago first: with 10,000 tenants busy, one
     * range each four times a second would be 120,000 index probes a second (three statuses each); each
     * tenant keeps its own bound, so a tenant read less often loses nothing, its corrections only land later.
     */
    private void settleFinished(DSLContext ctx, long now, Admission.QueueLoad load) {
        for (String id : load.runningByTenant().keySet()) seen(id, now);
        for (String id : load.readyByTenant().keySet()) seen(id, now);
        if (finishedReadAt != Long.MIN_VALUE && now - finishedReadAt < FINISHED_READ_EVERY_NANOS) return;
        // forgotten once not busy for BUSY_MEMORY_NANOS and read COVERED_NANOS after it was last busy (that read
        // covered every attempt it had running)
        settling.entrySet().removeIf(e -> !tenants.containsKey(e.getKey())
                || (now - e.getValue().seen > BUSY_MEMORY_NANOS && e.getValue().readAt - e.getValue().seen >= COVERED_NANOS));
        // read: the tenants busy now, and once more each that stopped, when a read can cover its last attempts;
        // not every busy-lately tenant at every read (1,000 tenants trickling: 256 ranges a read, 30-90 ms)
        List<Map.Entry<String, Settling>> batch = new ArrayList<>();
        for (Map.Entry<String, Settling> e : settling.entrySet()) {
            Settling st = e.getValue();
            if (st.readAt - st.seen < COVERED_NANOS
                    && (now - st.seen < FINISHED_READ_EVERY_NANOS || now - st.seen >= COVERED_NANOS)) {
                batch.add(e);
            }
        }
        if (batch.size() > SETTLE_BATCH) {
            batch.sort(Comparator.comparingLong(e -> e.getValue().readAt));
            batch = batch.subList(0, SETTLE_BATCH);
        }
        List<String> ids = new ArrayList<>(batch.size());
        List<OffsetDateTime> since = new ArrayList<>(batch.size());
        for (Map.Entry<String, Settling> e : batch) {
            ids.add(e.getKey());
            since.add(e.getValue().until);
        }
        Admission.FinishedWindow window = store.admission().finishedWork(ctx, ids, since, WorkerTimeCosts.MIN_SECONDS);
        for (Admission.FinishedWork w : window.work()) {
            TenantState t = tenants.get(w.tenantId());
            if (t != null) policy.correct(t, costs.finished(t, w), load.nextRank());
        }
        for (Map.Entry<String, Settling> e : batch) {
            e.getValue().until = window.until();
            e.getValue().readAt = now;
        }
        finishedReadUntil = window.until();
        finishedReadAt = now;
    }

    /** A tenant seen busy: a newcomer's reads start where the last read ended (null before the first). */
    private void seen(String tenant, long now) {
        Settling s = settling.get(tenant);
        if (s == null) settling.put(tenant, new Settling(now, finishedReadUntil));
        else s.seen = now;
    }

    private void setTimer(String tenant, long dueNanos) {
        Long existing = timerOf.get(tenant);
        if (existing != null && existing <= dueNanos) return;
        timerOf.put(tenant, dueNanos);
        timers.add(new Timer(dueNanos, tenant)); // a later entry of the same tenant is skipped when it comes up
    }

    /** Each tenant's admissible jobs for a round, how many were asked of each, and whether room was left unfilled. */
    private record Candidates(Map<String, List<Long>> byTenant, Map<String, Integer> asked, boolean cutShort,
                              Map<Long, Admission.Candidate> jobs, Set<String> cutAtLaneCap) {
        Admission.Candidate job(long id) {
            return jobs.get(id);
        }
    }

    /**
     * Reads the round's candidates: as many per tenant as the policy's plan says it will pick (reading every
     * tenant's whole limit cost ten times the rows admitted with ten busy tenants), topped up once when a
     * tenant had fewer due jobs than planned.
     */
    private Candidates fetchCandidates(DSLContext ctx, Map<String, Integer> limits,
                                       Map<String, Map<String, Integer>> keyRooms, int wanted, Admission.QueueLoad load,
                                       Map<Long, Admission.Candidate> jobs, AdmissionPolicy.Cost cost,
                                       Map<String, List<KeyStep>> keySteps, Set<String> keyNewcomersOnly) {
        toPark.clear();
        parkedTenants.clear();
        Map<String, Integer> fetch = new HashMap<>(policy.fetchPlan(limits, tenants, wanted, load.nextRank()));
        Set<String> cutAtLaneCap = new HashSet<>(keyNewcomersOnly); // they have more than they may take now
        Map<String, List<Long>> candidates = new HashMap<>(read(ctx, fetch, keyRooms, jobs, cost, keySteps, cutAtLaneCap,
                keyNewcomersOnly, load));
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
                candidates.putAll(read(ctx, refetch, keyRooms, jobs, cost, keySteps, cutAtLaneCap, keyNewcomersOnly, load));
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
        return new Candidates(candidates, fetch, underfilled && cutAtPlan, jobs, cutAtLaneCap);
    }

    /**
     * One read of candidates: per tenant, the order its jobs go in (at most what was asked of it), and each job's
     * type and keys in {@code jobs}. A tenant with fairness keys interleaves them by weighted fair queueing one
     * level down (its steps are committed for the jobs the policy then takes, see {@link #commitKeySteps}); every
     * tenant's order leaves out the jobs its concurrency keys have no room for, so any prefix of it, and any
     * subset, keeps every key within its limit.
     */
    private Map<String, List<Long>> read(DSLContext ctx, Map<String, Integer> fetch,
                                         Map<String, Map<String, Integer>> keyRooms, Map<Long, Admission.Candidate> jobs,
                                         AdmissionPolicy.Cost cost, Map<String, List<KeyStep>> keySteps,
                                         Set<String> cutAtLaneCap, Set<String> keyNewcomersOnly,
                                         Admission.QueueLoad load) {
        Map<String, List<Long>> out = new HashMap<>();
        Admission.CandidateRead found = store.admission().candidates(ctx, fetch, keyRooms, noKeyedJobs);
        noKeyedJobs.addAll(found.noKeyedJobs());
        cutAtLaneCap.addAll(found.cut());
        boolean routing = routingRestricts();
        found.byTenant().forEach((tenant, read) -> {
            List<Admission.Candidate> list = read;
            if (routing) { // the candidates no live worker can run are set aside to be parked (each is met once)
                list = new ArrayList<>(read.size());
                for (Admission.Candidate c : read) {
                    if (routable(c.queue(), c.type())) {
                        list.add(c);
                    } else if (toPark.add(c.id())) {
                        parkedTenants.add(tenant);
                    }
                }
            }
            for (Admission.Candidate c : list) jobs.put(c.id(), c);
            Map<String, Integer> room = new HashMap<>(keyRooms.getOrDefault(tenant, Map.of()));
            int asked = fetch.getOrDefault(tenant, 0);
            TenantState t = tenants.get(tenant);
            boolean keys = config.fair() && t != null && list.stream().anyMatch(c -> c.fairnessKey() != null);
            if (keys) t.usesFairnessKeys = true;
            List<Long> ids = new ArrayList<>(Math.min(asked, list.size()));
            if (!keys && keyNewcomersOnly.contains(tenant)) {
                keySteps.remove(tenant); // no fairness key that could be new: nothing to take from a full buffer
            } else if (!keys) {
                for (Admission.Candidate c : list) {
                    if (ids.size() >= asked) break;
                    if (fits(c, room)) ids.add(c.id());
                }
                keySteps.remove(tenant);
            } else {
                List<KeyStep> steps = new ArrayList<>();
                // a full buffer takes only new keys' jobs: the order among those keys alone (up to the round's two)
                for (KeyStep step : interleaveKeys(t, list, room, asked, cost, load, keyNewcomersOnly.contains(tenant))) {
                    ids.add(step.jobId());
                    steps.add(step);
                }
                keySteps.put(tenant, steps);
            }
            out.put(tenant, ids);
        });
        return out;
    }

    /** Whether a job's concurrency key has room left in this round; takes the place if so. */
    private static boolean fits(Admission.Candidate c, Map<String, Integer> room) {
        if (c.concurrencyKey() == null) return true;
        Integer left = room.get(c.concurrencyKey());
        if (left == null) return true; // no limit for this key
        if (left <= 0) return false;
        room.put(c.concurrencyKey(), left - 1);
        return true;
    }

    /**
     * One job of a tenant's key order: which fairness key it came from, and that key's pass before and after.
     */
    private record KeyStep(long jobId, String key, double passBefore, double passAfter) {}

    /**
     * Weighted fair queueing among a tenant's fairness keys ("" stands for its jobs without one): the key with the
     * lowest pass goes next, its pass advancing by the job's cost over the key's weight (tenant limit key_weights,
     * default 1); a key that was not ahead is lifted to the tenant's key virtual time (no credit hoarded). Within a
     * key, jobs keep the tenant's aging order. The passes move only on copies here: the steps the policy takes are
     * committed after it chose.
     */
    private List<KeyStep> interleaveKeys(TenantState t, List<Admission.Candidate> list, Map<String, Integer> room,
                                         int asked, AdmissionPolicy.Cost cost, Admission.QueueLoad load,
                                         boolean newKeysOnly) {
        Map<String, java.util.ArrayDeque<Admission.Candidate>> byKey = new LinkedHashMap<>();
        for (Admission.Candidate c : list) {
            byKey.computeIfAbsent(c.fairnessKey() == null ? "" : c.fairnessKey(), k -> new java.util.ArrayDeque<>()).add(c);
        }
        record Lane(String key, double weight, double[] pass, java.util.ArrayDeque<Admission.Candidate> jobs) {}
        PriorityQueue<Lane> queue = new PriorityQueue<>(Comparator.comparingDouble((Lane l) -> l.pass()[0])
                .thenComparing(Lane::key));
        byKey.forEach((key, jobs) -> {
            Double ahead = t.keyPass.get(key);
            boolean lifted = ahead == null || ahead <= t.keyVirtualTime;
            double pass = lifted ? t.keyVirtualTime : ahead;
            // A key with at most one job in the ready buffer counts as new too, its pass kept (a full buffer still
            // takes its next job; KeyPlacement ranks it among the tenant's buffered jobs): a key trickling a job every
            // 30 ms stayed ahead of the key virtual time of admissions (subkeys: y's p99 170 ms under the flood, 25 ms
            // alone), and with its last job still buffered, its next ones waited for a round with room, 50-70 ms.
            Admission.ReadyKey inBuffer = load.readyKey(t.id(), key);
            boolean newcomer = !key.isEmpty() && (lifted || inBuffer == null || inBuffer.count() <= 1);
            // a full buffer's round reads a woken tenant for its new keys only, each of their jobs read (not only the
            // first: two of a key's jobs that came 9 ms apart took four rounds, the second waiting for room, 76 ms)
            if (newKeysOnly && !newcomer) return;
            queue.add(new Lane(key, t.limits().keyWeights().getOrDefault(key, 1), new double[]{pass}, jobs));
        });
        List<KeyStep> out = new ArrayList<>();
        while (out.size() < asked && !queue.isEmpty()) {
            Lane lane = queue.poll();
            Admission.Candidate next = null;
            while (!lane.jobs().isEmpty() && next == null) {
                Admission.Candidate c = lane.jobs().poll();
                if (fits(c, room)) next = c; // a job of a full concurrency key is passed over, the key's others go on
            }
            if (next == null) continue;
            double before = lane.pass()[0];
            lane.pass()[0] += cost.of(t, next.id()) / lane.weight();
            out.add(new KeyStep(next.id(), lane.key(), before, lane.pass()[0]));
            if (!lane.jobs().isEmpty()) queue.add(lane);
        }
        return out;
    }

    /**
     * The policy took a prefix of each tenant's order: those steps move the keys' passes for real. Keys that fall
     * behind the key virtual time are forgotten (they would be lifted to it), so the map holds only keys ahead.
     */
    private void commitKeySteps(List<AdmissionPolicy.Pick> picks, Map<String, List<KeyStep>> keySteps) {
        if (keySteps.isEmpty()) return;
        Map<String, Integer> taken = new HashMap<>();
        for (AdmissionPolicy.Pick p : picks) taken.merge(p.tenantId(), 1, Integer::sum);
        keySteps.forEach((tenant, steps) -> {
            TenantState t = tenants.get(tenant);
            int k = Math.min(taken.getOrDefault(tenant, 0), steps.size());
            if (t == null || k == 0) return;
            for (int i = 0; i < k; i++) {
                KeyStep step = steps.get(i);
                t.keyPass.put(step.key(), step.passAfter());
                t.keyVirtualTime = Math.max(t.keyVirtualTime, step.passBefore());
            }
            t.keyPass.values().removeIf(pass -> pass <= t.keyVirtualTime);
        });
    }

    /**
     * Where a round's jobs go in the claim order when their tenant has more than one fairness key active. The
     * tenant's pass ranks each job behind every job the tenant already has in the ready buffer, and those may all
     * be one key's: a trickling key's job then waited behind a flooding key's whole buffer (subkeys: 197 ms behind
     * 250 of x's jobs, y's previous job, admitted in the same round, cut in and started 10 ms after its creation).
     * So a keyed job goes where weighted fair queueing among the tenant's keys puts it in the tenant's part of the
     * buffer: a key of weight w among active keys of total weight W has one job in W/w of the tenant's, so its
     * next job follows its last buffered one by W/w - 1 of the tenant's rank gaps (a pick's cost over the tenant's
     * weight), and a key with none buffered starts at the tenant's first buffered job, its further jobs of the
     * round spaced the same way. Never later than the tenant's pass, which still advances by every
     * pick: the tenant's share is unchanged, its jobs only change places within the span of ranks it holds.
     * A tenant with one key active, or with nothing buffered, keeps the pass's rank.
     */
    private final class KeyPlacement {
        private final Admission.QueueLoad load;
        /** Per tenant that picked keyed jobs: the total weight of its active keys ("" for its jobs without one). */
        private final Map<String, Double> totalWeight = new HashMap<>();
        private final Map<String, Integer> placed = new HashMap<>();

        KeyPlacement(Admission.QueueLoad load, Candidates fetched) {
            this.load = load;
            fetched.byTenant().forEach((tenantId, ids) -> {
                TenantState t = tenants.get(tenantId);
                if (t == null || !t.usesFairnessKeys || !config.fair()) return;
                Set<String> keys = new HashSet<>(load.readyFairnessKeys(tenantId));
                int keyedReady = 0;
                for (String k : keys) keyedReady += load.readyKey(tenantId, k).count();
                if (load.ready(tenantId) > keyedReady) keys.add("");
                for (Long id : ids) {
                    String k = fetched.job(id).fairnessKey();
                    keys.add(k == null ? "" : k);
                }
                if (keys.size() < 2) return;
                double w = 0;
                for (String k : keys) w += t.limits().keyWeights().getOrDefault(k, 1);
                totalWeight.put(tenantId, w);
            });
        }

        double rank(AdmissionPolicy.Pick p, String fairnessKey) {
            Double total = totalWeight.get(p.tenantId());
            Double first = load.readyFirstRank(p.tenantId());
            if (total == null || fairnessKey == null || first == null) return p.rank();
            TenantState t = tenants.get(p.tenantId());
            double weight = t.limits().keyWeights().getOrDefault(fairnessKey, 1);
            // the tenant's own gap: its consecutive jobs are its pick's cost over its weight apart in virtual time.
            // Not the buffer's mean gap: once two buffered jobs tied (a grant's job at the claim point), that gap was
            // 0, every next job of the flooding key tied there too, and y's job waited 2.1 s behind 2,239 of them.
            double between = Math.max(0, total / weight - 1) * p.cost() / t.weight();
            int nth = placed.merge(p.tenantId() + '\0' + fairnessKey, 1, Integer::sum) - 1;
            Admission.ReadyKey buffered = load.readyKey(p.tenantId(), fairnessKey);
            double at = buffered == null || buffered.lastRank() == Double.NEGATIVE_INFINITY
                    ? first + nth * between // ties with the tenant's first buffered job (then the ids decide)
                    : buffered.lastRank() + (nth + 1) * between;
            return Math.min(p.rank(), at);
        }
    }

    /** Parks the candidates set aside this round; true when there were any. */
    private boolean parkUnroutable(DSLContext ctx) {
        if (toPark.isEmpty()) return false;
        store.admission().park(ctx, new ArrayList<>(toPark));
        toPark.clear();
        return true;
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
     * The grants LOAD found, minus those taken back now: a paused tenant's, one whose tenant may have jobs
     * waiting again (its slot goes back to ordinary admission, where aging order decides), and one unused
     * for a minute. A grant that disappeared since the last round was used: its token is spent and its
     * tenant is active. A grant this scheduler did not make (it just became the leader) reserves a token.
     */
    private Map<String, Double> keepValidGrants(DSLContext ctx, long now, Map<String, Double> grantAges,
                                                Set<String> deferred, Double nextRank) {
        Map<String, Double> grants = new HashMap<>(grantAges);
        for (String used : grantsAfterLastTick.keySet()) {
            TenantState t = tenants.get(Admission.tenantOfGrant(used));
            if (t != null && !grants.containsKey(used)) {
                t.bucket().settleReservation(true);
                t.lastActiveNanos = now;
                if (t.lastGrantUseNanos != Long.MIN_VALUE && now - t.lastGrantUseNanos <= SPARE_AFTER_USES_WITHIN_NANOS) {
                    if (now >= t.spareUntilNanos) { // quick again after a pause: one spare to start
                        t.grantsWanted = 2;
                        t.sparesSinceNanos = now;
                    }
                    t.spareUntilNanos = now + SPARE_KEEP_NANOS;
                }
                t.lastGrantUseNanos = now;
            }
        }
        for (String adopted : grants.keySet()) {
            TenantState t = tenants.get(Admission.tenantOfGrant(adopted));
            if (t != null && !grantsAfterLastTick.containsKey(adopted)) {
                t.bucket().reserve();
                t.slotsSeen = Math.max(t.slotsSeen, Admission.slotOfGrant(adopted) + 1);
            }
        }
        List<String> revoke = new ArrayList<>();
        grants.forEach((id, ageSeconds) -> {
            String tenantId = Admission.tenantOfGrant(id);
            TenantState t = tenants.get(tenantId);
            boolean spare = Admission.slotOfGrant(id) > 0;
            if (t != null && spare && ageSeconds * 1e9 > SPARE_KEEP_NANOS) {
                t.grantsWanted = Math.max(2, t.grantsWanted - 1); // a spare unused for a second: one fewer is enough
                revoke.add(id);
            } else if (!grantsOn() || t == null || t.limits().paused() || timerOf.containsKey(tenantId)
                    || (!spare && ageSeconds * 1e9 > GRANT_WINDOW_NANOS)) {
                revoke.add(id);
            } else if (maybeWork.contains(tenantId)) {
                if (grantedWithLastAdmission.contains(id)) deferred.add(id); // maybe a late wake-up
                else revoke.add(id);
            }
        });
        grantedWithLastAdmission = Set.of();
        revoke(ctx, revoke, grants, nextRank);
        return grants;
    }

    /**
     * Each grant (a tenant's or a key's) holds a place under max_running and a token of the bucket, and a round never
     * grants past either. So grants beyond a tenant's room or its burst mean max_running or burst was lowered since
     * they were made: they go back, the tenant's spares from the highest slot down, then its first grant, then its key
     * grants. Else an enqueue could take one and start a job past the new cap (a quiet tenant's grant is kept for a
     * minute; measured over the API: max_running lowered from 2 to 1 with one job running, a submit 10 s later ran
     * beside it), or start its grant and a spare at once under a burst lowered to 1.
     */
    private void revokeBeyondRoom(DSLContext ctx, Admission.QueueLoad load, Map<String, Double> grants) {
        if (grants.isEmpty() && keyGrants.isEmpty()) return;
        Map<String, Integer> held = new HashMap<>();
        for (String id : grants.keySet()) held.merge(Admission.tenantOfGrant(id), 1, Integer::sum);
        keyGrants.forEach((tenant, keys) -> held.merge(tenant, keys.size(), Integer::sum));
        List<String> tenantGrants = new ArrayList<>();
        List<Admission.KeyGrant> ofKeys = new ArrayList<>();
        held.forEach((tenantId, n) -> {
            TenantState t = tenants.get(tenantId);
            if (t == null) return;
            int excess = n - Math.max(0, Math.min(room(t, load), t.limits().burst()));
            for (int slot = MAX_TENANT_GRANTS - 1; slot >= 0 && excess > 0; slot--) {
                String id = t.grantId(slot);
                if (grants.containsKey(id)) {
                    tenantGrants.add(id);
                    excess--;
                }
            }
            Set<String> keys = keyGrants.get(tenantId);
            if (keys == null) return;
            for (String id : keys) {
                if (excess-- <= 0) break;
                ofKeys.add(new Admission.KeyGrant(tenantId, Admission.KeyGrant.keyOf(id), Admission.KeyGrant.slotOf(id)));
            }
        });
        if (!tenantGrants.isEmpty()) revoke(ctx, tenantGrants, grants, load.nextRank());
        if (!ofKeys.isEmpty()) revokeKeyGrants(ctx, ofKeys, load);
    }

    /**
     * Takes grants back; one an enqueue is taking right now is not (SKIP LOCKED): it stays counted until gone. The token
     * returns, and so does the charge on the tenant's virtual time, as for a key grant: a grant goes back mostly because
     * its tenant has jobs waiting again, and a busy tenant is never lifted to the virtual time, so a charge kept would
     * put it a turn behind (two with a spare, V16) for a job it never ran.
     */
    private void revoke(DSLContext ctx, List<String> grantIds, Map<String, Double> grants, Double nextRank) {
        for (String revoked : store.admission().revokeGrants(ctx, grantIds)) {
            grants.remove(revoked);
            TenantState t = tenants.get(Admission.tenantOfGrant(revoked));
            if (t == null) continue;
            t.bucket().settleReservation(false);
            if (costs != null) costs.grantRevoked(t);
            policy.correct(t, -t.unitCost, nextRank);
        }
    }

    /**
     * Admission grants: one admission made in advance for each quiet tenant (nothing admissible waiting,
     * active in the last minute), so that its next job is inserted ready and starts without waiting for a
     * scheduler round trip (see V4__admission_grants.sql). A grant is an admission like any other: it
     * reserves a token, counts against max_running, and is charged to the tenant by the policy. At most
     * {@link SchedulerConfig#maxGrants()} are outstanding, most recently active tenants first. The
     * candidates are the cached tenants, which are the active and recently active ones. The same statement clears
     * the grants this tick's LOAD read as used (V15), even when there is no room for a new one.
     */
    private void grantToQuietTenants(DSLContext ctx, long now, Admission.QueueLoad load, int capacity,
                                     Map<String, Double> grants, TickResult admitted) {
        int budget = Math.max(Math.max(config.minBuffer(), capacity), config.maxGrants()) - grants.size()
                - keyGrantsHeld();
        Map<String, Integer> admittedNow = new HashMap<>();
        for (String t : admitted.admittedTenants()) admittedNow.merge(t, 1, Integer::sum);
        List<String> ids = budget > 0 ? quietTenantsToGrant(now, load, grants, admittedNow, budget) : List.of();
        Set<String> withAdmission = new HashSet<>();
        // the used grants this tick's LOAD read are cleared in the same statement (those of tenants granted again
        // become their new grant)
        for (String id : store.admission().grant(ctx, ids, load.usedGrants())) {
            TenantState t = tenants.get(Admission.tenantOfGrant(id));
            t.bucket().reserve();
            policy.chargeGrant(t, load.nextRank());
            if (costs != null) costs.chargedGrant(t, t.unitCost);
            grants.put(id, 0.0);
            if (admittedNow.containsKey(t.id())) withAdmission.add(id);
        }
        grantedWithLastAdmission = withAdmission;
    }

    /**
     * The grants to make this pass, at most {@code budget}: a quiet tenant's first, most recently active first, then
     * the spares of those that use their grants quickly ({@link #SPARE_AFTER_USES_WITHIN_NANOS}) with room and tokens
     * for one more.
     */
    private List<String> quietTenantsToGrant(long now, Admission.QueueLoad load, Map<String, Double> grants,
                                             Map<String, Integer> admittedNow, int budget) {
        List<TenantState> quiet = new ArrayList<>();
        for (TenantState t : tenants.values()) {
            // quiet: no job waiting, due now (maybeWork) or later (a timer); tested first, since while thousands
            // of tenants drain most are in maybeWork (one lookup each). A tenant whose last job this round admitted
            // is quiet too: granted only at the next round, a tenant enqueueing every 20 ms found its grant made
            // in a fifth of its enqueues under load, and each of the others waited a round.
            if (maybeWork.contains(t.id()) || timerOf.containsKey(t.id())) continue;
            boolean active = load.running(t.id()) + load.ready(t.id()) > 0
                    || (t.lastActiveNanos != Long.MIN_VALUE && now - t.lastActiveNanos < GRANT_WINDOW_NANOS);
            if (active && !t.limits().paused() && (!grants.containsKey(t.id()) || wantsSpare(now, t, grants))) {
                quiet.add(t);
            }
        }
        quiet.sort(Comparator.comparingLong((TenantState t) -> t.lastActiveNanos).reversed()
                .thenComparing(TenantState::id));
        List<String> ids = new ArrayList<>();
        List<String> spares = new ArrayList<>();
        for (TenantState t : quiet) {
            if (ids.size() >= budget) break;
            int held = grantsOf(t, grants);
            int room = room(t, load) - admittedNow.getOrDefault(t.id(), 0) - keyGrantsOf(t.id()) - held;
            int tokens = t.bucket().available();
            if (!grants.containsKey(t.id())) {
                if (room < 1 || tokens < 1) continue;
                ids.add(t.id());
                held++;
                room--;
                tokens--;
            }
            if (now >= t.spareUntilNanos) continue;
            // a round admitted its job while it got spares already: it found every grant used, so it is to hold twice
            // as many (2, 4, 8: each miss waits a round, so two misses, not six, reach the cap)
            if (admittedNow.containsKey(t.id()) && t.sparesSinceNanos < now) {
                t.grantsWanted = Math.min(MAX_TENANT_GRANTS, t.grantsWanted * 2);
            }
            for (int slot = 1; slot < MAX_TENANT_GRANTS && held < t.grantsWanted && room >= 1 && tokens >= 1; slot++) {
                String spare = t.grantId(slot);
                if (grants.containsKey(spare)) continue;
                spares.add(spare);
                t.slotsSeen = Math.max(t.slotsSeen, slot + 1);
                held++;
                room--;
                tokens--;
            }
        }
        for (String spare : spares) {
            if (ids.size() >= budget) break;
            ids.add(spare);
        }
        return ids;
    }

    /** Whether the tenant gets spares now and holds fewer grants than it is to hold. */
    private static boolean wantsSpare(long now, TenantState t, Map<String, Double> grants) {
        return now < t.spareUntilNanos && grantsOf(t, grants) < t.grantsWanted;
    }

    /** How many tenant grants (its first and its spares) the tenant holds now: each holds a place of max_running. */
    private static int grantsOf(TenantState t, Map<String, Double> grants) {
        int held = 0;
        for (int slot = 0; slot < t.slotsSeen; slot++) {
            if (grants.containsKey(t.grantId(slot))) held++;
        }
        return held;
    }

    private int keyGrantsHeld() {
        int held = 0;
        for (Set<String> keys : keyGrants.values()) held += keys.size();
        return held;
    }

    /** How many key grants the tenant holds now: each holds a place of max_running. */
    private int keyGrantsOf(String tenantId) {
        Set<String> keys = keyGrants.get(tenantId);
        return keys == null ? 0 : keys.size();
    }

    /**
     * The round's candidates it did not admit name fairness keys with jobs still waiting: none of those is quiet. A
     * key whose every candidate the round admitted may be quiet now (GRANT_KEYS checks that none of its due jobs
     * waits), so the grant for its next job comes in the same tick as the admission of its last.
     */
    private void noteBusyKeys(Candidates fetched, List<AdmissionPolicy.Pick> picks) {
        Set<Long> picked = new HashSet<>(picks.size());
        for (AdmissionPolicy.Pick p : picks) picked.add(p.jobId());
        fetched.byTenant().forEach((tenantId, ids) -> {
            TenantState t = tenants.get(tenantId);
            if (t == null || !t.usesFairnessKeys) return; // no key grants for it: no set per tenant read
            Set<String> keys = keysBusy.computeIfAbsent(tenantId, x -> new HashSet<>());
            for (Long id : ids) {
                String k = fetched.job(id).fairnessKey();
                if (k != null && !picked.contains(id)) keys.add(k);
            }
        });
    }

    /**
     * The key grants LOAD found, minus those taken back now: a paused tenant's, an uncached tenant's, one of a tenant
     * with nothing waiting, and one unused for {@link #KEY_GRANT_WINDOW_NANOS} ({@link #KEY_GRANT_FIRST_NANOS} for a
     * key admitted only once lately). One that disappeared since the last round was used: its token is spent,
     * its key was admitted. One this scheduler did not make (a new leader) reserves a token.
     */
    private void keepValidKeyGrants(DSLContext ctx, long now, Admission.QueueLoad load) {
        keyGrantsUsed.clear();
        Set<String> found = new HashSet<>();
        Map<String, Set<String>> current = new HashMap<>();
        load.keyGrantAgeSeconds().forEach((tenant, keys) -> keys.keySet().forEach(k -> {
            found.add(tenant + '\0' + k);
            current.computeIfAbsent(tenant, x -> new HashSet<>()).add(k);
        }));
        for (String used : keyGrantsAfterLastTick) {
            if (found.contains(used)) continue;
            int cut = used.indexOf('\0');
            TenantState t = tenants.get(used.substring(0, cut));
            if (t == null) continue;
            String key = Admission.KeyGrant.keyOf(used.substring(cut + 1));
            t.bucket().settleReservation(true);
            t.lastActiveNanos = now;
            if (!key.equals(Admission.KeyGrant.NEW_KEY)) t.keyAdmitted(key, now); // a new-key grant names no key
            keyGrantsUsed.computeIfAbsent(t.id(), x -> new HashSet<>()).add(key);
        }
        for (String pair : found) {
            TenantState t = tenants.get(pair.substring(0, pair.indexOf('\0')));
            if (t != null && !keyGrantsAfterLastTick.contains(pair)) t.bucket().reserve();
        }
        keyGrants = current;
        List<Admission.KeyGrant> revoke = new ArrayList<>();
        load.keyGrantAgeSeconds().forEach((tenant, keys) -> keys.forEach((k, ageSeconds) -> {
            TenantState t = tenants.get(tenant);
            // a tenant with nothing waiting is quiet: its tenant grant (V4) covers its next job, whatever its key.
            // A key admitted only once lately keeps an unused grant KEY_GRANT_FIRST_NANOS: a tenant with a key per
            // order (one job each) would otherwise hold 4 places and 4 tokens unused most of the time.
            // (a grant an earlier leader made, of a key this one has not seen, is kept the whole window)
            String key = Admission.KeyGrant.keyOf(k);
            long[] at = t == null ? null : t.recentKeys.get(key);
            long keep = at == null || now - at[1] <= KEY_GRANT_WINDOW_NANOS ? KEY_GRANT_WINDOW_NANOS : KEY_GRANT_FIRST_NANOS;
            if (!grantsOn() || t == null || t.limits().paused() || ageSeconds * 1e9 > keep
                    || !maybeWork.contains(tenant)) {
                revoke.add(new Admission.KeyGrant(tenant, key, Admission.KeyGrant.slotOf(k)));
            }
        }));
        revokeKeyGrants(ctx, revoke, load);
    }

    /**
     * A key with jobs the round read and did not admit has jobs waiting: its grants go back (an enqueue would not use
     * them while the key has a job waiting, and the places go back to ordinary admission, where aging order decides).
     */
    private void revokeKeyGrantsOfBusyKeys(DSLContext ctx, Admission.QueueLoad load) {
        if (keyGrants.isEmpty()) return;
        List<Admission.KeyGrant> revoke = new ArrayList<>();
        keysBusy.forEach((tenant, keys) -> {
            Set<String> held = keyGrants.get(tenant);
            if (held == null) return;
            for (String id : held) {
                String key = Admission.KeyGrant.keyOf(id);
                if (keys.contains(key)) revoke.add(new Admission.KeyGrant(tenant, key, Admission.KeyGrant.slotOf(id)));
            }
        });
        revokeKeyGrants(ctx, revoke, load);
    }

    /**
     * Takes key grants back: the token returns, and so does the charge on the tenant's and the key's virtual times
     * (a busy tenant is never lifted to the virtual time, so a charge kept would cost it real share at every grant
     * taken back; the tenant's pass goes back no further than the virtual time, as any credit).
     */
    private void revokeKeyGrants(DSLContext ctx, List<Admission.KeyGrant> grants, Admission.QueueLoad load) {
        for (Admission.KeyGrant g : store.admission().revokeKeyGrants(ctx, grants)) {
            Set<String> held = keyGrants.get(g.tenantId());
            if (held != null && held.remove(g.id()) && held.isEmpty()) keyGrants.remove(g.tenantId());
            TenantState t = tenants.get(g.tenantId());
            if (t == null) continue;
            t.bucket().settleReservation(false);
            if (costs != null) costs.grantRevoked(t);
            policy.correct(t, -t.unitCost, load.nextRank());
            Double keyPass = t.keyPass.get(g.fairnessKey());
            if (keyPass != null) {
                double back = keyPass - t.unitCost / t.limits().keyWeights().getOrDefault(g.fairnessKey(), 1);
                if (back <= t.keyVirtualTime) t.keyPass.remove(g.fairnessKey());
                else t.keyPass.put(g.fairnessKey(), back);
            }
        }
    }

    /**
     * Key grants (V13__key_grants.sql): a tenant with jobs waiting holds no admission grant, so a fairness key of it
     * that trickles waited for a scheduler round at every job while another key flooded (subkeys: created to
     * admitted p50 6-12 ms, p99 23-131 ms, against 0 alone, where the tenant's grant admitted each job in its
     * enqueue). So each key of a tenant with work waiting that had a job admitted in the last
     * {@link #KEY_GRANT_WINDOW_NANOS} and none waiting now (a key the round read and left nothing of, or whose grant an
     * enqueue just used) gets {@link #KEY_GRANT_SLOTS} admissions in advance, like a quiet tenant: for each a token
     * reserved, a place of max_running held, the tenant and the key charged. Its job is ranked where the
     * round would rank the key's next job (the tenant's first buffered job, or its pass), not at the front: the
     * tenant is busy, and its grant must not pass other tenants' jobs ranked ahead of its own. At most
     * {@link #MAX_KEY_GRANTS_PER_TENANT} a tenant, within the same {@link SchedulerConfig#maxGrants()} budget.
     */
    private void grantToQuietKeys(DSLContext ctx, long now, Admission.QueueLoad load, int capacity,
                                  Map<String, Double> grants, TickResult admitted) {
        if (keysBusy.isEmpty() && keyGrantsUsed.isEmpty()) return;
        int budget = Math.max(Math.max(config.minBuffer(), capacity), config.maxGrants()) - grants.size()
                - keyGrantsHeld();
        if (budget <= 0) return;
        Map<String, Integer> admittedNow = new HashMap<>();
        for (String t : admitted.admittedTenants()) admittedNow.merge(t, 1, Integer::sum);
        List<Admission.KeyGrant> wanted = new ArrayList<>();
        Set<String> considered = new HashSet<>(keysBusy.keySet());
        considered.addAll(keyGrantsUsed.keySet());
        for (String tenantId : considered) {
            TenantState t = tenants.get(tenantId);
            if (t == null || t.limits().paused() || !t.usesFairnessKeys || !maybeWork.contains(tenantId)) continue;
            // Which keys may be quiet: the tenant's recent keys of which the round left no job unadmitted; when the
            // round did not read the tenant, only the keys whose grant was just used (the enqueue that used it found
            // none of the key's jobs waiting). GRANT_KEYS grants none with a due job waiting.
            Set<String> busy = keysBusy.get(tenantId);
            Set<String> quietOnly = busy == null ? keyGrantsUsed.getOrDefault(tenantId, Set.of()) : null;
            Set<String> has = keyGrants.getOrDefault(t.id(), Set.of());
            Map<String, Set<Integer>> slotsHeld = new HashMap<>();
            for (String id : has) {
                slotsHeld.computeIfAbsent(Admission.KeyGrant.keyOf(id), x -> new HashSet<>()).add(Admission.KeyGrant.slotOf(id));
            }
            int room = room(t, load) - admittedNow.getOrDefault(t.id(), 0) - grantsOf(t, grants) - has.size();
            int tokens = t.bucket().available();
            int may = Math.min(Math.min(room, tokens), MAX_KEY_GRANTS_PER_TENANT - has.size());
            if (may <= 0) continue;
            double rank = Math.max(t.pass(), policy.virtualTime(load.nextRank()));
            Double first = load.readyFirstRank(t.id());
            if (first != null) rank = Math.min(rank, first);
            Double admittedAt = roundFirstRank.get(t.id());
            if (admittedAt != null && admittedAt > Double.NEGATIVE_INFINITY) rank = Math.min(rank, admittedAt);
            // every eligible recent key goes to GRANT_KEYS, which grants at most `may` of those with no due job
            // waiting: a flooding key, recent too, would otherwise take the places of the quiet ones it is tried before.
            // Slot by slot across the keys (each key's first two before any key's spares), and the spares beyond two
            // only with SPARE_KEY_GRANT_ROOM places free, so that they never hold much of a small tenant's room.
            List<List<Admission.KeyGrant>> bySlot = new ArrayList<>();
            for (int slot = 0; slot < KEY_GRANT_SLOTS; slot++) bySlot.add(new ArrayList<>());
            int slots = room >= SPARE_KEY_GRANT_ROOM ? KEY_GRANT_SLOTS : BASE_KEY_GRANT_SLOTS;
            for (Map.Entry<String, long[]> k : t.recentKeys.entrySet()) {
                long[] at = k.getValue();
                Set<Integer> held = slotsHeld.getOrDefault(k.getKey(), Set.of());
                if (now - at[0] > KEY_GRANT_WINDOW_NANOS || held.size() >= KEY_GRANT_SLOTS
                        || (quietOnly != null ? !quietOnly.contains(k.getKey()) : busy.contains(k.getKey()))) continue;
                // never ahead of the key's own jobs in the buffer (its aging order)
                double keyRank = rank;
                Admission.ReadyKey buffered = load.readyKey(t.id(), k.getKey());
                if (buffered != null) keyRank = Math.max(keyRank, buffered.lastRank());
                Double placedNow = roundLastRankOfKey.get(t.id() + '\0' + k.getKey());
                if (placedNow != null) keyRank = Math.max(keyRank, placedNow);
                if (keyRank == Double.NEGATIVE_INFINITY) keyRank = rank;
                for (int slot = 0; slot < slots; slot++) {
                    if (!held.contains(slot)) bySlot.get(slot).add(new Admission.KeyGrant(t.id(), k.getKey(), slot, keyRank, may));
                }
            }
            // The new-key grant, after the recent keys' first two (those are likelier to be used): a key becoming
            // active (none recent to grant) has its first job admitted in its enqueue, as a key joining at the key
            // virtual time is first in line in its tenant anyway. Only for a tenant this round served (one it did
            // not is behind others, and so is its new key) with a place left beside it (so that it never holds the
            // tenant's last place), and from the first half of the budget only (the rest stays for quiet
            // tenants' grants, the commoner case).
            if (!slotsHeld.containsKey(Admission.KeyGrant.NEW_KEY) && admittedNow.getOrDefault(t.id(), 0) > 0
                    && room >= 2 && wanted.size() < budget / 2) {
                bySlot.get(BASE_KEY_GRANT_SLOTS - 1).add(new Admission.KeyGrant(t.id(), Admission.KeyGrant.NEW_KEY, 0, rank, may));
            }
            for (List<Admission.KeyGrant> ofSlot : bySlot) {
                for (Admission.KeyGrant g : ofSlot) {
                    if (wanted.size() >= budget) break;
                    wanted.add(g);
                }
            }
        }
        for (Admission.KeyGrant g : store.admission().grantKeys(ctx, wanted)) {
            TenantState t = tenants.get(g.tenantId());
            t.bucket().reserve();
            policy.chargeGrant(t, load.nextRank());
            if (costs != null) costs.chargedGrant(t, t.unitCost);
            keyGrants.computeIfAbsent(g.tenantId(), x -> new HashSet<>()).add(g.id());
            if (g.fairnessKey().equals(Admission.KeyGrant.NEW_KEY)) continue; // no key to charge yet
            // and the key's virtual time, as a pick of the key would be (lifted to the key virtual time first)
            double keyPass = Math.max(t.keyPass.getOrDefault(g.fairnessKey(), t.keyVirtualTime), t.keyVirtualTime);
            t.keyPass.put(g.fairnessKey(), keyPass + t.unitCost / t.limits().keyWeights().getOrDefault(g.fairnessKey(), 1));
        }
    }

    /**
     * Forgets tenants that are idle and whose state a fresh one would equal: nothing waiting, ready, running
     * or granted, not active in the grant window, and a full bucket (a new bucket starts full, so the rate
     * bound holds across forgetting). A tenant that becomes active again is lifted to the virtual time anyway;
     * the only thing forgetting can lose is a virtual time ahead of it, which for a tenant with nothing in the
     * ready buffer is at most its last job's 1/weight: at most one turn. Keeps the cache the size of the
     * active set.
     */
    private void evictIdle(long now, Admission.QueueLoad load, Map<String, Double> grants) {
        double virtualTime = policy.virtualTime(load.nextRank());
        tenants.values().removeIf(t -> !maybeWork.contains(t.id()) && load.ready(t.id()) == 0
                && load.running(t.id()) == 0 && grantsOf(t, grants) == 0 && !heldByKeys.containsKey(t.id())
                && !keyGrants.containsKey(t.id())
                && (t.lastActiveNanos == Long.MIN_VALUE || now - t.lastActiveNanos >= GRANT_WINDOW_NANOS)
                && t.bucket().isFull() && t.pass() <= virtualTime + t.lastCharge / t.weight());
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

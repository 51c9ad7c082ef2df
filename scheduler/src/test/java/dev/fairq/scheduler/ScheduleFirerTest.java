package dev.fairq.scheduler;

import dev.fairq.schema.ClaimedJob;
import dev.fairq.schema.EnqueueResult;
import dev.fairq.schema.JobOutcome;
import dev.fairq.schema.JobStore;
import dev.fairq.schema.SettableClock;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Firing against a real PostgreSQL on a settable clock (no test waits for a minute to pass): one job per fire
 * with its stable key, created ahead for allow/queue, decided when due for 'overlap: skip'; missed runs;
 * overlap; changes that withdraw a fire created ahead; start_at and end_at; daylight saving; limits.
 */
class ScheduleFirerTest extends ScheduleTenantsTest {
    static final Duration LEASE = Duration.ofMinutes(5);
    SettableClock clock;
    JobStore store;
    ScheduleService service;
    ScheduleFirer firer;
    final Map<String, AtomicLong> skippedByReason = new ConcurrentHashMap<>();
    final List<Duration> lags = java.util.Collections.synchronizedList(new ArrayList<>());

    @BeforeEach
    void startAtStart() {
        start(START);
    }

    private void start(Instant at) {
        clock = new SettableClock(at);
        store = new JobStore(clock);
        service = new ScheduleService(store);
        firer = new ScheduleFirer(store, new ScheduleObserver() {
            @Override
            public void fired(String tenantId, Duration lag) {
                lags.add(lag);
            }

            @Override
            public void skipped(String tenantId, String reason, long fires) {
                skippedByReason.computeIfAbsent(reason, k -> new AtomicLong()).addAndGet(fires);
            }
        });
    }

    private ScheduleDefinition.Builder every(String cron) {
        return ScheduleDefinition.builder(cron, "UTC", new ScheduleDefinition.JobTemplate("report",
                dev.fairq.schema.Json.MAPPER.createObjectNode().put("k", 1), null, null, null, null));
    }

    private void put(String tenant, String name, ScheduleDefinition d) {
        service.put(dsl, tenant, name, d);
    }

    private void at(String instant) {
        clock.set(Instant.parse(instant));
    }

    private List<String> keys(String tenant) {
        return dsl.fetch("SELECT job_key FROM jobs WHERE tenant_id = ? ORDER BY job_key", tenant).getValues(0, String.class);
    }

    private long skipped(String reason) {
        return skippedByReason.getOrDefault(reason, new AtomicLong()).get();
    }

    /** Admits, claims and finishes a job through the queue's own statements. */
    private void run(long jobId) {
        store.admit(dsl, List.of(jobId));
        List<ClaimedJob> claimed = store.claim(dsl, "w", 10, LEASE);
        assertEquals(1, claimed.size());
        store.finish(dsl, "w", List.of(new JobOutcome.Succeeded(claimed.get(0).id(), claimed.get(0).attempt())));
    }

    private long jobId(String tenant, String key) {
        return db.count("SELECT id FROM jobs WHERE tenant_id = ? AND job_key = ?", tenant, key);
    }

    @Test
    void eachFireEnqueuesOneJobWithItsStableKeyCreatedAheadOfItsInstant() {
        put("acme", "nightly-report", every("* * * * *").build());
        assertEquals(0, firer.fire(dsl), "12:01 is 50 s away: beyond the 30 s lookahead");
        at("2026-06-01T12:00:31Z");
        assertEquals(1, firer.fire(dsl));
        assertEquals(0, firer.fire(dsl), "fired once, however often the firer runs");
        assertEquals(List.of("schedule:nightly-report:2026-06-01T12:01:00Z"), keys("acme"));
        var job = dsl.fetchOne("SELECT * FROM jobs WHERE tenant_id = 'acme'");
        assertEquals("pending", job.get("status").toString());
        assertEquals(Instant.parse("2026-06-01T12:01:00Z"), job.get("run_at", java.time.OffsetDateTime.class).toInstant());
        assertEquals("report", job.get("type"));
        assertEquals(Duration.ZERO, lags.get(0), "created ahead: no lag");

        at("2026-06-01T12:03:40Z"); // 12:02 is 100 s late: missed (skip), 12:03 is 40 s late: fired, 12:04 ahead
        assertEquals(2, firer.fire(dsl));
        assertEquals(List.of("schedule:nightly-report:2026-06-01T12:01:00Z", "schedule:nightly-report:2026-06-01T12:03:00Z",
                "schedule:nightly-report:2026-06-01T12:04:00Z"), keys("acme"));
        assertEquals(1, skipped("missed"));
        assertTrue(lags.contains(Duration.ofSeconds(40)), lags.toString());
        ScheduleInfo info = service.get(dsl, "acme", "nightly-report").orElseThrow();
        assertEquals(Instant.parse("2026-06-01T12:04:00Z"), info.nextFires().get(0), "the job created ahead is the next fire");
        assertEquals(jobId("acme", "schedule:nightly-report:2026-06-01T12:04:00Z"), info.nextJobId());
        assertEquals(Instant.parse("2026-06-01T12:03:00Z"), info.lastFire().fireAt(), "the last fire is the last due one");
        assertEquals("pending", info.lastFire().jobStatus());
        assertEquals(5, info.nextFires().size());
        assertEquals(3, info.fired());
        assertEquals(1, info.skipped());
    }

    @Test
    void manyFirersAtOnceEnqueueEachFireExactlyOnce() throws Exception {
        List<String> tenants = List.of("acme", "globex");
        for (int i = 0; i < 300; i++) put(tenants.get(i % 2), "s" + i, every("* * * * *").build());
        int threads = 8, minutes = 5;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            for (int m = 0; m < minutes; m++) {
                clock.advance(Duration.ofSeconds(60));
                CountDownLatch go = new CountDownLatch(1);
                List<Future<Integer>> results = new ArrayList<>();
                ScheduleFirer smallBatches = new ScheduleFirer(store, ScheduleObserver.NONE, ScheduleFirer.DEFAULT_LOOKAHEAD,
                        ScheduleFirer.DEFAULT_MISSED_AFTER, 25, Duration.ofDays(1));
                for (int t = 0; t < threads; t++) {
                    results.add(pool.submit(() -> {
                        go.await();
                        return smallBatches.fire(db.dsl());
                    }));
                }
                go.countDown();
                int total = 0;
                for (Future<Integer> f : results) total += f.get(60, TimeUnit.SECONDS);
                assertEquals(300, total, "minute " + m + ": every schedule fired once among the firers");
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(300L * minutes, db.count("SELECT count(*) FROM jobs"));
        assertEquals(300L * minutes, db.count("SELECT count(DISTINCT (tenant_id, job_key)) FROM jobs"));
        // every schedule has exactly the fires 12:01 .. 12:05, each once
        assertEquals(0, db.count("""
                SELECT count(*) FROM (SELECT tenant_id, left(job_key, -21) AS s, count(*) AS n
                                      FROM jobs GROUP BY 1, 2) x WHERE n <> ?""", minutes));
        assertEquals(300, db.count("SELECT count(DISTINCT (tenant_id, left(job_key, -21))) FROM jobs"));
    }

    @Test
    void missedFiresSkipRunOnceOrRunAllUpToTheBackfillLimit() {
        at("2026-06-01T12:30:00Z");
        put("acme", "skip", every("0 * * * *").build());
        put("acme", "once", every("0 * * * *").missedRuns("run_once").build());
        put("acme", "all3", every("0 * * * *").missedRuns("run_all").backfillLimit(3).build());
        put("acme", "all10", every("0 * * * *").missedRuns("run_all").backfillLimit(10).build());
        // no scheduler runs from before 13:00 to 18:30: 13:00 ... 18:00 were missed (six fires)
        at("2026-06-01T18:30:00Z");
        firer.fire(dsl);
        assertEquals(List.of(), keys("acme").stream().filter(k -> k.startsWith("schedule:skip:")).toList());
        assertEquals(List.of("schedule:once:2026-06-01T18:00:00Z"),
                keys("acme").stream().filter(k -> k.startsWith("schedule:once:")).toList());
        assertEquals(List.of("schedule:all3:2026-06-01T16:00:00Z", "schedule:all3:2026-06-01T17:00:00Z",
                "schedule:all3:2026-06-01T18:00:00Z"), keys("acme").stream().filter(k -> k.startsWith("schedule:all3:")).toList());
        assertEquals(6, keys("acme").stream().filter(k -> k.startsWith("schedule:all10:")).count());
        assertEquals(6 + 5 + 3 + 0, skipped("missed"));
        // caught-up fires are due now, not at their old instants (aging would put them ahead of everything)
        assertEquals(0, db.count("SELECT count(*) FROM jobs WHERE run_at <> '2026-06-01T18:30:00Z'"));
        // and every schedule goes on at 19:00
        for (String s : List.of("skip", "once", "all3", "all10")) {
            assertEquals(Instant.parse("2026-06-01T19:00:00Z"), service.get(dsl, "acme", s).orElseThrow().nextFires().get(0));
        }
    }

    @Test
    void aLateFireWithinAMinuteIsNotMissed() {
        at("2026-06-01T12:30:00Z");
        put("acme", "hourly", every("0 * * * *").build());
        at("2026-06-01T13:00:50Z"); // the firer fell behind by 50 s
        assertEquals(1, firer.fire(dsl));
        assertEquals(List.of("schedule:hourly:2026-06-01T13:00:00Z"), keys("acme"));
        assertEquals(0, skipped("missed"));
        assertEquals(Duration.ofSeconds(50), lags.get(0));
    }

    @Test
    void overlapSkipSkipsAFireWhileThePreviousJobIsUnfinishedDecidedAtTheFireInstant() {
        put("acme", "s", every("* * * * *").overlap("skip").build());
        at("2026-06-01T12:00:45Z");
        assertEquals(0, firer.fire(dsl), "'overlap: skip' is not created ahead");
        at("2026-06-01T12:01:00Z");
        assertEquals(1, firer.fire(dsl));
        long first = jobId("acme", "schedule:s:2026-06-01T12:01:00Z");
        at("2026-06-01T12:02:00Z");
        assertEquals(0, firer.fire(dsl), "the 12:01 job is still pending");
        assertEquals(1, skipped("overlap"));
        ScheduleInfo info = service.get(dsl, "acme", "s").orElseThrow();
        assertEquals("skipped_overlap", info.lastFire().outcome());
        assertNull(info.lastFire().jobId());
        run(first);
        at("2026-06-01T12:03:00Z");
        assertEquals(1, firer.fire(dsl), "the previous job finished: this fire runs");
        assertEquals(List.of("schedule:s:2026-06-01T12:01:00Z", "schedule:s:2026-06-01T12:03:00Z"), keys("acme"));
    }

    @Test
    void overlapQueueQueuesEachFireBehindThePreviousOne() {
        put("acme", "q", every("* * * * *").overlap("queue").build());
        at("2026-06-01T12:00:40Z");
        firer.fire(dsl);
        at("2026-06-01T12:01:40Z");
        firer.fire(dsl);
        long first = jobId("acme", "schedule:q:2026-06-01T12:01:00Z");
        long second = jobId("acme", "schedule:q:2026-06-01T12:02:00Z");
        assertEquals(2, db.count("SELECT count(*) FROM jobs WHERE ordering_key = 'schedule:q'"));
        assertEquals(1, db.count("SELECT count(*) FROM jobs WHERE id = ? AND key_head", first));
        assertEquals(0, db.count("SELECT count(*) FROM jobs WHERE id = ? AND key_head", second), "waits its turn");
        at("2026-06-01T12:02:00Z");
        run(first);
        assertEquals(1, db.count("SELECT count(*) FROM jobs WHERE id = ? AND key_head", second), "its turn now");
    }

    @Test
    void overlapAllowLetsFiresRunSideBySide() {
        put("acme", "a", every("* * * * *").build());
        at("2026-06-01T12:00:40Z");
        firer.fire(dsl);
        at("2026-06-01T12:01:40Z");
        firer.fire(dsl);
        assertEquals(2, db.count("SELECT count(*) FROM jobs WHERE ordering_key IS NULL AND status = 'pending'"));
    }

    /**
     * A write that changes nothing (a tool applying its configuration again: the same PUT, a PATCH to what is there,
     * a payload with its keys in another order) keeps the fire created ahead, its job and id; a real change does not.
     */
    @Test
    void aWriteThatChangesNothingKeepsTheFireCreatedAhead() {
        var payload = dev.fairq.schema.Json.MAPPER.createObjectNode().put("a", 1).put("b", 2);
        ScheduleDefinition d = ScheduleDefinition.builder("* * * * *", "UTC",
                new ScheduleDefinition.JobTemplate("report", payload, null, null, null, null)).build();
        put("acme", "same", d);
        at("2026-06-01T12:00:40Z");
        firer.fire(dsl);
        long ahead = jobId("acme", "schedule:same:2026-06-01T12:01:00Z");
        assertTrue(ahead > 0);
        put("acme", "same", d);
        var reordered = dev.fairq.schema.Json.MAPPER.createObjectNode().put("b", 2).put("a", 1);
        put("acme", "same", ScheduleDefinition.builder("* * * * *", "UTC",
                new ScheduleDefinition.JobTemplate("report", reordered, null, null, null, null)).build());
        service.setPaused(dsl, "acme", "same", false);
        assertEquals(1, db.count("SELECT count(*) FROM jobs WHERE id = ?", ahead), "the job created ahead stays, with its id");
        assertEquals(ahead, service.get(dsl, "acme", "same").orElseThrow().nextJobId());
        assertEquals(1, db.count("SELECT count(*) FROM jobs WHERE tenant_id = 'acme'"));

        put("acme", "same", ScheduleDefinition.builder("* * * * *", "UTC",
                new ScheduleDefinition.JobTemplate("report", payload.deepCopy().put("c", 3), null, null, null, null)).build());
        assertEquals(0, db.count("SELECT count(*) FROM jobs WHERE id = ?", ahead), "a real change withdraws it");
    }

    @Test
    void aChangeWithdrawsTheFireCreatedAheadAndFiresItAgainUnderTheNewDefinition() {
        put("acme", "c", every("* * * * *").build());
        at("2026-06-01T12:00:40Z");
        firer.fire(dsl);
        long old = jobId("acme", "schedule:c:2026-06-01T12:01:00Z");
        service.patch(dsl, "acme", "c", dev.fairq.schema.Json.MAPPER.createObjectNode()
                .set("job", dev.fairq.schema.Json.MAPPER.createObjectNode().set("payload",
                        dev.fairq.schema.Json.MAPPER.createObjectNode().put("k", 2))));
        assertEquals(0, db.count("SELECT count(*) FROM jobs WHERE id = ?", old), "withdrawn");
        firer.fire(dsl);
        assertEquals(List.of("schedule:c:2026-06-01T12:01:00Z"), keys("acme"));
        assertEquals(2, db.count("SELECT (payload->>'k')::int FROM jobs WHERE tenant_id = 'acme'"));
        assertEquals(1, service.get(dsl, "acme", "c").orElseThrow().fired());

        // paused: the fire created ahead goes, nothing fires, and nothing is caught up on resume
        service.setPaused(dsl, "acme", "c", true);
        assertEquals(0, db.count("SELECT count(*) FROM jobs"));
        at("2026-06-01T12:03:10Z");
        assertEquals(0, firer.fire(dsl));
        assertEquals(List.of(), service.get(dsl, "acme", "c").orElseThrow().nextFires(), "paused: no next fires");
        service.setPaused(dsl, "acme", "c", false);
        at("2026-06-01T12:03:40Z");
        firer.fire(dsl);
        assertEquals(List.of("schedule:c:2026-06-01T12:04:00Z"), keys("acme"));

        // a fire created ahead whose job already started (an operator admitted it early) stays; the change
        // applies from the next fire
        at("2026-06-01T12:04:40Z");
        firer.fire(dsl);
        long started = jobId("acme", "schedule:c:2026-06-01T12:05:00Z");
        store.admit(dsl, List.of(started));
        assertEquals(1, store.claim(dsl, "w", 10, LEASE).size());
        service.setPaused(dsl, "acme", "c", false); // a write of the same definition
        assertEquals(1, db.count("SELECT count(*) FROM jobs WHERE id = ? AND status = 'running'", started));
        ScheduleInfo kept = service.get(dsl, "acme", "c").orElseThrow();
        assertEquals(List.of(Instant.parse("2026-06-01T12:05:00Z"), Instant.parse("2026-06-01T12:06:00Z")),
                kept.nextFires().subList(0, 2), "12:05 keeps its (running) job; the schedule goes on at 12:06");
        assertEquals(started, kept.nextJobId());

        // deleted: a fire created ahead is withdrawn; jobs already fired stay
        at("2026-06-01T12:05:40Z");
        firer.fire(dsl);
        assertEquals(1, db.count("SELECT count(*) FROM jobs WHERE job_key = 'schedule:c:2026-06-01T12:06:00Z'"));
        assertTrue(service.delete(dsl, "acme", "c"));
        assertEquals(0, db.count("SELECT count(*) FROM jobs WHERE job_key = 'schedule:c:2026-06-01T12:06:00Z'"));
        assertEquals(1, db.count("SELECT count(*) FROM jobs WHERE id = ?", started));
        assertTrue(service.get(dsl, "acme", "c").isEmpty());
    }

    @Test
    void startAtAndEndAtBoundTheFires() {
        put("acme", "window", every("* * * * *").startAt(Instant.parse("2026-06-01T12:05:00Z"))
                .endAt(Instant.parse("2026-06-01T12:08:00Z")).build());
        for (int i = 0; i < 20; i++) {
            clock.advance(Duration.ofSeconds(30));
            firer.fire(dsl);
        }
        assertEquals(List.of("schedule:window:2026-06-01T12:05:00Z", "schedule:window:2026-06-01T12:06:00Z",
                "schedule:window:2026-06-01T12:07:00Z"), keys("acme"));
        ScheduleInfo info = service.get(dsl, "acme", "window").orElseThrow();
        assertEquals(List.of(), info.nextFires(), "past end_at: no next fire");
        assertEquals(0, db.count("SELECT count(*) FROM schedules WHERE next_fire_at IS NOT NULL"));
    }

    @Test
    void aDaily0230BerlinScheduleFiresOnceOnEachDaylightSavingDay() {
        for (String[] day : new String[][]{{"2026-03-28T20:00:00Z", "2026-03-29T01:30:00Z"},
                {"2026-10-24T20:00:00Z", "2026-10-25T00:30:00Z"}}) {
            db.reset();
            db.createTenant("acme");
            start(Instant.parse(day[0]));
            put("acme", "berlin", ScheduleDefinition.builder("30 2 * * *", "Europe/Berlin",
                    ScheduleDefinition.JobTemplate.of("report")).build());
            // walk through the night in 10-minute steps, firing at each
            for (int i = 0; i < 60; i++) {
                clock.advance(Duration.ofMinutes(10));
                firer.fire(dsl);
            }
            List<String> k = keys("acme");
            assertEquals(1, k.stream().filter(x -> x.contains(day[1].substring(0, 10))).count(), k.toString());
            assertTrue(k.contains("schedule:berlin:" + day[1]), k.toString());
        }
    }

    /**
     * A zone stored valid that this JVM's tz database no longer has (a JDK upgrade, or another process on another
     * JDK): the schedule stops firing, but it can still be read, listed and repaired; reading it was a 500, for it
     * and for every list it was in, and a PUT naming a known zone was refused for the stored zone.
     */
    @Test
    void aScheduleWhoseZoneIsNoLongerKnownCanBeReadListedAndRepaired() {
        put("acme", "gone", every("* * * * *").build());
        put("acme", "fine", every("0 * * * *").build());
        dsl.execute("UPDATE schedules SET time_zone = 'Gone/Zone' WHERE name = 'gone'");
        ScheduleInfo gone = service.get(dsl, "acme", "gone").orElseThrow();
        assertEquals(List.of(), gone.nextFires(), "it cannot fire");
        assertEquals("Gone/Zone", gone.timeZone());
        assertEquals(2, service.list(dsl, "acme", null, null, 10).schedules().size());
        assertEquals(2, service.byNextFire(dsl, "acme", 10).size());
        at("2026-06-01T12:01:00Z");
        firer.fire(dsl);
        assertEquals("invalid", service.get(dsl, "acme", "gone").orElseThrow().lastFire().outcome());

        ScheduleInfo repaired = service.put(dsl, "acme", "gone", every("* * * * *").build()).schedule();
        assertEquals("UTC", repaired.timeZone());
        assertEquals(Instant.parse("2026-06-01T12:02:00Z"), repaired.nextFires().get(0), "12:01 was handled (invalid)");
        // a write that keeps the unknown zone still names it
        dsl.execute("UPDATE schedules SET time_zone = 'Gone/Zone' WHERE name = 'gone'");
        InvalidScheduleException e = assertThrows(InvalidScheduleException.class, () -> service.setPaused(dsl, "acme", "gone", true));
        assertEquals("time_zone", e.errors().get(0).field());
        assertTrue(service.delete(dsl, "acme", "gone"));
    }

    /**
     * A stored next fire the cron no longer names (computed under other tz rules, or under the reading of
     * '0 0 *' + '/2 * MON' before it followed Vixie cron) is not fired: the firer fires the schedule's first real
     * instant at or after it. It had fired once at the stored instant, then corrected itself.
     */
    @Test
    void aStoredNextFireTheCronDoesNotNameIsNotFired() {
        put("acme", "hourly", every("0 * * * *").build());
        dsl.execute("UPDATE schedules SET next_fire_at = '2026-06-01T12:07:00Z' WHERE name = 'hourly'");
        at("2026-06-01T12:06:45Z");
        assertEquals(0, firer.fire(dsl));
        assertEquals(List.of(), keys("acme"));
        assertEquals(Instant.parse("2026-06-01T13:00:00Z"), service.get(dsl, "acme", "hourly").orElseThrow().nextFires().get(0));
        at("2026-06-01T12:59:45Z");
        assertEquals(1, firer.fire(dsl));
        assertEquals(List.of("schedule:hourly:2026-06-01T13:00:00Z"), keys("acme"));
    }

    @Test
    void aTenantAtMaxQueuedHasItsFireSkippedAndTheOthersStillFire() {
        dsl.execute("UPDATE tenants SET max_queued = 1 WHERE id = 'acme'");
        store.enqueue(dsl, dev.fairq.schema.JobRequest.builder("acme", "other").build());
        put("acme", "full", every("* * * * *").build());
        put("globex", "fine", every("* * * * *").build());
        at("2026-06-01T12:00:40Z");
        assertEquals(1, firer.fire(dsl));
        assertEquals(List.of("schedule:fine:2026-06-01T12:01:00Z"), keys("globex"));
        assertEquals(1, skipped("queue_full"));
        assertEquals("queue_full", dsl.fetchValue("SELECT last_outcome FROM schedules WHERE name = 'full'"));
    }

    /**
     * A tenant with room for some of its fires gets that many: the fires of one batch were enqueued all or none, so
     * one fire more than the room skipped every one of them (a run_all backfill of 6 with room for 5 enqueued none).
     */
    @Test
    void aTenantWithRoomForSomeOfItsFiresGetsThatManyAndOnlyTheRestAreQueueFull() {
        dsl.execute("UPDATE tenants SET max_queued = 3 WHERE id = 'acme'");
        store.enqueue(dsl, dev.fairq.schema.JobRequest.builder("acme", "other").build());
        for (String name : List.of("a", "b", "c", "d")) put("acme", name, every("* * * * *").build());
        put("globex", "fine", every("* * * * *").build());
        at("2026-06-01T12:00:40Z");
        assertEquals(3, firer.fire(dsl), "two of acme's four fires fit, and globex's");
        assertEquals(2, db.count("SELECT count(*) FROM jobs WHERE tenant_id = 'acme' AND job_key LIKE 'schedule:%'"));
        assertEquals(2, skipped("queue_full"));
        assertEquals(2, db.count("SELECT count(*) FROM schedules WHERE tenant_id = 'acme' AND last_outcome = 'queue_full'"));

        // a backfill after an outage: room for 5 of its 6 missed fires
        db.reset();
        db.createTenant("acme");
        start(Instant.parse("2026-06-01T12:30:00Z"));
        dsl.execute("UPDATE tenants SET max_queued = 5 WHERE id = 'acme'");
        put("acme", "all", every("0 * * * *").missedRuns("run_all").build());
        at("2026-06-01T18:30:00Z"); // 13:00 ... 18:00 missed
        assertEquals(5, firer.fire(dsl));
        assertEquals(List.of("schedule:all:2026-06-01T13:00:00Z", "schedule:all:2026-06-01T14:00:00Z",
                "schedule:all:2026-06-01T15:00:00Z", "schedule:all:2026-06-01T16:00:00Z",
                "schedule:all:2026-06-01T17:00:00Z"), keys("acme"));
        ScheduleInfo info = service.get(dsl, "acme", "all").orElseThrow();
        assertEquals(5, info.fired());
        assertEquals(1, info.skipped());
        assertEquals("queue_full", info.lastFire().outcome());
    }

    @Test
    void maxSchedulesAndTheMinimumIntervalAreCheckedWhenASheduleIsWritten() {
        dsl.execute("UPDATE tenants SET max_schedules = 2, min_schedule_interval_s = 3600 WHERE id = 'acme'");
        put("acme", "a", every("0 * * * *").build());
        put("acme", "b", every("0 0 * * *").build());
        assertThrows(ScheduleLimitException.class, () -> put("acme", "c", every("0 * * * *").build()));
        put("acme", "a", every("30 * * * *").build()); // replacing is not creating
        InvalidScheduleException e = assertThrows(InvalidScheduleException.class,
                () -> put("acme", "b", every("*/5 * * * *").build()));
        assertEquals("cron", e.errors().get(0).field());
        assertTrue(e.errors().get(0).message().contains("300 s"), e.errors().toString());
        // 00:00 and 00:30: 30 minutes apart once a day
        assertThrows(InvalidScheduleException.class, () -> put("acme", "b", every("0,30 0 * * *").build()));
        assertEquals(2, db.count("SELECT count(*) FROM schedules WHERE tenant_id = 'acme'"));
        assertEquals("0 0 * * *", dsl.fetchValue("SELECT cron FROM schedules WHERE name = 'b'"), "nothing written");
    }

    @Test
    void aTriggerRunsNowWithItsOwnStableKey() {
        put("acme", "t", every("0 0 * * *").paused(true).build());
        EnqueueResult first = service.trigger(dsl, "acme", "t").orElseThrow();
        EnqueueResult again = service.trigger(dsl, "acme", "t").orElseThrow();
        assertTrue(first.created());
        assertTrue(!again.created(), "the same second: the same job");
        assertEquals(first.job().getId(), again.job().getId());
        assertEquals("schedule:t:trigger-2026-06-01T12:00:10Z", first.job().getJobKey());
        clock.advance(Duration.ofSeconds(1));
        assertTrue(service.trigger(dsl, "acme", "t").orElseThrow().created());
        assertTrue(service.trigger(dsl, "acme", "nope").isEmpty());
        assertEquals(new ScheduleKeys.Origin("t", Instant.parse("2026-06-01T12:00:10Z"), true),
                ScheduleKeys.parse(first.job().getJobKey()).orElseThrow());
    }

    @Test
    void jobKeysNameTheirScheduleEvenWhenTheNameHasColons() {
        Instant at = Instant.parse("2026-12-01T02:00:00Z");
        assertEquals("schedule:nightly-report:2026-12-01T02:00:00Z", ScheduleKeys.fire("nightly-report", at));
        for (String name : List.of("a", "a:b", "x:trigger-2026-01-01T00:00:00Z", "reports.daily")) {
            assertEquals(new ScheduleKeys.Origin(name, at, false), ScheduleKeys.parse(ScheduleKeys.fire(name, at)).orElseThrow());
            assertEquals(new ScheduleKeys.Origin(name, at, true), ScheduleKeys.parse(ScheduleKeys.trigger(name, at)).orElseThrow());
        }
        assertTrue(ScheduleKeys.parse("invoice-42").isEmpty());
        assertTrue(ScheduleKeys.parse(null).isEmpty());
    }

    @Test
    void invalidDefinitionsNameEveryFieldAtFaultAndWriteNothing() {
        ScheduleDefinition bad = new ScheduleDefinition("61 * * * *", "Mars/Olympus",
                new ScheduleDefinition.JobTemplate("", null, null, 500, null, 0), "sometimes", 0, "maybe", null,
                "yesterday", null);
        InvalidScheduleException e = assertThrows(InvalidScheduleException.class, () -> put("acme", "x", bad));
        List<String> fields = e.errors().stream().map(dev.fairq.schema.FieldError::field).sorted().toList();
        assertEquals(List.of("backfill_limit", "cron", "job.max_attempts", "job.priority", "job.type", "missed_runs",
                "overlap", "start_at", "time_zone"), fields);
        assertThrows(InvalidScheduleException.class, () -> put("acme", "bad name!", every("* * * * *").build()));
        assertEquals(0, db.count("SELECT count(*) FROM schedules"));
    }
}

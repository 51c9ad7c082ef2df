package dev.fairq.scheduler;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Fire instants, with the daylight-saving rules of {@link CronSchedule}: a schedule that names its hours fires
 * once per matching local time (first occurrence; shifted past a gap), one whose hour field covers every hour
 * keeps its real-time rhythm. Dates are 2026 unless said: Europe/Berlin springs forward on 29 March (02:00 CET
 * becomes 03:00 CEST, 01:00Z) and falls back on 25 October (03:00 CEST becomes 02:00 CET, 01:00Z).
 */
class CronScheduleTest {
    static final String BERLIN = "Europe/Berlin";

    private static List<Instant> fires(String cron, String zone, String fromUtc, String toUtc) {
        return CronSchedule.of(cron, zone).fires(Instant.parse(fromUtc), Instant.parse(toUtc), 10_000);
    }

    private static List<Instant> utc(String... instants) {
        List<Instant> out = new ArrayList<>();
        for (String s : instants) out.add(Instant.parse(s));
        return out;
    }

    @Test
    void aDaily0230BerlinScheduleFiresOnceOnTheSpringForwardDayAt0330SummerTime() {
        assertEquals(utc("2026-03-28T01:30:00Z",   // 02:30 CET
                        "2026-03-29T01:30:00Z",    // 02:30 does not exist: 03:30 CEST
                        "2026-03-30T00:30:00Z"),   // 02:30 CEST
                fires("30 2 * * *", BERLIN, "2026-03-27T12:00:00Z", "2026-03-30T12:00:00Z"));
    }

    @Test
    void aDaily0230BerlinScheduleFiresOnceOnTheFallBackDayAtTheFirstOccurrence() {
        assertEquals(utc("2026-10-24T00:30:00Z",   // 02:30 CEST
                        "2026-10-25T00:30:00Z",    // 02:30 CEST, the first of the two 02:30s; not again at 02:30 CET
                        "2026-10-26T01:30:00Z"),   // 02:30 CET
                fires("30 2 * * *", BERLIN, "2026-10-23T12:00:00Z", "2026-10-26T12:00:00Z"));
        // asked from inside the repeated hour (02:35 CEST and 02:10 CET), the next fire is the next day's
        CronSchedule s = CronSchedule.of("30 2 * * *", BERLIN);
        assertEquals(Instant.parse("2026-10-26T01:30:00Z"), s.next(Instant.parse("2026-10-25T00:35:00Z")).orElseThrow());
        assertEquals(Instant.parse("2026-10-26T01:30:00Z"), s.next(Instant.parse("2026-10-25T01:10:00Z")).orElseThrow());
    }

    @Test
    void aScheduleOnEveryHourKeepsItsRealTimeRhythmThroughBothChanges() {
        // fall back: the repeated hour fires twice, every 15 minutes straight through
        List<Instant> fall = fires("*/15 * * * *", BERLIN, "2026-10-24T23:50:00Z", "2026-10-25T02:05:00Z");
        assertEquals(9, fall.size(), fall.toString());
        for (int i = 1; i < fall.size(); i++) assertEquals(Duration.ofMinutes(15), Duration.between(fall.get(i - 1), fall.get(i)));
        // spring forward: 02:00-02:59 does not exist; 01:45 CET is followed by 03:00 CEST, 15 minutes later
        assertEquals(utc("2026-03-29T00:45:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:15:00Z"),
                fires("*/15 * * * *", BERLIN, "2026-03-29T00:40:00Z", "2026-03-29T01:20:00Z"));
        assertTrue(CronSchedule.of("*/15 * * * *", BERLIN).everyHour());
        assertTrue(CronSchedule.of("0 0-23 * * *", BERLIN).everyHour());
        assertTrue(!CronSchedule.of("0 */2 * * *", BERLIN).everyHour());
    }

    @Test
    void namedHoursThatLandOnOneInstantFireOnce() {
        // 02:30 (shifted) and 03:30 CEST are one instant on the spring-forward day
        assertEquals(utc("2026-03-29T01:30:00Z", "2026-03-30T00:30:00Z", "2026-03-30T01:30:00Z"),
                fires("30 2,3 * * *", BERLIN, "2026-03-29T00:00:00Z", "2026-03-30T02:00:00Z"));
        // every minute of 02:xx: on the spring-forward day the 60 fires are 03:00-03:59 CEST, each once
        List<Instant> spring = fires("* 2 * * *", BERLIN, "2026-03-29T00:00:00Z", "2026-03-29T23:00:00Z");
        assertEquals(60, spring.size());
        assertEquals(Instant.parse("2026-03-29T01:00:00Z"), spring.get(0));
        // ... and on the fall-back day the first 02:xx only, 60 fires
        List<Instant> fall = fires("* 2 * * *", BERLIN, "2026-10-24T23:00:00Z", "2026-10-25T23:00:00Z");
        assertEquals(60, fall.size());
        assertEquals(Instant.parse("2026-10-25T00:59:00Z"), fall.get(59));
    }

    @Test
    void aZoneWhoseMidnightDoesNotExistStillFiresItsMidnightSchedule() {
        // Chile springs forward at 00:00 on 6 September 2026: the day starts at 01:00 -03:00
        assertEquals(utc("2026-09-05T04:00:00Z", "2026-09-06T04:00:00Z", "2026-09-07T03:00:00Z"),
                fires("0 0 * * *", "America/Santiago", "2026-09-05T00:00:00Z", "2026-09-07T12:00:00Z"));
    }

    @Test
    void previousIsTheInverseOfNextAcrossBothChanges() {
        for (String cron : List.of("30 2 * * *", "*/20 * * * *", "* 2 * * *", "0,30 1-3 * * *", "15 2,3 * * *", "0 0 * * *")) {
            CronSchedule s = CronSchedule.of(cron, BERLIN);
            for (String[] window : new String[][]{{"2026-03-28T20:00:00Z", "2026-03-29T06:00:00Z"},
                    {"2026-10-24T20:00:00Z", "2026-10-25T06:00:00Z"}}) {
                List<Instant> f = s.fires(Instant.parse(window[0]), Instant.parse(window[1]), 10_000);
                for (int i = 1; i < f.size(); i++) {
                    assertEquals(f.get(i - 1), s.previous(f.get(i)).orElseThrow(), cron + " before " + f.get(i));
                    assertTrue(f.get(i).isAfter(f.get(i - 1)), cron + ": fires strictly increase");
                }
                // a fire is found again from just before it
                for (Instant x : f) assertEquals(x, s.firstAtOrAfter(x).orElseThrow());
            }
        }
    }

    @Test
    void daysOfTheMonthThatSomeMonthsLackAreSkippedNotMoved() {
        // the 31st fires only in the seven months that have one; never on the 30th instead
        List<Instant> f = fires("0 12 31 * *", "UTC", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z");
        assertEquals(7, f.size());
        for (Instant x : f) assertEquals(31, x.atZone(ZoneId.of("UTC")).getDayOfMonth());
        // "the end of each month" in five fields: midnight of the 1st, in the schedule's zone
        assertEquals(utc("2026-01-31T23:00:00Z", "2026-02-28T23:00:00Z", "2026-03-31T22:00:00Z"),
                fires("@monthly", BERLIN, "2026-01-15T00:00:00Z", "2026-04-15T00:00:00Z"));
    }

    @Test
    void leapDaysFireEveryFourYearsAndDayOfWeekWidensARestrictedDayOfMonth() {
        assertEquals(utc("2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"),
                fires("0 0 29 2 *", "UTC", "2026-01-01T00:00:00Z", "2035-01-01T00:00:00Z"));
        // Vixie's rule: both day fields restricted means either: the 13th, or any Friday
        List<Instant> f = fires("0 0 13 * 5", "UTC", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z");
        assertEquals(utc("2026-01-02T00:00:00Z", "2026-01-09T00:00:00Z", "2026-01-13T00:00:00Z",
                "2026-01-16T00:00:00Z", "2026-01-23T00:00:00Z", "2026-01-30T00:00:00Z"), f);
    }

    /**
     * Vixie cron and cronie read a day field that starts with '*' as unrestricted (DOM_STAR, DOW_STAR): then a day
     * must match both fields. cron-utils counted '*' + '/2' as restricted and fired on either.
     */
    @Test
    void aDayFieldStartingWithAStarIsUnrestrictedAsInVixieCron() {
        // January 2026: Mondays are the 5th, 12th, 19th, 26th; the odd Mondays the 5th and 19th
        assertEquals(utc("2026-01-05T00:00:00Z", "2026-01-19T00:00:00Z"),
                fires("0 0 */2 * MON", "UTC", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"));
        // the 1st when it is a Sunday, Tuesday, Thursday or Saturday: February (Sunday) and March (Sunday), not January
        // (its 1st is a Thursday but before the window) nor April (Wednesday)
        assertEquals(utc("2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"),
                fires("0 0 1 * */2", "UTC", "2026-01-02T00:00:00Z", "2026-05-01T00:00:00Z"));
        // a field that does not start with '*' is restricted, even when it covers every day: either
        assertEquals(15 + 2, fires("0 0 1-31/2 * MON", "UTC", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z").size(),
                "odd days (the 3rd to the 31st) or Mondays (the 12th and 26th are even)");
        assertEquals(31, fires("0 0 1-31 * MON", "UTC", "2025-12-31T23:00:00Z", "2026-01-31T23:00:00Z").size());
        // a plain '*' is as before: the other field alone
        assertEquals(4, fires("0 0 * * MON", "UTC", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z").size());
        // and the walk back agrees
        assertEquals(Instant.parse("2026-01-05T00:00:00Z"),
                CronSchedule.of("0 0 */2 * MON", "UTC").previous(Instant.parse("2026-01-19T00:00:00Z")).orElseThrow());
    }

    @Test
    void firesStopBeforeTheEnd() {
        CronSchedule s = CronSchedule.of("0 * * * *", "UTC");
        assertEquals(utc("2026-05-01T01:00:00Z", "2026-05-01T02:00:00Z"),
                s.fires(Instant.parse("2026-05-01T00:00:00Z"), Instant.parse("2026-05-01T03:00:00Z"), 10));
        assertEquals(List.of(), s.fires(Instant.parse("2026-05-01T00:00:00Z"), Instant.parse("2026-05-01T01:00:00Z"), 10));
    }

    @Test
    void macrosStandForTheirFiveFields() {
        Instant from = Instant.parse("2026-06-10T10:10:00Z");
        assertEquals(Instant.parse("2026-06-10T11:00:00Z"), CronSchedule.of("@hourly", "UTC").next(from).orElseThrow());
        assertEquals(Instant.parse("2026-06-11T00:00:00Z"), CronSchedule.of("@daily", "UTC").next(from).orElseThrow());
        assertEquals(Instant.parse("2026-06-14T00:00:00Z"), CronSchedule.of("@weekly", "UTC").next(from).orElseThrow()); // a Sunday
        assertEquals(Instant.parse("2026-07-01T00:00:00Z"), CronSchedule.of("@monthly", "UTC").next(from).orElseThrow());
        assertEquals(Instant.parse("2027-01-01T00:00:00Z"), CronSchedule.of("@yearly", "UTC").next(from).orElseThrow());
    }

    @Test
    void theShortestIntervalIsFoundAcrossDays() {
        Instant from = Instant.parse("2026-06-10T00:00:00Z");
        assertEquals(Optional.of(Duration.ofMinutes(1)),
                CronSchedule.of("* * * * *", "UTC").shortestInterval(from, 100, Duration.ofDays(2)));
        // 00:00 and 23:00: 23 hours within a day, one hour across midnight
        assertEquals(Optional.of(Duration.ofHours(1)),
                CronSchedule.of("0 0,23 * * *", "UTC").shortestInterval(from, 100, Duration.ofDays(3)));
        // every minute of 29 February, written 449 days before the next one: the span counts from the first fire
        // (counted from now it held no fire, and the expression passed a limit of an hour)
        Instant early = Instant.parse("2026-12-07T00:00:00Z");
        assertEquals(Optional.of(Duration.ofMinutes(1)),
                CronSchedule.of("* * 29 2 *", "UTC").shortestInterval(early, 2000, Duration.ofDays(400)));
        assertEquals(Optional.of(Duration.ofMinutes(1)),
                CronSchedule.of("* * 29 2 *", "Europe/Berlin").shortestInterval(early, 2000, Duration.ofDays(400)));
        // once every four years: the gap to the next, above any limit (366 days at most)
        assertEquals(Optional.of(Duration.ofDays(1461)), CronSchedule.of("0 0 29 2 *", "UTC").shortestInterval(early, 2000, Duration.ofDays(400)));
    }

    /**
     * How often an expression fires is the expression's own: a change of the clocks does not make Berlin's @daily
     * "23 hours" (a limit of 86,400 s refused it), nor does it hide a gap that is short on every day.
     */
    @Test
    void theShortestIntervalIsTheExpressionsNotTheClockChanges() {
        Instant spring = Instant.parse("2027-03-20T00:00:00Z"); // Berlin's clocks go forward on 2027-03-28
        for (String zone : List.of("Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "UTC")) {
            assertEquals(Optional.of(Duration.ofDays(1)), CronSchedule.of("@daily", zone).shortestInterval(spring, 100, Duration.ofDays(400)), zone);
            assertEquals(Optional.of(Duration.ofDays(1)), CronSchedule.of("30 2 * * *", zone).shortestInterval(spring, 100, Duration.ofDays(400)), zone);
            assertEquals(Optional.of(Duration.ofDays(7)), CronSchedule.of("@weekly", zone).shortestInterval(spring, 100, Duration.ofDays(400)), zone);
            assertEquals(Optional.of(Duration.ofHours(12)), CronSchedule.of("0 */12 * * *", zone).shortestInterval(spring, 100, Duration.ofDays(400)), zone);
            assertEquals(Optional.of(Duration.ofMinutes(30)), CronSchedule.of("*/30 * * * *", zone).shortestInterval(spring, 2000, Duration.ofDays(400)), zone);
        }
        // the real gap in Berlin across the spring change is 23 h: what the limit used to see
        List<Instant> fires = CronSchedule.of("@daily", "Europe/Berlin").fires(Instant.parse("2027-03-27T12:00:00Z"), null, 2);
        assertEquals(Duration.ofHours(23), Duration.between(fires.get(0), fires.get(1)));
    }

    @Test
    void invalidExpressionsAndZonesNameTheirFieldAndSayWhatIsWrong() {
        assertInvalid("61 * * * *", "UTC", "cron", "61");
        assertInvalid("* * * * * *", "UTC", "cron", "five fields");
        assertInvalid("@reboot", "UTC", "cron", "unknown macro");
        assertInvalid("0 0 30 2 *", "UTC", "cron", "never fires");
        assertInvalid("", "UTC", "cron", "required");
        assertInvalid("0 0 * * *", "Europe/Berln", "time_zone", "IANA");
        assertInvalid("0 0 * * *", "+02:00", "time_zone", "offset");
        assertInvalid("0 0 * * *", "europe/berlin", "time_zone", "did you mean Europe/Berlin");
        assertInvalid("0 0 * * *", null, "time_zone", "required");
    }

    private static void assertInvalid(String cron, String zone, String field, String text) {
        CronSchedule.InvalidCronException e = assertThrows(CronSchedule.InvalidCronException.class,
                () -> CronSchedule.of(cron, zone));
        assertEquals(field, e.field());
        assertTrue(e.getMessage().contains(text), e.getMessage());
    }

    @Test
    void aFireIsAlwaysAMatchingLocalTimeAwayFromOffsetChanges() {
        // a plain summer week: every fire of a named-hours and an every-hour schedule is its local time
        for (String cron : List.of("30 2 * * 1-5", "*/7 9-17 * * *", "5 * * * *")) {
            CronSchedule s = CronSchedule.of(cron, BERLIN);
            for (Instant x : s.fires(Instant.parse("2026-07-06T00:00:00Z"), Instant.parse("2026-07-13T00:00:00Z"), 10_000)) {
                ZonedDateTime local = x.atZone(ZoneId.of(BERLIN));
                assertEquals(0, local.getSecond());
                if (cron.startsWith("30 2")) assertEquals(2, local.getHour());
                if (cron.startsWith("5 ")) assertEquals(5, local.getMinute());
            }
        }
    }
}

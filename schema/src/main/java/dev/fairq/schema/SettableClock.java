package dev.fairq.schema;

import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;

/**
 * A clock that moves only when told to, shipped so that embedders can test their handlers and schedules the
 * way fairq tests itself (db-scheduler's {@code SettableClock}). Every statement run with it sees its time as
 * {@code now()}, and its monotonic time moves with it, so a lease, a backoff or a token bucket can be
 * advanced past in a test without waiting. Thread-safe.
 */
public final class SettableClock implements QueueClock {
    private Instant now;
    private long nanos;

    /** Starts at the current time, truncated to microseconds (what PostgreSQL stores). */
    public SettableClock() {
        this(Instant.now());
    }

    public SettableClock(Instant start) {
        this.now = start.truncatedTo(ChronoUnit.MICROS);
        this.nanos = 1_000_000_000L; // arbitrary origin, positive so that "never" (Long.MIN_VALUE) stays far away
    }

    public synchronized SettableClock advance(Duration d) {
        if (d.isNegative()) throw new IllegalArgumentException("a monotonic clock does not go back: " + d);
        now = now.plus(d);
        nanos += d.toNanos();
        return this;
    }

    /** Moves to a later instant (the monotonic time moves by the same amount). */
    public synchronized SettableClock set(Instant later) {
        return advance(Duration.between(now, later.truncatedTo(ChronoUnit.MICROS)));
    }

    @Override
    public synchronized OffsetDateTime sqlNow() {
        return now.atOffset(ZoneOffset.UTC);
    }

    @Override
    public synchronized long nanoTime() {
        return nanos;
    }

    @Override
    public synchronized Instant instant() {
        return now;
    }

    @Override
    public synchronized String toString() {
        return "SettableClock[" + now + "]";
    }
}

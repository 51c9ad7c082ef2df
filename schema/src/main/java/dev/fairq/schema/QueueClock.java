package dev.fairq.schema;

import java.time.Instant;
import java.time.OffsetDateTime;

/**
 * The one clock of the queue, taken by the store, the scheduler and the worker as a dependency.
 *
 * <p>Production uses {@link #SYSTEM}: statements keep the database's {@code now()} (one clock for every
 * machine, so skew cannot rescue a lease or start a job early) and intervals in the JVM use
 * {@link System#nanoTime()}. A {@link SettableClock} replaces both, so tests (fairq's and an embedder's) move
 * time instead of waiting for it.
 */
public interface QueueClock {
    /** What statements use as now: null means the database's own {@code now()}. See {@link NamedSql}. */
    OffsetDateTime sqlNow();

    /** Monotonic nanoseconds, for intervals measured in this JVM (token buckets, a lease's safety margin). */
    long nanoTime();

    /** Wall-clock time in this JVM (when the database's clock is not at hand). */
    Instant instant();

    QueueClock SYSTEM = new QueueClock() {
        @Override
        public OffsetDateTime sqlNow() {
            return null;
        }

        @Override
        public long nanoTime() {
            return System.nanoTime();
        }

        @Override
        public Instant instant() {
            return Instant.now();
        }

        @Override
        public String toString() {
            return "QueueClock.SYSTEM";
        }
    };
}

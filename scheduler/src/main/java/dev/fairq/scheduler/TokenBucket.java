package dev.fairq.scheduler;

import java.util.function.LongSupplier;

/**
 * A token bucket: {@code burst} tokens at most, refilled continuously at {@code rate} per second, one token
 * per admitted job. Over any window of t seconds a tenant is admitted at most {@code burst + rate * t} jobs.
 *
 * <p>Why not resilience4j's {@code RateLimiter}: it refills {@code limitForPeriod} permits at once at each
 * period boundary, so a burst spent just before a boundary and another just after it admits
 * {@code 2 * burst} jobs within a moment, which breaks the bound above; and it reads the system clock, which
 * the scheduler's deterministic tests cannot drive. A continuous bucket is a dozen lines and keeps the bound
 * exactly. The clock is injected ({@code nanoTime}); only the active scheduler takes tokens.
 */
public final class TokenBucket {
    private static final double EPSILON = 1e-9;
    private final LongSupplier nanoTime;
    private double ratePerSecond;
    private double burst;
    private double tokens;
    private long lastRefill;

    public TokenBucket(double ratePerSecond, int burst, LongSupplier nanoTime) {
        this.nanoTime = nanoTime;
        this.ratePerSecond = ratePerSecond;
        this.burst = burst;
        this.tokens = burst;
        this.lastRefill = nanoTime.getAsLong();
    }

    /** Whole tokens available now. */
    public synchronized int available() {
        refill();
        return (int) Math.floor(tokens + EPSILON);
    }

    /** Takes n tokens; the caller checked {@link #available()} first. */
    public synchronized void take(int n) {
        refill();
        if (n > Math.floor(tokens + EPSILON)) throw new IllegalStateException("only " + tokens + " tokens, asked " + n);
        tokens -= n;
    }

    /** Nanoseconds until one whole token is available (0 when one is). */
    public synchronized long nanosUntilNextToken() {
        refill();
        if (tokens + EPSILON >= 1) return 0;
        return (long) Math.ceil((1 - tokens) / ratePerSecond * 1e9);
    }

    /** A live change of limits: the tokens already earned are kept, up to the new burst. */
    public synchronized void reconfigure(double ratePerSecond, int burst) {
        refill();
        this.ratePerSecond = ratePerSecond;
        this.burst = burst;
        this.tokens = Math.min(tokens, burst);
    }

    public synchronized double ratePerSecond() {
        return ratePerSecond;
    }

    private void refill() {
        long now = nanoTime.getAsLong();
        long elapsed = now - lastRefill;
        if (elapsed > 0) {
            tokens = Math.min(burst, tokens + elapsed / 1e9 * ratePerSecond);
            lastRefill = now;
        }
    }
}

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
 *
 * <p>A token can also be reserved for an admission granted in advance (see Scheduler, admission grants):
 * it leaves the bucket at once, and while it is reserved the bucket refills only up to {@code burst} minus
 * the reserved tokens, so tokens in the bucket plus reserved ones never exceed {@code burst} and the bound
 * above holds for starts, whenever the grant is used. An unused reservation goes back into the bucket.
 */
public final class TokenBucket {
    private static final double EPSILON = 1e-9;
    private final LongSupplier nanoTime;
    private double ratePerSecond;
    private double burst;
    private double tokens;
    private int reserved;
    private long lastRefill;

    public TokenBucket(double ratePerSecond, int burst, LongSupplier nanoTime) {
        this.nanoTime = nanoTime;
        this.ratePerSecond = ratePerSecond;
        this.burst = burst;
        this.tokens = burst;
        this.lastRefill = nanoTime.getAsLong();
    }

    /** Whole tokens available now (0 while an adopted reservation is being paid back). */
    public synchronized int available() {
        refill();
        return (int) Math.max(0, Math.floor(tokens + EPSILON));
    }

    /** Takes n tokens; the caller checked {@link #available()} first. */
    public synchronized void take(int n) {
        refill();
        if (n > Math.floor(tokens + EPSILON)) throw new IllegalStateException("only " + tokens + " tokens, asked " + n);
        tokens -= n;
    }

    /**
     * Reserves one token for a grant. The caller checked {@link #available()} first, except when adopting a
     * grant it did not make (a new leader): then the bucket may go below zero, which only delays admissions.
     */
    public synchronized void reserve() {
        refill();
        tokens -= 1;
        reserved++;
    }

    /** A reserved token was used (the grant admitted a job), or not (the grant was taken back: refund). */
    public synchronized void settleReservation(boolean used) {
        refill();
        if (reserved == 0) return;
        reserved--;
        if (!used) tokens = Math.min(burst - reserved, tokens + 1);
    }

    /** Full, with nothing reserved: a new bucket would be the same (a forgotten tenant loses nothing). */
    public synchronized boolean isFull() {
        refill();
        return reserved == 0 && tokens + EPSILON >= burst;
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
        this.tokens = Math.min(tokens, burst - reserved);
    }

    public synchronized double ratePerSecond() {
        return ratePerSecond;
    }

    private void refill() {
        long now = nanoTime.getAsLong();
        long elapsed = now - lastRefill;
        if (elapsed > 0) {
            tokens = Math.max(tokens, Math.min(burst - reserved, tokens + elapsed / 1e9 * ratePerSecond));
            lastRefill = now;
        }
    }
}

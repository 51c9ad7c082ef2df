package dev.fairq.api;

import dev.fairq.scheduler.TokenBucket;

import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * The per-tenant API request limit of this process: a token bucket per tenant ({@code api_rate_per_second},
 * {@code api_burst}), the scheduler's continuous {@link TokenBucket}. The limits come with the key (ApiKeyStore joins the
 * tenant's row and remembers it for a second at most; a change through this process forgets it), so a change applies
 * at the tenant's next request, within a second when another process made it, without a refresh loop.
 *
 * <p>Memory follows the tenants that made requests lately: a bucket that has refilled is the same as no bucket, so
 * once a minute the full ones are dropped. Several API processes each keep their own buckets (api/README.md).
 */
final class ApiRateLimiter {
    /** How often full buckets are forgotten; a sweep costs one pass over the buckets of this process. */
    static final long SWEEP_NANOS = 60_000_000_000L;

    private final LongSupplier nanoTime;
    private final ConcurrentHashMap<String, Bucket> buckets = new ConcurrentHashMap<>();
    private volatile long nextSweep;

    ApiRateLimiter(LongSupplier nanoTime) {
        this.nanoTime = nanoTime;
        this.nextSweep = nanoTime.getAsLong() + SWEEP_NANOS;
    }

    private static final class Bucket {
        final TokenBucket tokens;
        double rate;
        int burst;

        Bucket(double rate, int burst, LongSupplier nanoTime) {
            this.tokens = new TokenBucket(rate, burst, nanoTime);
            this.rate = rate;
            this.burst = burst;
        }
    }

    /** Takes a token for one request: 0 when it may go on, else the nanoseconds until the next token. */
    long acquire(String tenant, double ratePerSecond, int burst) {
        sweepIfDue();
        Bucket b = buckets.computeIfAbsent(tenant, t -> new Bucket(ratePerSecond, burst, nanoTime));
        synchronized (b) {
            if (b.rate != ratePerSecond || b.burst != burst) { // a live change: the tokens earned are kept, up to the burst
                b.tokens.reconfigure(ratePerSecond, burst);
                b.rate = ratePerSecond;
                b.burst = burst;
            }
            if (b.tokens.available() >= 1) {
                b.tokens.take(1);
                return 0;
            }
            return Math.max(1, b.tokens.nanosUntilNextToken());
        }
    }

    /** Buckets held now (tenants with requests in the last minute or so). */
    int size() {
        return buckets.size();
    }

    private void sweepIfDue() {
        long now = nanoTime.getAsLong();
        if (now - nextSweep < 0) return;
        synchronized (this) {
            if (now - nextSweep < 0) return;
            nextSweep = now + SWEEP_NANOS;
        }
        buckets.forEach((tenant, b) -> {
            synchronized (b) {
                if (b.tokens.isFull()) buckets.remove(tenant, b);
            }
        });
    }
}

package dev.fairq.worker;

import java.time.Duration;
import java.util.function.DoubleSupplier;

/**
 * Exponential backoff with jitter. The ceiling for attempt n (1-based) is
 * {@code min(max, base * multiplier^(n-1))}; the delay is drawn uniformly from
 * {@code [ceiling * (1 - jitter), ceiling]}. Jitter spreads retries of jobs that failed together (an outage)
 * so they do not come back as one wave; the lower bound keeps the backoff meaningful.
 *
 * <p>Defaults: base 1 s, multiplier 2, max 1 h, jitter 0.5, so attempt 1 retries after 0.5-1 s, attempt 5
 * after 8-16 s, attempt 13 and later after 30-60 min.
 */
public record RetryPolicy(Duration base, double multiplier, Duration max, double jitter) {
    public static final RetryPolicy DEFAULT = new RetryPolicy(Duration.ofSeconds(1), 2.0, Duration.ofHours(1), 0.5);

    public RetryPolicy {
        if (base.isNegative() || base.isZero()) throw new IllegalArgumentException("base must be positive");
        if (multiplier < 1.0) throw new IllegalArgumentException("multiplier must be >= 1");
        if (max.compareTo(base) < 0) throw new IllegalArgumentException("max must be >= base");
        if (jitter < 0 || jitter > 1) throw new IllegalArgumentException("jitter must be within [0, 1]");
    }

    /** The ceiling of the delay after the given failed attempt (1-based). */
    public long ceilingMillis(int attempt) {
        double ceiling = base.toMillis() * Math.pow(multiplier, Math.max(0, attempt - 1));
        return (long) Math.min(max.toMillis(), ceiling);
    }

    /** @param random a source of uniform values in [0, 1) */
    public long delayMillis(int attempt, DoubleSupplier random) {
        long ceiling = ceilingMillis(attempt);
        return ceiling - (long) (ceiling * jitter * random.getAsDouble());
    }
}

package dev.fairq.bench;

import java.util.concurrent.atomic.AtomicReference;

/**
 * A thread that makes a benchmark's load (a producer, a background of other tenants, a probe) and whose failure
 * fails the run: {@link #join()} throws what ended it. A plain thread that threw only printed a stack trace on stderr
 * and died, and the run went on to print figures "under load" measured on a platform the load had left.
 */
final class LoadThread {
    private final Thread thread;
    private final AtomicReference<Throwable> failure = new AtomicReference<>();

    LoadThread(String name, Runnable body) {
        thread = new Thread(() -> {
            try {
                body.run();
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
            }
        }, name);
        thread.setDaemon(true); // a run that throws elsewhere leaves no thread behind to keep the JVM up
    }

    LoadThread start() {
        thread.start();
        return this;
    }

    /** Waits for the thread to end; throws if it ended by an exception. */
    void join() throws InterruptedException {
        thread.join();
        Throwable t = failure.get();
        if (t != null) throw new IllegalStateException(thread.getName() + " failed, so its load stopped: " + t, t);
    }
}

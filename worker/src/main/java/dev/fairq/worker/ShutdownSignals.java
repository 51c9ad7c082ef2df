package dev.fairq.worker;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import sun.misc.Signal;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * SIGTERM (and SIGINT) as an orderly stop that exits 0. A JVM shutdown hook would run the same cleanup but
 * still exit with 143, which orchestrators read as a crash; catching the signal lets the process finish
 * its jobs and report a clean exit.
 */
public final class ShutdownSignals {
    private static final Logger log = LoggerFactory.getLogger(ShutdownSignals.class);

    private ShutdownSignals() {}

    /** On the first TERM or INT: run {@code stop} on a fresh thread, then exit 0 (1 if stop threw). */
    public static void onTerminate(Runnable stop) {
        AtomicBoolean once = new AtomicBoolean();
        for (String name : new String[]{"TERM", "INT"}) {
            Signal.handle(new Signal(name), signal -> {
                if (!once.compareAndSet(false, true)) return;
                Thread stopper = new Thread(() -> {
                    log.info("SIG{} received: stopping gracefully", name);
                    int code = 0;
                    try {
                        stop.run();
                    } catch (RuntimeException e) {
                        log.error("graceful stop failed", e);
                        code = 1;
                    }
                    System.exit(code);
                }, "fairq-shutdown");
                // The signal handler's thread is a daemon and a new thread inherits that; a daemon stopper
                // would let the JVM exit (code 0, mid-stop) as soon as the last worker thread ended.
                stopper.setDaemon(false);
                stopper.start();
            });
        }
    }
}

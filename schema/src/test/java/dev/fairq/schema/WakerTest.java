package dev.fairq.schema;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The waker: the asking thread never waits for a send, and no wake asked for is lost, only folded. */
class WakerTest {

    @Test
    void aWakeAskedForDuringASendIsFollowedByOneMoreSendStartedAfterIt() throws Exception {
        CountDownLatch firstStarted = new CountDownLatch(1), releaseFirst = new CountDownLatch(1);
        AtomicInteger sends = new AtomicInteger();
        List<Long> sendStarts = new CopyOnWriteArrayList<>();
        try (Waker waker = new Waker("test-waker", () -> {
            sendStarts.add(System.nanoTime());
            if (sends.incrementAndGet() == 1) {
                firstStarted.countDown();
                try {
                    releaseFirst.await(10, TimeUnit.SECONDS); // a NOTIFY queued on the notification lock
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        })) {
            waker.wake();
            assertTrue(firstStarted.await(10, TimeUnit.SECONDS));
            // while the first send hangs, three more wakes: each returns at once and all fold into one send
            long asked = System.nanoTime();
            for (int i = 0; i < 3; i++) waker.wake();
            assertTrue(System.nanoTime() - asked < TimeUnit.SECONDS.toNanos(1), "wake() waited for the hanging send");
            releaseFirst.countDown();
            await().atMost(Duration.ofSeconds(10)).until(() -> sends.get() == 2);
            assertTrue(sendStarts.get(1) > asked, "the folded wake was sent before it was asked for");
            // and nothing more: the waker is idle again, and the next wake is sent on its own
            await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(5)).until(() -> sends.get() == 2);
            waker.wake();
            await().atMost(Duration.ofSeconds(10)).until(() -> sends.get() == 3);
        }
    }

    @Test
    void wakeNowSendsOnTheCallersThreadUnlessASendIsInFlightWhichItJoins() throws Exception {
        List<Thread> senders = new CopyOnWriteArrayList<>();
        CountDownLatch hang = new CountDownLatch(1), hanging = new CountDownLatch(1);
        try (Waker waker = new Waker("test-waker", () -> {
            senders.add(Thread.currentThread());
            if (senders.size() == 2) {
                hanging.countDown();
                try {
                    hang.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        })) {
            waker.wakeNow();
            assertEquals(List.of(Thread.currentThread()), senders, "an idle waker sends on the caller's thread");
            Thread other = new Thread(waker::wakeNow);
            other.start();
            assertTrue(hanging.await(10, TimeUnit.SECONDS));
            long asked = System.nanoTime();
            waker.wakeNow(); // another thread's send hangs: this one must not wait for it
            assertTrue(System.nanoTime() - asked < TimeUnit.SECONDS.toNanos(1), "wakeNow() waited for another's send");
            assertEquals(2, senders.size());
            hang.countDown();
            other.join(10_000);
            await().atMost(Duration.ofSeconds(10)).until(() -> senders.size() == 3);
            assertEquals("test-waker", senders.get(2).getName(), "the folded wake goes out from the waker's thread");
        }
    }

    @Test
    void aFailedSendIsNotTheEndOfTheWaker() {
        AtomicInteger attempts = new AtomicInteger();
        try (Waker waker = new Waker("test-waker", () -> {
            if (attempts.incrementAndGet() == 1) throw new IllegalStateException("connection lost");
        })) {
            waker.wake();
            await().atMost(Duration.ofSeconds(10)).until(() -> attempts.get() == 1);
            await().atMost(Duration.ofSeconds(10)).until(() -> {
                waker.wake();
                return attempts.get() >= 2;
            });
        }
    }
}

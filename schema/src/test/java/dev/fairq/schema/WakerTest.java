package dev.fairq.schema;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The waker: the asking thread never waits for a send, and no wake asked for is lost, only folded. */
@Timeout(60) // a wake() that waited for a hanging send would hang the test: fail it instead
class WakerTest {

    @Test
    void aWakeAskedForDuringASendIsFollowedByOneMoreSendStartedAfterIt() throws Exception {
        CountDownLatch firstStarted = new CountDownLatch(1), releaseFirst = new CountDownLatch(1);
        AtomicBoolean firstFinished = new AtomicBoolean();
        List<String> events = new CopyOnWriteArrayList<>();
        try (Waker waker = new Waker("test-waker", () -> {
            events.add("send");
            if (events.stream().filter("send"::equals).count() == 1) {
                firstStarted.countDown();
                try {
                    releaseFirst.await(); // a NOTIFY queued on the notification lock, until the test lets it go
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                firstFinished.set(true);
            }
        })) {
            waker.wake();
            assertTrue(firstStarted.await(10, TimeUnit.SECONDS));
            // while the first send hangs, three more wakes: each returns while it still hangs (a wake() that waited
            // for it would never return: the send goes on only when the test releases it below)
            for (int i = 0; i < 3; i++) {
                waker.wake();
                events.add("asked");
            }
            assertFalse(firstFinished.get());
            releaseFirst.countDown();
            await().atMost(Duration.ofSeconds(10)).until(() -> events.stream().filter("send"::equals).count() == 2);
            assertEquals(List.of("send", "asked", "asked", "asked", "send"), events,
                    "the three wakes fold into one send, sent after they were asked for");
            // and nothing more: the waker is idle again, and the next wake is sent on its own
            await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(5)).until(() -> events.size() == 5);
            waker.wake();
            await().atMost(Duration.ofSeconds(10)).until(() -> events.size() == 6);
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
                    hang.await();
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
            waker.wakeNow(); // another thread's send hangs until released below: this one must not wait for it
            assertEquals(2, senders.size(), "it joined the send in flight instead of sending itself");
            assertTrue(other.isAlive(), "returned while the other send still hangs");
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

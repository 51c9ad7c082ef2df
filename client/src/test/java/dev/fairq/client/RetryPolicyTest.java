package dev.fairq.client;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import org.junit.jupiter.api.Test;

import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the client resends when no answer comes (a port nothing listens on): reads and keyed submissions, with
 * a doubling backoff; a submission without job_key never, since the lost answer may have been a created job.
 */
class RetryPolicyTest {
    private static String deadUrl() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        } // closed: connections are refused
        return "http://127.0.0.1:" + port;
    }

    private static FairqClient client(String url, List<Duration> waits) {
        return FairqClient.builder(url).token("t").timeout(Duration.ofSeconds(5))
                .retries(RetryPolicy.attempts(3).withSleeper(waits::add)).build();
    }

    @Test
    void aSubmissionWithoutJobKeyIsSentOnce() throws Exception {
        List<Duration> waits = new CopyOnWriteArrayList<>();
        FairqException.ConnectionException e = assertThrows(FairqException.ConnectionException.class,
                () -> client(deadUrl(), waits).submit(NewJob.of("t", JsonNodeFactory.instance.objectNode())));
        assertEquals(0, e.status());
        assertTrue(e.getMessage().startsWith("cannot reach fairq at http://127.0.0.1:"), e.getMessage());
        assertEquals(List.of(), waits, "not resent: the first try may have created the job");
    }

    @Test
    void aKeyedSubmissionAndAReadAreResentWithBackoff() throws Exception {
        List<Duration> waits = new CopyOnWriteArrayList<>();
        FairqClient c = client(deadUrl(), waits);
        assertThrows(FairqException.ConnectionException.class,
                () -> c.submit(NewJob.of("t", JsonNodeFactory.instance.objectNode()).jobKey("k")));
        assertEquals(List.of(Duration.ofMillis(500), Duration.ofSeconds(1)), waits, "three tries, two waits");
        waits.clear();
        assertThrows(FairqException.ConnectionException.class, c::stats);
        assertEquals(2, waits.size());
        waits.clear();
        // a batch is resent only when every job has a key
        assertThrows(FairqException.ConnectionException.class, () -> c.submitBatch(List.of(
                NewJob.of("t", JsonNodeFactory.instance.objectNode()).jobKey("a"), NewJob.of("t", JsonNodeFactory.instance.objectNode()))));
        assertEquals(List.of(), waits);
    }

    /** A name that does not resolve (.invalid never does, RFC 6761) had been reported as "connection refused". */
    @Test
    void anUnknownHostIsSaidToBeOne() {
        FairqException.ConnectionException e = assertThrows(FairqException.ConnectionException.class,
                () -> FairqClient.builder("http://fairq.invalid:8080").token("t").build().stats());
        assertEquals("cannot reach fairq at http://fairq.invalid:8080: unknown host fairq.invalid", e.getMessage());
    }

    @Test
    void noRetriesByDefaultAndABadUrlIsRefusedAtOnce() {
        assertThrows(IllegalArgumentException.class, () -> FairqClient.builder("localhost:8080").build());
        // another scheme had been taken, and every call was then a ConnectionException "invalid URI scheme ftp" (resent)
        assertThrows(IllegalArgumentException.class, () -> FairqClient.builder("ftp://localhost:8080").build());
        assertThrows(IllegalArgumentException.class, () -> FairqClient.builder("file:///tmp/fairq").build());
        FairqClient.builder("HTTPS://fairq.example.com").build();
        assertThrows(IllegalArgumentException.class, () -> RetryPolicy.attempts(0));
        assertThrows(IllegalArgumentException.class, () -> new RetryPolicy(3, Duration.ofMillis(-1), RetryPolicy.Sleeper.THREAD));
        assertThrows(IllegalArgumentException.class, () -> new RetryPolicy(3, null, RetryPolicy.Sleeper.THREAD));
        assertEquals(1, RetryPolicy.NONE.maxAttempts());
    }

    /**
     * No wait is longer than maxWait: the doubling backoff stops there (attempts(20) had waited three days before
     * its last try), and a server's Retry-After longer than it is not slept through: the 429 is thrown at once,
     * with its retryAfter, after one request.
     */
    @Test
    void waitsStopAtMaxWaitAndALongerRetryAfterIsTheCallersToSchedule() throws Exception {
        List<Duration> waits = new CopyOnWriteArrayList<>();
        FairqClient dead = FairqClient.builder(deadUrl()).token("t").timeout(Duration.ofSeconds(5))
                .retries(RetryPolicy.attempts(6).withMaxWait(Duration.ofSeconds(2)).withSleeper(waits::add)).build();
        assertThrows(FairqException.ConnectionException.class, dead::stats);
        assertEquals(List.of(Duration.ofMillis(500), Duration.ofSeconds(1), Duration.ofSeconds(2), Duration.ofSeconds(2),
                Duration.ofSeconds(2)), waits);
        waits.clear();
        FairqClient slowStart = FairqClient.builder(deadUrl()).token("t").timeout(Duration.ofSeconds(5))
                .retries(new RetryPolicy(3, Duration.ofMinutes(5), waits::add)).build();
        assertThrows(FairqException.ConnectionException.class, slowStart::stats);
        assertEquals(List.of(RetryPolicy.DEFAULT_MAX_WAIT, RetryPolicy.DEFAULT_MAX_WAIT), waits, "a backoff over maxWait starts at it");

        java.util.concurrent.atomic.AtomicInteger requests = new java.util.concurrent.atomic.AtomicInteger();
        com.sun.net.httpserver.HttpServer full = com.sun.net.httpserver.HttpServer.create(
                new java.net.InetSocketAddress("127.0.0.1", 0), 0);
        full.createContext("/", ex -> {
            requests.incrementAndGet();
            byte[] body = "{\"error\": \"tenant t has 100000 jobs queued\"}".getBytes(java.nio.charset.StandardCharsets.UTF_8);
            ex.getResponseHeaders().add("Content-Type", "application/json");
            ex.getResponseHeaders().add("Retry-After", "3600");
            ex.sendResponseHeaders(429, body.length);
            ex.getResponseBody().write(body);
            ex.close();
        });
        full.start();
        try {
            waits.clear();
            FairqClient c = FairqClient.builder("http://127.0.0.1:" + full.getAddress().getPort()).token("t")
                    .retries(RetryPolicy.attempts(5).withSleeper(waits::add)).build();
            FairqException.QueueFullException e = assertThrows(FairqException.QueueFullException.class,
                    () -> c.submit(NewJob.of("t", JsonNodeFactory.instance.objectNode())));
            assertEquals(Duration.ofHours(1), e.retryAfter());
            assertEquals(List.of(), waits, "not slept through");
            assertEquals(1, requests.get());
        } finally {
            full.stop(0);
        }
        assertThrows(IllegalArgumentException.class, () -> RetryPolicy.attempts(2).withMaxWait(Duration.ofSeconds(-1)));
    }
}

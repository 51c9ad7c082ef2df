package dev.fairq.worker.handlers;

import dev.fairq.schema.AddressRanges;
import dev.fairq.schema.WebhookAllowList;
import dev.fairq.worker.JobContext;
import dev.fairq.worker.PermanentJobException;
import dev.fairq.worker.RetryableJobException;
import org.eclipse.jetty.util.Promise;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.HashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * SSRF against a real receiver on 127.0.0.1: what a tenant can and cannot make the worker connect to. The
 * DNS is a resolver the test injects, so a name "the tenant controls" can answer whatever the attack needs.
 */
class HttpSsrfTest extends ReceiverTest {
    private static final String TENANT_HOST = "hooks.tenant.example";

    private HttpJobHandler handler(List<String> allow, HttpJobHandler.Resolver dns) {
        return handler(allow, dns, Instant::now);
    }

    /** The tenant's DNS: its own name points at loopback; anything else is unknown. */
    private static InetAddress[] tenantDnsToLoopback(String host) throws UnknownHostException {
        if (host.equals(TENANT_HOST)) return new InetAddress[]{ip("127.0.0.1")};
        throw new UnknownHostException(host);
    }

    private static InetAddress ip(String literal) {
        return AddressRanges.literal(literal);
    }

    private static JobContext job(String tenant, String url, long timeoutMs) {
        return new JobContext(1, tenant, "default", "http",
                "{\"url\": \"" + url + "\", \"body\": {\"n\": 1}, \"timeout_ms\": " + timeoutMs + "}", 1, 25, null, null,
                OffsetDateTime.now(), "w1");
    }

    private JobContext job(String host) {
        return job("acme", "http://" + host + ":" + receiver.port() + "/hook", 10_000);
    }

    // ------------------------------------------------------------------------------------------ host names

    @Test
    void aHostNameEntryWhoseNameResolvesToLoopbackIsRefusedAndNothingIsSent() {
        int port = receiver.port();
        for (String entry : List.of(TENANT_HOST + ":" + port, "*.tenant.example:" + port)) {
            HttpJobHandler h = handler(List.of(entry), HttpSsrfTest::tenantDnsToLoopback);
            PermanentJobException e = assertThrows(PermanentJobException.class, () -> h.handle(job(TENANT_HOST)), entry);
            assertEquals("refused: " + TENANT_HOST + ":" + port + ": address 127.0.0.1 (loopback 127.0.0.0/8) is not a "
                    + "public address, and only an IP or CIDR entry naming it allows it (a host name never does)", e.getMessage());
        }
        assertEquals(0, receiver.requests.size(), "the receiver got nothing");
    }

    @Test
    void theRealLocalhostCannotBeAllowedByName() throws Exception {
        int port = receiver.port();
        // entries stored before validation existed are skipped, so they open nothing
        HttpJobHandler h = handler(List.of("localhost", "localhost:" + port), InetAddress::getAllByName);
        PermanentJobException e = assertThrows(PermanentJobException.class, () -> h.handle(job("localhost")));
        assertTrue(e.getMessage().startsWith("refused: localhost:" + port + " is not on the webhook_allow list"), e.getMessage());
        assertEquals(2, WebhookAllowList.validate(List.of("localhost", "localhost:" + port)).size(), "and cannot be written");
        assertEquals(0, receiver.requests.size());
    }

    // ------------------------------------------------------------------------------------------ IP entries

    @Test
    void anIpOrCidrEntryReachesALoopbackReceiver() throws Exception {
        int port = receiver.port();
        for (String entry : List.of("127.0.0.1", "127.0.0.0/8", "127.0.0.1:" + port, "127.0.0.0/8:" + port)) {
            handler(List.of(entry), HttpSsrfTest::tenantDnsToLoopback).handle(job("127.0.0.1"));
        }
        assertEquals(4, receiver.requests.size());
        assertTrue(receiver.requests.stream().allMatch(r -> r.path().equals("/hook") && r.body().equals("{\"n\":1}")));
    }

    @Test
    void anEntryForEveryAddressDoesNotReachALoopbackReceiver() {
        for (String entry : List.of("0.0.0.0/0", "0.0.0.0/1", "::/0")) {
            HttpJobHandler h = handler(List.of(entry, "::/0"), HttpSsrfTest::tenantDnsToLoopback);
            for (String host : List.of("127.0.0.1", "[::ffff:127.0.0.1]", "0.0.0.0", TENANT_HOST)) {
                PermanentJobException e = assertThrows(PermanentJobException.class, () -> h.handle(job(host)), entry + " " + host);
                assertTrue(e.getMessage().startsWith("refused: "), e.getMessage());
            }
        }
        assertEquals(0, receiver.requests.size(), "the receiver got nothing");
    }

    @Test
    void anIpEntryForAnotherPortIsRefused() {
        int port = receiver.port();
        int other = port == 65535 ? port - 1 : port + 1;
        HttpJobHandler h = handler(List.of("127.0.0.1:" + other), HttpSsrfTest::tenantDnsToLoopback);
        PermanentJobException e = assertThrows(PermanentJobException.class, () -> h.handle(job("127.0.0.1")));
        assertTrue(e.getMessage().startsWith("refused: 127.0.0.1:" + port + " is not on the webhook_allow list"), e.getMessage());
        assertEquals(0, receiver.requests.size());
    }

    @Test
    void aNameResolvingIntoAnIpEntryConnectsToThatAddressAndKeepsTheNameInTheHostHeader() throws Exception {
        HttpJobHandler h = handler(List.of("127.0.0.1"), HttpSsrfTest::tenantDnsToLoopback);
        h.handle(job(TENANT_HOST));
        assertEquals(1, receiver.requests.size());
        assertEquals(TENANT_HOST + ":" + receiver.port(), receiver.requests.get(0).header("Host"));
    }

    // ------------------------------------------------------------------------------------------ DNS rebinding

    /** First answer {@code first}, every later one 127.0.0.1 (where the receiver listens). */
    private static HttpJobHandler.Resolver rebinding(String first, AtomicInteger lookups) {
        return host -> new InetAddress[]{ip(lookups.incrementAndGet() == 1 ? first : "127.0.0.1")};
    }

    @Test
    void aRebindingAnswerIsNeverConnectedToBecauseTheNameIsResolvedOnce() {
        // the first answer passes (an address the admin allowed, where nothing listens), the second would be the
        // receiver; a client that resolved again when connecting would reach it
        AtomicInteger lookups = new AtomicInteger();
        HttpJobHandler h = handler(List.of(TENANT_HOST + ":" + receiver.port(), "127.0.0.2"), rebinding("127.0.0.2", lookups));
        RetryableJobException e = assertThrows(RetryableJobException.class,
                () -> h.handle(job("acme", "http://" + TENANT_HOST + ":" + receiver.port() + "/hook", 5_000)));
        assertTrue(e.getMessage().contains("connection failed") || e.getMessage().contains("timed out"), e.getMessage());
        assertEquals(1, lookups.get(), "one lookup per attempt: the check's");
        assertEquals(0, receiver.requests.size(), "never connected to the rebinding answer");
        assertEquals(List.of(Set.of(ip("127.0.0.2"))), vettedAnswers(h));
    }

    @Test
    void aPublicFirstAnswerThenLoopbackNeverReachesLoopback() {
        AtomicInteger lookups = new AtomicInteger();
        HttpJobHandler h = handler(List.of(TENANT_HOST + ":" + receiver.port()), rebinding("93.184.216.34", lookups));
        // the vetted public address does not answer on this port (or the sandbox has no route): a transient failure
        assertThrows(RetryableJobException.class,
                () -> h.handle(job("acme", "http://" + TENANT_HOST + ":" + receiver.port() + "/hook", 300)));
        assertEquals(1, lookups.get());
        assertEquals(0, receiver.requests.size());
        assertEquals(List.of(Set.of(ip("93.184.216.34"))), vettedAnswers(h), "the only connect target was the vetted address");
    }

    /** The vetted answers the client holds destinations for (the tag of each origin). */
    private static List<Set<InetAddress>> vettedAnswers(HttpJobHandler h) {
        return h.client().getDestinations().stream()
                .map(d -> assertInstanceOf(HttpJobHandler.Vetted.class, d.getOrigin().getTag()).addresses()).toList();
    }

    @Test
    void theClientsResolverHandsOutOnlyVettedAddressesCarryingTheHostName() throws Exception {
        HttpJobHandler.Vetted vetted = new HttpJobHandler.Vetted("acme", Set.of(ip("93.184.216.34")));
        List<InetSocketAddress> out = vetted.socketAddresses(TENANT_HOST, 443);
        assertEquals(1, out.size());
        assertEquals(TENANT_HOST, out.get(0).getHostString(), "SNI and the certificate check use the name");
        assertEquals(ip("93.184.216.34"), out.get(0).getAddress());
        assertFalse(out.get(0).isUnresolved());

        // a request without vetted addresses is not resolved at all
        CompletableFuture<List<InetSocketAddress>> result = new CompletableFuture<>();
        new HttpJobHandler.VettedAddresses().resolve(TENANT_HOST, 443, new HashMap<String, Object>(),
                Promise.from(result::complete, result::completeExceptionally));
        assertTrue(result.isCompletedExceptionally());
        assertInstanceOf(UnknownHostException.class, assertThrows(Exception.class, result::join).getCause());
    }

    @Test
    void connectionsAreNotSharedAcrossTenants() throws Exception {
        HttpJobHandler h = handler(List.of("127.0.0.1"), HttpSsrfTest::tenantDnsToLoopback);
        String url = "http://127.0.0.1:" + receiver.port() + "/hook";
        h.handle(job("acme", url, 10_000));
        h.handle(job("acme", url, 10_000));
        h.handle(job("globex", url, 10_000));
        assertEquals(3, receiver.requests.size());
        assertEquals(Set.of("acme", "globex"), Set.copyOf(h.client().getDestinations().stream()
                .map(d -> ((HttpJobHandler.Vetted) d.getOrigin().getTag()).tenant()).toList()));
        assertEquals(2, h.client().getDestinations().size(), "one pool per tenant");
    }
}

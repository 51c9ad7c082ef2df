package dev.fairq.api;

import dev.fairq.testing.TestDatabase;
import io.dropwizard.core.server.DefaultServerFactory;
import io.dropwizard.jetty.HttpConnectorFactory;
import io.dropwizard.testing.DropwizardTestSupport;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * FAIRQ_API_POOL_SIZE is documented as 1-1000: a server with one API connection starts and serves requests.
 * It had stopped at start-up after 10 s ("Connection is not available"), as Flyway took a second connection
 * of the API pool for its lock while migrating on the first.
 */
class ApiPoolSizeTest {

    @Test
    void aServerWithOneApiConnectionStartsAndServes() throws Exception {
        TestDatabase db = TestDatabase.get();
        FairqConfiguration c = new FairqConfiguration();
        c.databaseUrl = db.jdbcUrl;
        c.databaseUser = db.user;
        c.databasePassword = db.password;
        c.adminToken = TestApp.ADMIN_TOKEN;
        c.tenantsFile = "target/no-tenants-file.yml";
        c.apiPoolSize = 1; // the documented lower edge
        c.workerThreads = 2;
        c.demoHandlers = true;
        DefaultServerFactory server = (DefaultServerFactory) c.getServerFactory();
        ((HttpConnectorFactory) server.getApplicationConnectors().get(0)).setPort(0);
        ((HttpConnectorFactory) server.getAdminConnectors().get(0)).setPort(0);
        DropwizardTestSupport<FairqConfiguration> support = new DropwizardTestSupport<>(TestApp.TestApplication.class, c);
        support.before();
        ExecutorService callers = Executors.newFixedThreadPool(8);
        try {
            int port = support.getLocalPort();
            String tenant = "poolone-" + Long.toHexString(System.nanoTime());
            assertEquals(201, TestApp.callPort(port, "PUT", "/v1/admin/tenants/" + tenant, TestApp.ADMIN_TOKEN, "{}").status());
            TestApp.Res key = TestApp.callPort(port, "POST", "/v1/admin/tenants/" + tenant + "/keys", TestApp.ADMIN_TOKEN, null);
            assertEquals(201, key.status(), key::toString);
            String k = key.body().get("key").asText();

            // callers at once share the one connection: each waits its turn, none is refused
            List<Future<TestApp.Res>> submits = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                String body = "{\"type\": \"noop\", \"payload\": {}, \"job_key\": \"k" + i + "\"}";
                submits.add(callers.submit(() -> TestApp.callPort(port, "POST", "/v1/jobs", k, body)));
            }
            Set<Long> ids = new TreeSet<>();
            for (Future<TestApp.Res> f : submits) {
                TestApp.Res r = f.get();
                assertEquals(201, r.status(), r::toString);
                ids.add(r.body().get("id").asLong());
            }
            assertEquals(16, ids.size(), "one job per job_key, no duplicate");

            Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> ids.stream().allMatch(id ->
                    "succeeded".equals(TestApp.callPort(port, "GET", "/v1/jobs/" + id, k, null).body().get("status").asText())));
            TestApp.Res stats = TestApp.callPort(port, "GET", "/v1/stats", k, null);
            assertEquals(200, stats.status(), stats::toString);
            assertEquals(0, stats.body().get("pending").asLong() + stats.body().get("ready").asLong()
                    + stats.body().get("running").asLong(), stats::toString);
            assertEquals(200, TestApp.callPort(port, "GET", "/v1/dashboard", k, null).status());
            TestApp.Res metrics = TestApp.callPort(support.getAdminPort(), "GET", "/metrics", null, null);
            assertEquals(200, metrics.status());
            assertTrue(metrics.body().asText().contains("fairq_jobs{"), "the scrape read the depths through the one connection");

            // A job a tenant grant admits in its enqueue, with no thread free to start it there, is inserted ready and
            // the workers are woken: that wake-up had taken a second connection of the pool while the submit held the
            // only one, and the submit answered 500 after 10 s (Waker#wakeNow(Runnable)). Both threads sleep, the
            // quiet tenant holds a grant, then the submit.
            List<Long> sleeping = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                TestApp.Res r = TestApp.callPort(port, "POST", "/v1/jobs", k, "{\"type\": \"sleep\", \"payload\": {\"ms\": 10000}}");
                assertEquals(201, r.status(), r::toString);
                sleeping.add(r.body().get("id").asLong());
            }
            Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> sleeping.stream().allMatch(id ->
                    "running".equals(TestApp.callPort(port, "GET", "/v1/jobs/" + id, k, null).body().get("status").asText())));
            Awaitility.await().atMost(Duration.ofSeconds(30)).until(() ->
                    db.count("SELECT count(*) FROM admission_grants WHERE tenant_id = ? AND used_at IS NULL", tenant) > 0);
            // the server runs in this JVM: what its waker logs is read here (a send that fails is logged at WARN, or at
            // DEBUG within a minute of the last; it fails on the calling thread, so before the submit answers)
            ch.qos.logback.classic.Logger wakerLog =
                    (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger(dev.fairq.schema.Waker.class);
            ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> wakerEvents =
                    new ch.qos.logback.core.read.ListAppender<>();
            wakerEvents.start();
            wakerLog.addAppender(wakerEvents);
            wakerLog.setLevel(ch.qos.logback.classic.Level.DEBUG);
            TestApp.Res granted = TestApp.callPort(port, "POST", "/v1/jobs", k, "{\"type\": \"noop\", \"payload\": {}}");
            wakerLog.detachAppender(wakerEvents);
            wakerLog.setLevel(null);
            assertEquals(201, granted.status(), granted::toString);
            assertEquals("ready", granted.body().get("status").asText(), "admitted by the grant, no thread free to start it");
            // without the fix the wake-up waited out the pool's 10 s connection timeout (10,020 ms measured) and was lost
            assertEquals(List.of(), wakerEvents.list.stream().map(e -> e.getFormattedMessage()).toList(),
                    "the wake-up for the job the grant admitted was sent");
        } finally {
            callers.shutdownNow();
            support.after();
        }
    }
}

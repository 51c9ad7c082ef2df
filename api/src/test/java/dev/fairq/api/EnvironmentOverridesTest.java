package dev.fairq.api;

import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.worker.WorkerConfig;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The worker's lease, heartbeat, shutdown grace and default time limit, and the scheduler's fair share, from the environment. */
class EnvironmentOverridesTest {

    private static WorkerConfig worker(Map<String, String> env) {
        return Roles.workerConfig(EnvironmentOverrides.apply(new FairqConfiguration(), env));
    }

    /** Each environment (one variable each) stops start-up with a message that starts with the variable's name. */
    @SafeVarargs
    private static void eachRefusedNamingItsVariable(Map<String, String>... envs) {
        for (Map<String, String> env : envs) {
            String name = env.keySet().iterator().next();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> worker(env), env.toString());
            assertTrue(e.getMessage().startsWith(name), e.getMessage());
        }
    }

    /** The environment stops start-up with a message that contains {@code message}. */
    private static void refusedSaying(Map<String, String> env, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> worker(env), env.toString());
        assertTrue(e.getMessage().contains(message), e.getMessage());
    }

    @Test
    void defaultsAreTheWorkersDefaults() {
        WorkerConfig c = worker(Map.of());
        assertEquals(WorkerConfig.DEFAULT_LEASE, c.lease());
        assertEquals(WorkerConfig.DEFAULT_HEARTBEAT_INTERVAL, c.heartbeatInterval());
        assertEquals(WorkerConfig.DEFAULT_SHUTDOWN_GRACE, c.shutdownGrace());
        assertEquals(WorkerConfig.DEFAULT_TIMEOUT, c.defaultTimeout());
        assertEquals(c.heartbeatInterval(), c.startMargin());
    }

    @Test
    void leaseHeartbeatGraceAndTimeLimitComeFromTheEnvironment() {
        WorkerConfig c = worker(Map.of("FAIRQ_LEASE_MS", "9000", "FAIRQ_SHUTDOWN_GRACE_MS", "25000",
                "FAIRQ_JOB_TIMEOUT_MS", "60000", "FAIRQ_WORKER_THREADS", "3"));
        assertEquals(Duration.ofSeconds(9), c.lease());
        assertEquals(Duration.ofSeconds(3), c.heartbeatInterval(), "a third of the lease unless set");
        assertEquals(Duration.ofSeconds(25), c.shutdownGrace());
        assertEquals(Duration.ofSeconds(3), c.stopReserve(), "a fifth of the grace, at most 3 s");
        assertEquals(Duration.ofMinutes(1), c.defaultTimeout());
        assertEquals(3, c.threads());
        assertEquals(Duration.ofSeconds(2), worker(Map.of("FAIRQ_LEASE_MS", "9000", "FAIRQ_HEARTBEAT_MS", "2000")).heartbeatInterval());
        assertEquals(Duration.ZERO, worker(Map.of("FAIRQ_SHUTDOWN_GRACE_MS", "0")).shutdownGrace());
    }

    @Test
    void theApiPoolSizeComesFromTheEnvironment() {
        assertEquals(20, EnvironmentOverrides.apply(new FairqConfiguration(), Map.of()).apiPoolSize);
        assertEquals(4, EnvironmentOverrides.apply(new FairqConfiguration(), Map.of("FAIRQ_API_POOL_SIZE", "4")).apiPoolSize);
        eachRefusedNamingItsVariable(Map.of("FAIRQ_API_POOL_SIZE", "0"), Map.of("FAIRQ_API_POOL_SIZE", "twenty"),
                Map.of("FAIRQ_API_POOL_SIZE", "1001"));
    }

    @Test
    void badValuesStopStartUpNamingTheVariable() {
        eachRefusedNamingItsVariable(Map.of("FAIRQ_LEASE_MS", "999"), Map.of("FAIRQ_LEASE_MS", "ten"),
                Map.of("FAIRQ_SHUTDOWN_GRACE_MS", "-1"), Map.of("FAIRQ_JOB_TIMEOUT_MS", "86400001"),
                Map.of("FAIRQ_HEARTBEAT_MS", "50"));
        refusedSaying(Map.of("FAIRQ_LEASE_MS", "10000", "FAIRQ_HEARTBEAT_MS", "5000"),
                "FAIRQ_HEARTBEAT_MS (5000) must be under half of FAIRQ_LEASE_MS (10000)");
    }

    @Test
    void queuesReservationsAndMaxSnoozesComeFromTheEnvironment() {
        WorkerConfig c = worker(Map.of("FAIRQ_WORKER_THREADS", "4", "FAIRQ_WORKER_QUEUES", "urgent, default",
                "FAIRQ_WORKER_RESERVED", "urgent=2", "FAIRQ_MAX_SNOOZES", "7"));
        assertEquals(java.util.Set.of("urgent", "default"), c.queues());
        assertEquals(Map.of("urgent", 2), c.reserved());
        assertEquals(2, c.sharedThreads());
        assertEquals(7, c.maxSnoozes());
        WorkerConfig all = worker(Map.of());
        assertEquals(null, all.queues(), "every queue");
        assertEquals(Map.of(), all.reserved());
        assertEquals(WorkerConfig.DEFAULT_MAX_SNOOZES, all.maxSnoozes());
        eachRefusedNamingItsVariable(Map.of("FAIRQ_WORKER_QUEUES", "bad queue"),
                Map.of("FAIRQ_WORKER_QUEUES", " , "), Map.of("FAIRQ_WORKER_RESERVED", "urgent"),
                Map.of("FAIRQ_WORKER_RESERVED", "urgent=99"), Map.of("FAIRQ_MAX_SNOOZES", "-1"));
        refusedSaying(Map.of("FAIRQ_WORKER_QUEUES", "bulk", "FAIRQ_WORKER_RESERVED", "urgent=1"),
                "queue 'urgent' has reserved threads but is not among the queues served");
        refusedSaying(Map.of("FAIRQ_WORKER_RESERVED", "urgent=2,urgent=3"), "FAIRQ_WORKER_RESERVED names queue 'urgent' twice");
    }

    /**
     * A setting refused by the worker's or scheduler's own checks stops start-up in one line (StartupErrors), like
     * the others: a reserved queue not served, more threads reserved than the worker has, an unknown fair share
     * (each had printed 9-19 frames of stack trace).
     */
    @Test
    void settingsRefusedAcrossModulesAreOneLine() {
        for (Map<String, String> env : java.util.List.of(Map.of("FAIRQ_WORKER_QUEUES", "bulk", "FAIRQ_WORKER_RESERVED", "urgent=1"),
                Map.of("FAIRQ_WORKER_THREADS", "4", "FAIRQ_WORKER_RESERVED", "a=3,b=3"), Map.of("FAIRQ_FAIR_SHARE", "seconds"))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> worker(env), env.toString());
            assertTrue(StartupErrors.expected(e), "one line, no stack trace: " + env + " " + e);
        }
        FairqConfiguration fromFile = new FairqConfiguration();
        fromFile.fairShare = "seconds"; // a config file's fairShare, read when the scheduler starts
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Roles.schedulerConfig(fromFile));
        assertTrue(StartupErrors.expected(e) && e.getMessage().contains("FAIRQ_FAIR_SHARE"), e.getMessage());
    }

    private static SchedulerConfig scheduler(Map<String, String> env) {
        return Roles.schedulerConfig(EnvironmentOverrides.apply(new FairqConfiguration(), env));
    }

    @Test
    void aSubmittedJobStartsAtItsCommitUnlessSubmitStartSaysFlush() {
        assertEquals("commit", EnvironmentOverrides.apply(new FairqConfiguration(), Map.of()).submitStart);
        assertEquals("flush", EnvironmentOverrides.apply(new FairqConfiguration(), Map.of("FAIRQ_SUBMIT_START", " Flush ")).submitStart);
        assertEquals("commit", EnvironmentOverrides.apply(new FairqConfiguration(), Map.of("FAIRQ_SUBMIT_START", "commit")).submitStart);
        eachRefusedNamingItsVariable(Map.of("FAIRQ_SUBMIT_START", "fsync"));
    }

    /**
     * The demo types (noop, sleep) are on by default with the embedded database, where api/README's first walk runs
     * a noop job (it had waited forever, no_worker), and off by default with FAIRQ_DATABASE_URL.
     */
    @Test
    void demoHandlersAreOnByDefaultOnlyWithTheEmbeddedDatabase() {
        assertTrue(EnvironmentOverrides.apply(new FairqConfiguration(), Map.of()).demoHandlersOn());
        String url = "jdbc:postgresql://127.0.0.1:5432/fairq";
        assertEquals(false, EnvironmentOverrides.apply(new FairqConfiguration(), Map.of("FAIRQ_DATABASE_URL", url)).demoHandlersOn());
        assertTrue(EnvironmentOverrides.apply(new FairqConfiguration(),
                Map.of("FAIRQ_DATABASE_URL", url, "FAIRQ_DEMO_HANDLERS", "true")).demoHandlersOn());
        assertEquals(false, EnvironmentOverrides.apply(new FairqConfiguration(), Map.of("FAIRQ_DEMO_HANDLERS", "false")).demoHandlersOn());
    }

    /** FAIRQ_LOG_FORMAT is read as the other enumerated variables are: JSON or " json " is json (JSON had been refused). */
    @Test
    void theLogFormatIgnoresCaseAndSpaces() {
        for (String json : java.util.List.of("json", "JSON", " Json ")) {
            FairqConfiguration c = EnvironmentOverrides.apply(new FairqConfiguration(), Map.of("FAIRQ_LOG_FORMAT", json));
            var logging = (io.dropwizard.logging.common.DefaultLoggingFactory) c.getLoggingFactory();
            var console = (io.dropwizard.logging.common.ConsoleAppenderFactory<?>) logging.getAppenders().get(0);
            assertTrue(console.getLayout() instanceof io.dropwizard.logging.json.EventJsonLayoutBaseFactory, json);
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> EnvironmentOverrides.apply(new FairqConfiguration(), Map.of("FAIRQ_LOG_FORMAT", "xml")));
        assertTrue(e.getMessage().startsWith("FAIRQ_LOG_FORMAT"), e.getMessage());
    }

    @Test
    void sharesAreByWorkerTimeUnlessFairShareSaysJobs() {
        assertEquals(SchedulerConfig.FairShare.TIME, scheduler(Map.of()).fairShare(), "the server's default (issue 14)");
        assertEquals(SchedulerConfig.FairShare.TIME, SchedulerConfig.defaults().fairShare(), "the builder's default");
        assertEquals(SchedulerConfig.FairShare.JOBS, scheduler(Map.of("FAIRQ_FAIR_SHARE", "jobs")).fairShare());
        assertEquals(SchedulerConfig.FairShare.JOBS, scheduler(Map.of("FAIRQ_FAIR_SHARE", " JOBS ")).fairShare());
        assertEquals(SchedulerConfig.FairShare.TIME, scheduler(Map.of("FAIRQ_FAIR_SHARE", "time")).fairShare());
        eachRefusedNamingItsVariable(Map.of("FAIRQ_FAIR_SHARE", "seconds"));
    }
}

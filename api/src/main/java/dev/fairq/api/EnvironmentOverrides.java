package dev.fairq.api;

import io.dropwizard.core.server.DefaultServerFactory;
import io.dropwizard.jetty.ConnectorFactory;
import io.dropwizard.jetty.HttpConnectorFactory;
import io.dropwizard.logging.common.AppenderFactory;
import io.dropwizard.logging.common.ConsoleAppenderFactory;
import io.dropwizard.logging.common.DefaultLoggingFactory;
import io.dropwizard.logging.json.EventJsonLayoutBaseFactory;

import java.util.List;
import java.util.Map;

/**
 * The {@code FAIRQ_*} environment variables, applied over the built-in defaults and the config file (a
 * variable that is set wins). Runs before logging is configured, so {@code FAIRQ_LOG_FORMAT=json} covers
 * every line. A value that does not parse stops start-up naming the variable.
 */
final class EnvironmentOverrides {
    /** Text log lines carry the tenant and job id from the MDC (the worker sets both around each job). */
    static final String TEXT_LOG_FORMAT =
            "%-5p [%d{ISO8601,UTC}] [%t] %c{1}: %replace(tenant=%X{tenant} job=%X{job_id} ){'tenant= job= ', ''}%m%n%rEx";

    private EnvironmentOverrides() {}

    static <T extends FairqConfiguration> T apply(T c, Map<String, String> env) {
        String v;
        if ((v = get(env, "FAIRQ_DATABASE_URL")) != null) c.databaseUrl = v;
        if ((v = get(env, "FAIRQ_DATABASE_USER")) != null) c.databaseUser = v;
        if ((v = get(env, "FAIRQ_DATABASE_PASSWORD")) != null) c.databasePassword = v;
        checkDatabaseUrl(c);
        if ((v = get(env, "FAIRQ_ADMIN_TOKEN")) != null) c.adminToken = v;
        if ((v = get(env, "FAIRQ_DATA_DIR")) != null) c.dataDirectory = v;
        if ((v = get(env, "FAIRQ_TENANTS")) != null) {
            c.tenantsFile = v;
            c.tenantsFileRequired = true;
        }
        if ((v = get(env, "FAIRQ_WORKER_THREADS")) != null) c.workerThreads = intIn("FAIRQ_WORKER_THREADS", v, 1, 1000);
        if ((v = get(env, "FAIRQ_ADMIN_TASKS")) != null) c.adminTasks = bool("FAIRQ_ADMIN_TASKS", v);
        if ((v = get(env, "FAIRQ_DEMO_HANDLERS")) != null) c.demoHandlers = bool("FAIRQ_DEMO_HANDLERS", v);
        if ((v = get(env, "FAIRQ_WORKER_QUEUES")) != null) c.workerQueues = queues(v);
        if ((v = get(env, "FAIRQ_WORKER_RESERVED")) != null) c.workerReserved = reserved(v, c.workerThreads);
        if ((v = get(env, "FAIRQ_MAX_SNOOZES")) != null) {
            c.maxSnoozes = intIn("FAIRQ_MAX_SNOOZES", v, 0, dev.fairq.worker.WorkerConfig.MAX_MAX_SNOOZES);
        }
        if ((v = get(env, "FAIRQ_EFFECT_RETENTION_HOURS")) != null) {
            c.effectRetentionHours = intIn("FAIRQ_EFFECT_RETENTION_HOURS", v, 1, 24 * 3650);
        }
        if ((v = get(env, "FAIRQ_FAIR_SHARE")) != null) {
            try {
                dev.fairq.scheduler.SchedulerConfig.FairShare.parse(v); // refused at start-up, naming the variable
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(e.getMessage(), e); // thrown from here: a setting, one line (StartupErrors)
            }
            c.fairShare = v.trim().toLowerCase(java.util.Locale.ROOT);
        }
        if ((v = get(env, "FAIRQ_SUBMIT_START")) != null) {
            c.submitStart = v.trim().toLowerCase(java.util.Locale.ROOT);
            c.submitStartsAtCommit(); // refused at start-up, naming the variable
        }
        if ((v = get(env, "FAIRQ_LEASE_MS")) != null) c.leaseMs = intIn("FAIRQ_LEASE_MS", v, 1000, 3_600_000);
        if ((v = get(env, "FAIRQ_HEARTBEAT_MS")) != null) c.heartbeatMs = (long) intIn("FAIRQ_HEARTBEAT_MS", v, 100, 1_800_000);
        if ((v = get(env, "FAIRQ_SHUTDOWN_GRACE_MS")) != null) {
            c.shutdownGraceMs = intIn("FAIRQ_SHUTDOWN_GRACE_MS", v, 0, 3_600_000);
        }
        if ((v = get(env, "FAIRQ_JOB_TIMEOUT_MS")) != null) c.jobTimeoutMs = intIn("FAIRQ_JOB_TIMEOUT_MS", v, 1, 86_400_000);
        checkLease(c);
        if ((v = get(env, "FAIRQ_RETENTION_HOURS")) != null) c.retentionHours = intIn("FAIRQ_RETENTION_HOURS", v, 1, 24 * 3650);
        if ((v = get(env, "FAIRQ_DEAD_RETENTION_HOURS")) != null) {
            c.deadRetentionHours = intIn("FAIRQ_DEAD_RETENTION_HOURS", v, 1, 24 * 3650);
        }
        if ((v = get(env, "FAIRQ_API_POOL_SIZE")) != null) c.apiPoolSize = intIn("FAIRQ_API_POOL_SIZE", v, 1, 1000);
        if ((v = get(env, "FAIRQ_METRICS_TENANTS")) != null) c.metricsTenants = intIn("FAIRQ_METRICS_TENANTS", v, 0, 10_000);
        if ((v = get(env, "FAIRQ_METRICS_PORT")) != null) c.metricsPort = intIn("FAIRQ_METRICS_PORT", v, 0, 65535);
        if ((v = get(env, "FAIRQ_MAX_PAYLOAD_BYTES")) != null) {
            c.maxPayloadBytes = intIn("FAIRQ_MAX_PAYLOAD_BYTES", v, 1, 16 * 1024 * 1024);
        }
        if (c.getServerFactory() instanceof DefaultServerFactory server) {
            if ((v = get(env, "FAIRQ_PORT")) != null) setPort(server.getApplicationConnectors(), intIn("FAIRQ_PORT", v, 0, 65535));
            if ((v = get(env, "FAIRQ_ADMIN_PORT")) != null) setPort(server.getAdminConnectors(), intIn("FAIRQ_ADMIN_PORT", v, 0, 65535));
            // a file's server section replaces the default factory: its admin connector listens on this machine
            // only unless the file names a bindHost (0.0.0.0 for every interface) or FAIRQ_ADMIN_BIND does
            String bind = get(env, "FAIRQ_ADMIN_BIND");
            for (ConnectorFactory f : server.getAdminConnectors()) {
                if (f instanceof HttpConnectorFactory http) {
                    if (bind != null) http.setBindHost(bind);
                    else if (http.getBindHost() == null) http.setBindHost(FairqConfiguration.DEFAULT_ADMIN_BIND);
                }
            }
        }
        if (c.getLoggingFactory() instanceof DefaultLoggingFactory logging) {
            String given = get(env, "FAIRQ_LOG_FORMAT");
            // read as FAIRQ_FAIR_SHARE and FAIRQ_SUBMIT_START are (JSON had been refused where FAIR_SHARE took JOBS)
            String format = given == null ? null : given.trim().toLowerCase(java.util.Locale.ROOT);
            if (format != null && !format.equals("json") && !format.equals("text")) {
                throw new IllegalArgumentException("FAIRQ_LOG_FORMAT must be json or text, not '" + given + "'");
            }
            for (AppenderFactory<?> a : logging.getAppenders()) {
                if (a instanceof ConsoleAppenderFactory<?> console) {
                    if ("json".equals(format)) {
                        setJsonLayout(console);
                    } else if (console.getLogFormat() == null) {
                        console.setLogFormat(TEXT_LOG_FORMAT);
                    }
                }
            }
        }
        return c;
    }

    /**
     * A URL the PostgreSQL driver does not take (a typo, another database's jdbc:mysql:, a port that is not a number)
     * had reached the pool, whose "Failed to get driver instance" printed 20 frames (migrate, worker, scheduler, server);
     * check said OK to it. The URL itself is not echoed: it may carry a password.
     */
    private static void checkDatabaseUrl(FairqConfiguration c) {
        if (c.embeddedDatabase() || org.postgresql.Driver.parseURL(c.databaseUrl.trim(), null) != null) return;
        throw new IllegalArgumentException("FAIRQ_DATABASE_URL (databaseUrl) is not a PostgreSQL JDBC URL: it must read "
                + "jdbc:postgresql://HOST[:PORT]/DATABASE");
    }

    /** The heartbeat must leave room for the start margin (one heartbeat): under half the lease. */
    private static void checkLease(FairqConfiguration c) {
        long heartbeat = c.heartbeatMs != null ? c.heartbeatMs : c.leaseMs / 3;
        if (2 * heartbeat >= c.leaseMs) {
            throw new IllegalArgumentException("FAIRQ_HEARTBEAT_MS (" + heartbeat + ") must be under half of FAIRQ_LEASE_MS ("
                    + c.leaseMs + "): a job starts only while its lease has a heartbeat interval left");
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static void setJsonLayout(ConsoleAppenderFactory console) {
        console.setLayout(new EventJsonLayoutBaseFactory());
    }

    private static void setPort(List<ConnectorFactory> connectors, int port) {
        if (!connectors.isEmpty() && connectors.get(0) instanceof HttpConnectorFactory http) http.setPort(port);
    }

    private static String get(Map<String, String> env, String name) {
        String v = env.get(name);
        return v == null || v.isBlank() ? null : v.trim();
    }

    private static int intIn(String name, String v, int min, int max) {
        try {
            int n = Integer.parseInt(v);
            if (n >= min && n <= max) return n;
        } catch (NumberFormatException ignored) {
            // reported below
        }
        throw new IllegalArgumentException(name + " must be a whole number between " + min + " and " + max + ", not '" + v + "'");
    }

    /** FAIRQ_WORKER_QUEUES: queue names, comma-separated ("urgent,default"). */
    static java.util.Set<String> queues(String v) {
        java.util.Set<String> out = new java.util.LinkedHashSet<>();
        for (String part : v.split(",")) {
            String q = part.trim();
            if (q.isEmpty()) continue;
            if (!q.matches(dev.fairq.schema.JobRequest.NAME_REGEX)) {
                throw new IllegalArgumentException("FAIRQ_WORKER_QUEUES: '" + q + "' " + dev.fairq.schema.JobRequest.NAME_RULE);
            }
            out.add(q);
        }
        if (out.isEmpty()) throw new IllegalArgumentException("FAIRQ_WORKER_QUEUES names no queue: '" + v + "' (leave it unset for all)");
        return out;
    }

    /** FAIRQ_WORKER_RESERVED: queue=threads pairs, comma-separated ("urgent=2,emails=1"). */
    static java.util.Map<String, Integer> reserved(String v, int threads) {
        java.util.Map<String, Integer> out = new java.util.LinkedHashMap<>();
        for (String part : v.split(",")) {
            if (part.isBlank()) continue;
            int eq = part.indexOf('=');
            String q = eq < 0 ? "" : part.substring(0, eq).trim();
            if (eq < 0 || !q.matches(dev.fairq.schema.JobRequest.NAME_REGEX)) {
                throw new IllegalArgumentException("FAIRQ_WORKER_RESERVED: '" + part.trim() + "' must be queue=threads, e.g. urgent=2");
            }
            // urgent=2,urgent=3 is a typo, not a choice: the second had silently replaced the first
            if (out.containsKey(q)) throw new IllegalArgumentException("FAIRQ_WORKER_RESERVED names queue '" + q + "' twice");
            out.put(q, intIn("FAIRQ_WORKER_RESERVED (" + q + ")", part.substring(eq + 1).trim(), 1, threads));
        }
        return out;
    }

    private static boolean bool(String name, String v) {
        if (v.equalsIgnoreCase("true")) return true;
        if (v.equalsIgnoreCase("false")) return false;
        throw new IllegalArgumentException(name + " must be true or false, not '" + v + "'");
    }
}

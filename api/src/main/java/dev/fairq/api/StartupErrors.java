package dev.fairq.api;

import com.zaxxer.hikari.pool.HikariPool;
import dev.fairq.scheduler.TenantsFile;
import io.dropwizard.configuration.ConfigurationException;
import io.dropwizard.core.cli.Cli;
import org.flywaydb.core.api.FlywayException;

import java.io.IOException;
import java.io.PrintWriter;
import java.util.Set;

/**
 * How {@code server}, {@code worker}, {@code scheduler} and {@code migrate} report a failure to start: a setting, a
 * file or the database at fault is one line naming it ("fairq: FAIRQ_LEASE_MS: ..."; "caused by" for what lies
 * under it), not 7-33 frames of stack trace. Anything else (a bug) keeps its stack trace, and so does every
 * failure with {@code FAIRQ_STACK_TRACES=1}.
 */
final class StartupErrors {
    private StartupErrors() {}

    static void report(Cli cli, Throwable e) {
        PrintWriter err = cli.getStdErr();
        String traces = System.getenv("FAIRQ_STACK_TRACES");
        if (!expected(e) || (traces != null && !traces.isBlank() && !traces.equals("0"))) {
            e.printStackTrace(err);
        } else {
            err.println("fairq: " + describe(e));
        }
        err.flush();
    }

    /** Where a setting is read and refused: their IllegalArgument/IllegalState exceptions name the setting at fault. */
    private static final Set<String> SETTINGS = Set.of(DatabaseTarget.class.getName(), EnvironmentOverrides.class.getName(),
            AdminCredentials.class.getName(), EmbeddedDatabase.class.getName(), Roles.class.getName(),
            FairqConfiguration.class.getName(), TenantsFile.class.getName());

    /**
     * The failures a user fixes in a setting, a file or the database, rather than in fairq's code: an
     * IllegalArgument/IllegalState exception only when a settings class threw it (elsewhere it is a bug).
     */
    static boolean expected(Throwable e) {
        if (e instanceof IllegalArgumentException || e instanceof IllegalStateException) {
            StackTraceElement[] at = e.getStackTrace();
            return at.length > 0 && SETTINGS.contains(at[0].getClassName());
        }
        // a port in use or an address that does not resolve (FAIRQ_PORT, FAIRQ_ADMIN_PORT, FAIRQ_ADMIN_BIND): Jetty wraps
        // the BindException in a RuntimeException, which had printed 17 frames
        for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof java.net.BindException || c instanceof java.nio.channels.UnresolvedAddressException) return true;
        }
        return e instanceof IOException || e instanceof ConfigurationException
                || e instanceof HikariPool.PoolInitializationException || e instanceof FlywayException;
    }

    /** The message, then each cause's that adds something, on one line. */
    static String describe(Throwable e) {
        StringBuilder b = new StringBuilder(message(e));
        Throwable seen = e;
        for (Throwable c = e.getCause(); c != null && c != seen; seen = c, c = c.getCause()) {
            String m = message(c);
            if (!b.toString().contains(m)) b.append("; caused by ").append(m);
        }
        return b.toString().replaceAll("\\s*\\R\\s*", " ");
    }

    private static String message(Throwable e) {
        String m = e.getMessage();
        return m == null || m.isBlank() ? e.getClass().getSimpleName() : m;
    }
}

package dev.fairq.api;

import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.ServerConnector;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The admin port: this machine only by default, no process-changing tasks, metrics and health checks still served. */
class AdminPortTest {

    @Test
    void theAdminConnectorListensOnLoopbackOnly() throws Exception {
        TestApp app = TestApp.get();
        ServerConnector admin = null;
        for (Connector c : app.support.getEnvironment().getApplicationContext().getServer().getConnectors()) {
            if (c instanceof ServerConnector s && s.getLocalPort() == app.support.getAdminPort()) admin = s;
        }
        assertEquals("127.0.0.1", admin == null ? null : admin.getHost());
    }

    @Test
    void tasksThatChangeTheProcessAreOffAndMetricsAndHealthStay() throws Exception {
        TestApp app = TestApp.get();
        int port = app.support.getAdminPort();
        for (String path : new String[]{"/tasks/gc", "/tasks/log-level?logger=ROOT&level=OFF", "/pprof?duration=1"}) {
            TestApp.Res r = TestApp.callPort(port, path.startsWith("/pprof") ? "GET" : "POST", path, null, null);
            assertEquals(404, r.status(), path);
            assertTrue(r.body().asText().contains("FAIRQ_ADMIN_TASKS"), r.body().toString());
        }
        assertEquals(200, app.adminPort("/metrics").status());
        assertEquals(200, app.adminPort("/healthcheck").status());
    }

    @Test
    void theBindAndTheTasksSwitchComeFromTheEnvironment() {
        FairqConfiguration defaults = EnvironmentOverrides.apply(new FairqConfiguration(), Map.of());
        assertEquals("127.0.0.1", adminBind(defaults));
        assertEquals(false, defaults.adminTasks);
        FairqConfiguration open = EnvironmentOverrides.apply(new FairqConfiguration(),
                Map.of("FAIRQ_ADMIN_BIND", "0.0.0.0", "FAIRQ_ADMIN_TASKS", "true"));
        assertEquals("0.0.0.0", adminBind(open));
        assertTrue(open.adminTasks);
        // a config file's server section builds a new factory without a bindHost: still this machine only
        FairqConfiguration file = new FairqConfiguration();
        file.setServerFactory(new io.dropwizard.core.server.DefaultServerFactory());
        assertEquals("127.0.0.1", adminBind(EnvironmentOverrides.apply(file, Map.of())));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> EnvironmentOverrides.apply(new FairqConfiguration(), Map.of("FAIRQ_ADMIN_TASKS", "yes")));
        assertTrue(e.getMessage().startsWith("FAIRQ_ADMIN_TASKS"), e.getMessage());
    }

    private static String adminBind(FairqConfiguration c) {
        return ((io.dropwizard.jetty.HttpConnectorFactory) ((io.dropwizard.core.server.DefaultServerFactory) c.getServerFactory())
                .getAdminConnectors().get(0)).getBindHost();
    }
}

package dev.fairq.api;

import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletResponse;
import io.dropwizard.core.setup.Environment;

import java.io.IOException;
import java.util.EnumSet;

/**
 * Keeps Dropwizard's admin tasks off unless FAIRQ_ADMIN_TASKS=true: {@code POST /tasks/log-level} changes what
 * the process logs, {@code /tasks/gc} runs a full collection, and {@code /pprof} runs the CPU profiler for as long
 * as the caller asks. None has authentication, and a metrics scraper needs none of them; /metrics, /healthcheck,
 * /ping and /threads stay.
 */
final class AdminTasksGuard implements Filter {
    static final String[] PATHS = {"/tasks", "/tasks/*", "/pprof", "/pprof/*"};

    static void install(Environment env, boolean enabled) {
        if (enabled) return;
        env.admin().addFilter("fairq-admin-tasks-off", new AdminTasksGuard())
                .addMappingForUrlPatterns(EnumSet.allOf(DispatcherType.class), false, PATHS);
    }

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain) throws IOException, ServletException {
        HttpServletResponse res = (HttpServletResponse) response;
        res.setStatus(404);
        res.setContentType("text/plain");
        res.getWriter().println("admin tasks are off; set FAIRQ_ADMIN_TASKS=true to enable them");
    }
}

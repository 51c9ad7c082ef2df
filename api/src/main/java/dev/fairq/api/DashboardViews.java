package dev.fairq.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonUnwrapped;
import io.swagger.v3.oas.annotations.media.Schema;

import java.time.Instant;
import java.util.List;

/** The JSON of GET /v1/dashboard and GET /v1/admin/overview, as {@link DashboardFigures} assembles it. */
final class DashboardViews {
    private DashboardViews() {}

    @Schema(name = "TenantDashboard")
    public record TenantDashboard(Instant generatedAt, @JsonUnwrapped Summary summary,
                                  @Schema(description = "one point per minute of the last hour, oldest first") List<SeriesPoint> series,
                                  List<RunningJob> runningJobs, List<BlockedKey> blockedKeys, List<DeadLetter> deadLetters,
                                  @Schema(description = "the tenant's schedules, next to fire first")
                                  List<dev.fairq.scheduler.ScheduleInfo> schedules,
                                  @Schema(description = "the concurrency and fairness keys with the most jobs running or "
                                          + "admitted now (at most 10)")
                                  List<KeyUsage> topKeys,
                                  @Schema(description = "the tenant's newest jobs, any status (at most 10), as GET /v1/jobs?limit=10 "
                                          + "lists them: the page needs one request a refresh, which its API limit counts")
                                  List<RecentJob> recentJobs) {}

    /** One of the tenant's newest jobs, as the dashboard lists them. */
    @Schema(name = "RecentJob")
    public record RecentJob(long id, String type, String queue, String status, int attempts, Instant createdAt) {}

    /** A key in use: its jobs running and admitted, and for a concurrency key its limit (null: unlimited). */
    @Schema(name = "KeyUsage")
    public record KeyUsage(@Schema(allowableValues = {"concurrency", "fairness"}) String kind, String key, long running,
                           long admitted, Integer limit,
                           @Schema(description = "a fairness key's weight within the tenant's share") Integer weight) {}

    @Schema(name = "Overview", description = "totals over the active tenants and one page of tenants, sorted "
            + "(over their share first, then by backlog, then by id)")
    public record Overview(Instant generatedAt, long windowMinutes, long shareWindowMinutes,
                           @Schema(allowableValues = {"worker_time", "attempts_started"}) String workerShareBasis,
                           OverviewTotals totals, Page page, List<OverviewRow> tenants) {}

    @Schema(name = "OverviewTotals", description = "over every tenant active in the share window (from the rollup)")
    public record OverviewTotals(long registeredTenants, long activeTenants, long overShareTenants, long pending,
                                 long ready, long running, @JsonProperty("started_last_5m") long startedLast5m,
                                 @JsonProperty("worker_time_ms_last_5m") long workerTimeMsLast5m) {}

    @Schema(name = "OverviewPage")
    public record Page(int offset, int limit, @Schema(description = "tenants in the list being paged") int total,
                       @Schema(description = "offset of the next page, null on the last") Integer nextOffset,
                       @Schema(description = "the id prefix searched for, null without a search") String search) {}

    @Schema(name = "OverviewRow")
    public record OverviewRow(@JsonUnwrapped Summary summary, boolean active, Double workerShare, Double weightShare,
                              @Schema(description = "takes more than 1.5 times its weight share, and more than 10% of the worker share, while others are active") boolean overShare) {}

    /** The figures both pages show for one tenant. */
    @Schema(name = "DashboardSummary")
    public record Summary(String tenant, Counts counts, Long oldestPendingAgeMs, long blockedOrderingKeys,
                          Double successRate, Double failureRate, Limits limits, Usage usage,
                          @JsonProperty("worker_time_ms_last_5m") long workerTimeMsLast5m,
                          @JsonProperty("started_last_5m") long startedLast5m) {}

    @Schema(name = "DashboardCounts")
    public record Counts(long pending, long ready, long running, long dead, long startedLastHour, long succeededLastHour,
                         long failedLastHour, long deadLastHour) {}

    @Schema(name = "DashboardLimits")
    public record Limits(int weight, int maxRunning, double ratePerSecond, int burst, int maxQueued, boolean paused) {}

    @Schema(name = "DashboardUsage")
    public record Usage(long running, double startRatePerSecond, long queued) {}

    @Schema(name = "SeriesPoint", description = "depths are null for a minute no rollup saw")
    public record SeriesPoint(Instant minute, long started, long succeeded, long failed, long dead, Integer pending,
                              Integer ready, Integer running, Long oldestPendingAgeMs) {}

    @Schema(name = "RunningJob")
    public record RunningJob(long id, String type, String queue, int attempt, int maxAttempts, String orderingKey,
                             Instant startedAt, long ageMs) {}

    @Schema(name = "DashboardBlockedKey")
    public record BlockedKey(String orderingKey, long deadJobId, Instant deadSince, String lastError, long waiting) {}

    @Schema(name = "DeadLetter")
    public record DeadLetter(long id, String type, String queue, int attempts, String orderingKey, Instant finishedAt,
                             String lastError) {}
}

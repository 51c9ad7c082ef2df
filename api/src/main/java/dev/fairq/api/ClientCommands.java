package dev.fairq.api;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fairq.client.FairqClient;
import dev.fairq.client.FairqException;
import dev.fairq.client.Model;
import dev.fairq.client.NewJob;
import io.dropwizard.core.cli.Cli;
import io.dropwizard.core.cli.Command;
import io.dropwizard.core.setup.Bootstrap;
import net.sourceforge.argparse4j.impl.Arguments;
import net.sourceforge.argparse4j.inf.Namespace;
import net.sourceforge.argparse4j.inf.Subparser;
import net.sourceforge.argparse4j.inf.Subparsers;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The command line for the everyday actions, against a running server through {@link FairqClient}:
 * {@code jobs submit|get|list|cancel|retry|explain}, {@code stats}, and for admins
 * {@code tenants list|get|set|keys create|keys revoke}. {@code FAIRQ_URL} (default http://localhost:8080)
 * and {@code FAIRQ_TOKEN} say where and as whom. Human-readable output by default; {@code --json} prints the
 * API's answer as it came, one document. Any error is one clear message on stderr and exit status 1.
 */
final class ClientCommands {
    static final String DEFAULT_URL = "http://localhost:8080";
    private static final ObjectMapper JSON = FairqClient.mapper();

    private ClientCommands() {}

    static void addTo(Bootstrap<?> bootstrap, Map<String, String> env, PrintStream out) {
        bootstrap.addCommand(new Jobs(env, out));
        bootstrap.addCommand(new Stats(env, out));
        bootstrap.addCommand(new Schedules(env, out));
        bootstrap.addCommand(new Tenants(env, out));
        bootstrap.addCommand(new AdminTokens(env, out));
    }

    /** A mistake in the arguments that argparse cannot see (e.g. a payload that is not JSON). */
    static final class UsageException extends RuntimeException {
        UsageException(String message) {
            super(message);
        }
    }

    private abstract static class ClientCommand extends Command {
        private final Map<String, String> env;
        final PrintStream out;

        ClientCommand(String name, String description, Map<String, String> env, PrintStream out) {
            super(name, description);
            this.env = env;
            this.out = out;
        }

        @Override
        public final void run(Bootstrap<?> bootstrap, Namespace ns) throws Exception {
            String token = env.get("FAIRQ_TOKEN");
            if (token == null || token.isBlank()) {
                throw new UsageException("FAIRQ_TOKEN is not set: a tenant key (fqk_...) for jobs, stats and schedules, the admin token for tenants");
            }
            // a line break pasted with the key (FAIRQ_TOKEN=$(cat key) keeps none, an editor's copy may) had ended as
            // "IllegalArgumentException: invalid header value" from java.net.http, naming neither the variable nor the fix
            if (!FairqClient.sendable(token)) {
                throw new UsageException("FAIRQ_TOKEN holds a control character (a line break?): set it to the key or token alone");
            }
            String url = env.getOrDefault("FAIRQ_URL", DEFAULT_URL);
            if (!url.isBlank() && !url.matches("(?i)https?://.+")) {
                throw new UsageException("FAIRQ_URL must be an http:// or https:// URL, such as " + DEFAULT_URL + ", not '" + url + "'");
            }
            FairqClient client;
            try {
                client = FairqClient.builder(url.isBlank() ? DEFAULT_URL : url).token(token.strip()).build();
            } catch (IllegalArgumentException e) {
                throw new UsageException("FAIRQ_URL: " + e.getMessage());
            }
            execute(client, ns, Boolean.TRUE.equals(ns.getBoolean("json")));
        }

        abstract void execute(FairqClient client, Namespace ns, boolean json);

        /** One message, never a stack trace: the server's error and the fields it named. */
        @Override
        public void onError(Cli cli, Namespace ns, Throwable e) {
            java.io.PrintWriter err = cli.getStdErr();
            if (e instanceof FairqException f) {
                err.println("fairq: " + f.getMessage() + (f.status() > 0 ? " (HTTP " + f.status() + ")" : ""));
                for (Model.FieldError fe : f.fieldErrors()) err.println("  " + fe.field() + ": " + fe.message());
                if (f instanceof FairqException.QueueFullException q) err.println("  try again in " + q.retryAfter().toSeconds() + " s");
            } else if (e instanceof UsageException) {
                err.println("fairq: " + e.getMessage());
            } else {
                err.println("fairq: " + e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage()));
            }
        }

        /** With --json, prints the answer as it is and says so: the caller then prints nothing else. */
        boolean printedAsJson(boolean json, JsonNode answer) {
            if (json) print(answer);
            return json;
        }

        void print(JsonNode answer) {
            try {
                out.println(JSON.writerWithDefaultPrettyPrinter().writeValueAsString(answer));
            } catch (JsonProcessingException e) {
                throw new IllegalStateException(e);
            }
        }

        <T> T read(JsonNode node, Class<T> type) {
            try {
                return JSON.treeToValue(node, type);
            } catch (JsonProcessingException e) {
                throw new UsageException("unexpected answer from the server: " + e.getOriginalMessage());
            }
        }

        static Subparser leaf(Subparsers parent, String name, String help) {
            Subparser p = parent.addParser(name).help(help).description(help);
            p.addArgument("--json").action(Arguments.storeTrue()).help("print the API's JSON answer (one document)");
            return p;
        }

        /** As strict as the API's own reading: one value, each field once, no lone surrogate, numbers as given. */
        static JsonNode parseJson(String what, String text) {
            if (text == null || text.isBlank()) throw new UsageException(what + " is empty: give a JSON value, e.g. '{}'");
            try {
                return JsonBodyReader.readValue(text);
            } catch (ApiException e) {
                if (e.errors.isEmpty()) throw new UsageException(what + " is not JSON: " + e.getMessage().replaceFirst("^malformed JSON: ", ""));
                String field = e.errors.get(0).field();
                throw new UsageException(what + ": " + ("(body)".equals(field) ? "" : field + " ") + e.errors.get(0).message());
            }
        }

        /** set: PUT with --replace; else PATCH (only the fields given), and PUT when there is nothing to patch yet. */
        static FairqClient.Answer setOrCreate(FairqClient client, String path, JsonNode body, boolean replace) {
            if (!replace) {
                try {
                    return client.send("PATCH", path, body, false);
                } catch (FairqException.NotFoundException e) {
                    // not there yet: created below
                }
            }
            if (replace) return client.send("PUT", path, body, true);
            // create only: an admin who created it between our PATCH and now keeps what they set (a plain PUT had
            // replaced it with the defaults plus our fields); then ours is a change of theirs, as if it had existed
            try {
                return client.send("PUT", path, body, true, Map.of("If-None-Match", "*"));
            } catch (FairqException.PreconditionFailedException e) {
                return client.send("PATCH", path, body, false);
            }
        }

        /** A list's ?limit=&after= from --limit and --after. */
        static String pageQuery(Namespace ns) {
            StringBuilder query = new StringBuilder();
            if (ns.getInt("limit") != null) query.append("?limit=").append(ns.getInt("limit"));
            if (ns.getString("after") != null) query.append(query.length() == 0 ? '?' : '&').append("after=").append(enc(ns.getString("after")));
            return query.toString();
        }

        /** The command for the next page, when the answer has a next. */
        void printMore(String command, Namespace ns, JsonNode answer) {
            JsonNode next = answer.get("next");
            if (next != null && !next.isNull()) {
                out.println("more: " + command + (ns.getInt("limit") == null ? "" : " --limit " + ns.getInt("limit"))
                        + " --after " + Jobs.shellQuoted(next.asText()));
            }
        }

        /** A tenant id argument, checked here: '' or '../jobs/5' would otherwise name another endpoint. */
        static String tenantId(String what, String id) {
            if (id == null || !AdminTenantsResource.TENANT_ID.matcher(id).matches()) {
                throw new UsageException(what + " '" + id + "' is not a tenant id: 1-63 lower-case letters, digits, '_' or '-', "
                        + "starting with a letter or digit");
            }
            return id;
        }

        void job(Model.Job j) {
            out.printf("job %d: %s%n", j.id(), j.status());
            line("type", j.type());
            line("queue", j.queue());
            line("priority", j.priority());
            line("attempts", j.attempts() + " of " + j.maxAttempts());
            // what the submit's --timeout-ms and --payload-version set, and a cancel's request (cancel says "jobs get
            // shows it"): left out, a person could not see them without --json. Defaults (1, none) are not printed.
            line("timeout_ms", j.timeoutMs());
            line("payload_version", j.payloadVersion() == null || j.payloadVersion() == 1 ? null : j.payloadVersion());
            line("snoozes", j.snoozes() == null || j.snoozes() == 0 ? null : j.snoozes());
            line("job_key", j.jobKey());
            line("ordering_key", j.orderingKey());
            line("concurrency_key", j.concurrencyKey());
            line("fairness_key", j.fairnessKey());
            line("created_at", j.createdAt());
            line("run_at", j.runAt());
            line("started_at", j.startedAt());
            line("finished_at", j.finishedAt());
            line("cancel_requested_at", j.cancelRequestedAt());
            line("last_error", j.lastError());
            line("payload", j.payload());
            printLines();
        }

        /** Label and value lines waiting for {@link #printLines}, which sets them in one column. */
        private final List<String[]> lines = new ArrayList<>();

        void line(String name, Object value) {
            if (value != null) lines.add(new String[] {name + ":", String.valueOf(value)});
        }

        /**
         * Prints the lines given since the last call, the values in one column after the longest label: a fixed
         * width of 13 pushed the values of concurrency_key (16) and min_schedule_interval_s (24) out of line.
         */
        void printLines() {
            int width = 1;
            for (String[] l : lines) width = Math.max(width, l[0].length());
            for (String[] l : lines) out.printf("  %-" + width + "s %s%n", l[0], l[1]);
            lines.clear();
        }
    }

    /** {@code jobs submit|get|list|cancel|retry|explain}: a tenant's own jobs (FAIRQ_TOKEN is its key). */
    static final class Jobs extends ClientCommand {
        Jobs(Map<String, String> env, PrintStream out) {
            super("jobs", "A tenant's jobs through the API (FAIRQ_URL, FAIRQ_TOKEN = the tenant's key)", env, out);
        }

        @Override
        public void configure(Subparser subparser) {
            Subparsers actions = subparser.addSubparsers().title("actions").dest("action").metavar("ACTION");
            Subparser submit = leaf(actions, "submit", "submit a job");
            submit.addArgument("--type").required(true).help("the job type (its handler)");
            submit.addArgument("--payload").required(true).help("the payload, any JSON value, e.g. '{\"to\": \"a@b.c\"}'");
            submit.addArgument("--job-key").help("idempotency key: resubmitting answers the first job");
            submit.addArgument("--ordering-key").help("jobs with the same key run one at a time, in order");
            submit.addArgument("--concurrency-key").help("a shared resource: the tenant's concurrency_limits caps its jobs at once");
            submit.addArgument("--fairness-key").help("the tenant's customer the job is for: its share is split among them");
            submit.addArgument("--queue").help("default: default");
            submit.addArgument("--priority").type(Integer.class).help("-100 to 100, higher first (default 0)");
            submit.addArgument("--delay-ms").type(Long.class).help("start after this many milliseconds");
            submit.addArgument("--max-attempts").type(Integer.class).help("1 to 1000 (default 25)");
            submit.addArgument("--timeout-ms").type(Long.class).help("time limit of each attempt, 1 ms to 24 h (default: the type's)");
            submit.addArgument("--payload-version").type(Integer.class).help("the version of the payload's shape, 1 to 1000000 (default 1)");
            for (String a : List.of("get", "cancel", "retry", "explain")) {
                leaf(actions, a, switch (a) {
                    case "get" -> "show a job";
                    case "cancel" -> "cancel a job (a running one is asked to stop)";
                    case "retry" -> "run a dead or cancelled job again";
                    default -> "say why a job is not running";
                }).addArgument("id").metavar("ID").type(Long.class).help("the job id");
            }
            Subparser list = leaf(actions, "list", "list jobs, newest first (one page)");
            list.addArgument("--status").choices("pending", "ready", "running", "succeeded", "dead", "cancelled");
            list.addArgument("--queue");
            list.addArgument("--type");
            list.addArgument("--limit").type(Integer.class).help("jobs per page, 1-500 (default 50)");
            list.addArgument("--after").help("the next page: the cursor the previous page printed");
        }

        @Override
        void execute(FairqClient client, Namespace ns, boolean json) {
            String action = ns.getString("action");
            switch (action) {
                case "submit" -> {
                    NewJob job = NewJob.of(ns.getString("type"), parseJson("--payload", ns.getString("payload")))
                            .jobKey(ns.getString("job_key")).orderingKey(ns.getString("ordering_key"))
                            .queue(ns.getString("queue")).priority(ns.getInt("priority")).delayMs(ns.getLong("delay_ms"))
                            .maxAttempts(ns.getInt("max_attempts")).timeoutMs(ns.getLong("timeout_ms"))
                            .payloadVersion(ns.getInt("payload_version"))
                            .concurrencyKey(ns.getString("concurrency_key")).fairnessKey(ns.getString("fairness_key"));
                    FairqClient.Answer a = client.send("POST", "/v1/jobs", job, job.jobKey() != null);
                    if (printedAsJson(json, a.body())) return;
                    Model.Job j = read(a.body(), Model.Job.class);
                    out.println(a.status() == 200
                            ? "job " + j.id() + " already exists for job_key " + j.jobKey() + " (an identical earlier request; nothing new)"
                            : "job " + j.id() + " submitted");
                    job(j);
                }
                case "get", "cancel", "retry" -> {
                    long id = ns.getLong("id");
                    FairqClient.Answer a = action.equals("get") ? client.send("GET", "/v1/jobs/" + id, null, true)
                            : client.send("POST", "/v1/jobs/" + id + "/" + action, null, false);
                    if (printedAsJson(json, a.body())) return;
                    Model.Job j = read(a.body(), Model.Job.class);
                    if (action.equals("retry")) out.println("queued again");
                    if (action.equals("cancel")) out.println(cancelled(a.status(), j.status()));
                    job(j);
                }
                case "explain" -> {
                    JsonNode body = client.send("GET", "/v1/jobs/" + ns.getLong("id") + "/explain", null, true).body();
                    if (printedAsJson(json, body)) return;
                    Model.Explanation e = read(body, Model.Explanation.class);
                    out.printf("job %d is %s: %s%n", e.jobId(), e.status(), e.message());
                    line("reason", e.reason());
                    if (e.data() != null) e.data().fields().forEachRemaining(f -> line(f.getKey(), f.getValue().isTextual() ? f.getValue().asText() : f.getValue()));
                    printLines();
                }
                case "list" -> {
                    FairqClient.JobFilter filter = FairqClient.JobFilter.all().withStatus(ns.getString("status"))
                            .queue(ns.getString("queue")).type(ns.getString("type"));
                    JsonNode body = client.send("GET", "/v1/jobs" + filter.query(ns.getString("after"), ns.getInt("limit")), null, true).body();
                    if (printedAsJson(json, body)) return;
                    Model.JobPage page = read(body, Model.JobPage.class);
                    out.printf("%-10s %-10s %-24s %-12s %-9s %s%n", "ID", "STATUS", "TYPE", "QUEUE", "ATTEMPTS", "CREATED");
                    for (Model.Job j : page.jobs()) {
                        out.printf("%-10d %-10s %-24s %-12s %-9s %s%n", j.id(), j.status(), j.type(), j.queue(),
                                j.attempts() + "/" + j.maxAttempts(), j.createdAt());
                    }
                    if (page.jobs().isEmpty()) out.println("(no jobs)");
                    if (page.next() != null) out.println("more: jobs list" + again(ns) + " --after " + page.next());
                }
                default -> throw new UsageException("unknown action " + action);
            }
        }

        /** What a cancel did, from its answer: 202 asks a running job to stop; 200 is the job as it is now. */
        static String cancelled(int status, String jobStatus) {
            if (status == 202) return "cancel requested: the job is running and ends cancelled when its handler stops (jobs get shows it)";
            if ("cancelled".equals(jobStatus)) return "cancelled";
            return "not cancelled: the job had already ended (" + jobStatus + ")";
        }

        /** The list's filters, to print the next page's command whole. */
        private static String again(Namespace ns) {
            StringBuilder b = new StringBuilder();
            for (String f : List.of("status", "queue", "type", "limit")) {
                Object v = ns.get(f);
                if (v != null) b.append(" --").append(f).append(' ').append(shellQuoted(String.valueOf(v)));
            }
            return b.toString();
        }

        private static String shellQuoted(String s) {
            return s.matches("[A-Za-z0-9_.:-]+") ? s : "'" + s.replace("'", "'\\''") + "'";
        }
    }

    private static String enc(String s) {
        return java.net.URLEncoder.encode(s, java.nio.charset.StandardCharsets.UTF_8);
    }

    /** {@code stats}: the tenant's counts and limits. */
    static final class Stats extends ClientCommand {
        Stats(Map<String, String> env, PrintStream out) {
            super("stats", "The tenant's counts and limits (FAIRQ_TOKEN = the tenant's key)", env, out);
        }

        @Override
        public void configure(Subparser subparser) {
            subparser.addArgument("--json").action(Arguments.storeTrue()).help("print the API's JSON answer (one document)");
        }

        @Override
        void execute(FairqClient client, Namespace ns, boolean json) {
            JsonNode body = client.send("GET", "/v1/stats", null, true).body();
            if (printedAsJson(json, body)) return;
            Model.Stats s = read(body, Model.Stats.class);
            out.println("tenant " + s.tenant());
            line("pending", s.pending());
            line("ready", s.ready());
            line("running", s.running());
            line("succeeded", s.succeededLast5m() + " in the last 5 minutes");
            line("dead", s.deadTotal() + " (" + s.deadLast5m() + " in the last 5 minutes)");
            line("oldest", s.oldestPendingAgeMs() == null ? "nothing pending" : s.oldestPendingAgeMs() + " ms pending");
            line("blocked keys", s.blockedOrderingKeys());
            printLines();
            Model.Limits l = s.limits();
            out.printf("limits: weight %d, rate %s/s, burst %d, max_running %d, max_queued %d%s%n", l.weight(),
                    l.ratePerSecond(), l.burst(), l.maxRunning(), l.maxQueued(), l.paused() ? ", paused" : "");
        }
    }

    /** {@code schedules list|get|set|pause|resume|trigger|delete}: a tenant's recurring schedules (FAIRQ_TOKEN is its key). */
    static final class Schedules extends ClientCommand {
        Schedules(Map<String, String> env, PrintStream out) {
            super("schedules", "A tenant's recurring schedules (FAIRQ_URL, FAIRQ_TOKEN = the tenant's key)", env, out);
        }

        @Override
        public void configure(Subparser subparser) {
            Subparsers actions = subparser.addSubparsers().title("actions").dest("action").metavar("ACTION");
            Subparser list = leaf(actions, "list", "the tenant's schedules by name (one page)");
            list.addArgument("--limit").type(Integer.class).help("schedules per page, 1-" + SchedulesResource.MAX_LIMIT
                    + " (default " + SchedulesResource.DEFAULT_LIMIT + ")");
            list.addArgument("--after").help("the next page: the name the previous page printed");
            for (String[] a : new String[][]{{"get", "a schedule, its next fires and its last fire"},
                    {"pause", "no fires until resumed (none are caught up on resume)"}, {"resume", "fire again"},
                    {"trigger", "enqueue the schedule's job now, besides its fires"}, {"delete", "delete the schedule"}}) {
                leaf(actions, a[0], a[1]).addArgument("name").metavar("NAME");
            }
            Subparser set = actions.addParser("set").help("create a schedule, or change the fields given (the others stay)")
                    .description("Creates the schedule if it does not exist (it needs cron, time_zone and job), else changes "
                            + "only the fields given. Prints the schedule; with --replace, fields left out take their defaults.");
            set.addArgument("name").metavar("NAME");
            set.addArgument("--json").dest("definition").metavar("SCHEDULE").required(true)
                    .help("the schedule as JSON, e.g. '{\"cron\": \"30 2 * * *\", \"time_zone\": \"Europe/Berlin\", "
                            + "\"job\": {\"type\": \"report\"}}'");
            set.addArgument("--replace").action(Arguments.storeTrue()).help("replace the schedule (PUT): fields left out take the defaults");
        }

        @Override
        void execute(FairqClient client, Namespace ns, boolean json) {
            String action = ns.getString("action");
            switch (action) {
                case "list" -> {
                    JsonNode body = client.send("GET", "/v1/schedules" + pageQuery(ns), null, true).body();
                    if (printedAsJson(json, body)) return;
                    out.printf("%-32s %-20s %-20s %-7s %-21s %s%n", "NAME", "CRON", "TIME_ZONE", "PAUSED", "NEXT_FIRE", "LAST_FIRE");
                    for (JsonNode n : body.get("schedules")) {
                        Model.Schedule x = read(n, Model.Schedule.class);
                        out.printf("%-32s %-20s %-20s %-7s %-21s %s%n", x.name(), x.cron(), x.timeZone(), x.paused() ? "yes" : "no",
                                x.nextFires().isEmpty() ? "-" : x.nextFires().get(0), lastFire(x));
                    }
                    printMore("schedules list", ns, body);
                }
                case "get" -> schedule(client.send("GET", path(ns), null, true).body(), json, null);
                case "pause", "resume" -> schedule(client.send("PATCH", path(ns),
                        JSON.createObjectNode().put("paused", action.equals("pause")), false).body(), json,
                        action.equals("pause") ? "paused" : "resumed");
                case "set" -> {
                    String path = path(ns);
                    JsonNode definition = parseJson("--json", ns.getString("definition"));
                    if (!definition.isObject()) {
                        throw new UsageException("--json must be a JSON object, e.g. '{\"cron\": \"@daily\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"report\"}}'");
                    }
                    FairqClient.Answer a = setOrCreate(client, path, definition, Boolean.TRUE.equals(ns.getBoolean("replace")));
                    schedule(a.body(), false, a.status() == 201 ? "created" : "updated"); // --json carried the schedule
                }
                case "trigger" -> {
                    FairqClient.Answer a = client.send("POST", path(ns) + "/trigger", null, false);
                    if (printedAsJson(json, a.body())) return;
                    job(read(a.body(), Model.Job.class));
                }
                case "delete" -> {
                    client.send("DELETE", path(ns), null, true);
                    if (printedAsJson(json, JSON.createObjectNode().put("deleted", ns.getString("name")))) return;
                    out.println("schedule " + ns.getString("name") + " deleted");
                }
                default -> throw new UsageException("unknown action " + action);
            }
        }

        /** The schedule's path, its name checked here: '' or '../jobs' would otherwise name another endpoint. */
        private static String path(Namespace ns) {
            String name = ns.getString("name");
            if (name == null || !dev.fairq.scheduler.ScheduleDefinition.NAME.matcher(name).matches()) {
                throw new UsageException("NAME '" + name + "' is not a schedule name: 1-" + dev.fairq.schema.JobRequest.MAX_NAME_LENGTH
                        + " letters, digits, '_', '.', ':' or '-', starting with a letter or digit");
            }
            return "/v1/schedules/" + enc(name);
        }

        private static String lastFire(Model.Schedule x) {
            Model.Fire f = x.lastFire();
            if (f == null) return "-";
            return f.fireAt() + " " + f.outcome() + (f.jobId() == null ? "" : " job " + f.jobId()
                    + (f.jobStatus() == null ? "" : " " + f.jobStatus()));
        }

        private void schedule(JsonNode body, boolean json, String verb) {
            if (printedAsJson(json, body)) return;
            Model.Schedule x = read(body, Model.Schedule.class);
            out.println("schedule " + x.name() + (verb == null ? "" : " " + verb));
            line("cron", x.cron());
            line("time_zone", x.timeZone());
            line("job", x.job());
            line("paused", x.paused());
            line("missed_runs", x.missedRuns());
            line("overlap", x.overlap());
            line("start_at", x.startAt());
            line("end_at", x.endAt());
            line("next_fires", x.nextFires().isEmpty() ? "-" : x.nextFires().stream().map(String::valueOf)
                    .collect(java.util.stream.Collectors.joining(", ")));
            line("last_fire", lastFire(x));
            line("fired", x.fired());
            line("skipped", x.skipped());
            printLines();
        }
    }

    /** {@code tenants list|get|set|keys create|keys revoke}: the admin's (FAIRQ_TOKEN is the admin token). */
    static final class Tenants extends ClientCommand {
        Tenants(Map<String, String> env, PrintStream out) {
            super("tenants", "Tenants, their limits and keys (FAIRQ_URL, FAIRQ_TOKEN = the admin token)", env, out);
        }

        @Override
        public void configure(Subparser subparser) {
            Subparsers actions = subparser.addSubparsers().title("actions").dest("action").metavar("ACTION");
            Subparser list = leaf(actions, "list", "the tenants and their limits by id (one page)");
            list.addArgument("--limit").type(Integer.class).help("tenants per page, 1-1000 (default 100)");
            list.addArgument("--after").help("the next page: the id the previous page printed");
            leaf(actions, "get", "a tenant's limits").addArgument("id").metavar("ID");
            Subparser set = actions.addParser("set").help("create a tenant, or change the limits given (the others stay)")
                    .description("Creates the tenant if it does not exist (limits left out take the defaults), else changes "
                            + "only the limits given. Prints the tenant; with --replace, limits left out go back to the defaults.");
            set.addArgument("id").metavar("ID");
            set.addArgument("--json").dest("limits").metavar("LIMITS").required(true)
                    .help("the limits as JSON, e.g. '{\"max_running\": 20, \"rate_per_second\": 100}'");
            set.addArgument("--replace").action(Arguments.storeTrue()).help("replace every limit (PUT): the rest take the defaults");
            Subparser keys = actions.addParser("keys").help("a tenant's API keys");
            Subparsers keyActions = keys.addSubparsers().title("key actions").dest("key_action").metavar("KEY_ACTION");
            leaf(keyActions, "create", "a new key for the tenant, printed once").addArgument("tenant").metavar("TENANT");
            Subparser revoke = leaf(keyActions, "revoke", "revoke a key at once");
            revoke.addArgument("tenant").metavar("TENANT");
            revoke.addArgument("key_id").metavar("KEY_ID").help("key_..., as keys list or create printed it");
            leaf(keyActions, "list", "the tenant's keys (never the keys themselves)").addArgument("tenant").metavar("TENANT");
        }

        @Override
        void execute(FairqClient client, Namespace ns, boolean json) {
            String action = ns.getString("action");
            switch (action) {
                case "list" -> {
                    JsonNode body = client.send("GET", "/v1/admin/tenants" + pageQuery(ns), null, true).body();
                    if (printedAsJson(json, body)) return;
                    out.printf("%-24s %6s %10s %8s %11s %11s %s%n", "ID", "WEIGHT", "RATE/S", "BURST", "MAX_RUNNING", "MAX_QUEUED", "PAUSED");
                    for (JsonNode t : body.get("tenants")) {
                        Model.Tenant x = read(t, Model.Tenant.class);
                        out.printf("%-24s %6d %10s %8d %11d %11d %s%n", x.id(), x.weight(), x.ratePerSecond(), x.burst(),
                                x.maxRunning(), x.maxQueued(), x.paused() ? "yes" : "no");
                    }
                    printMore("tenants list", ns, body);
                }
                case "get" -> tenant(client.send("GET", "/v1/admin/tenants/" + tenantId("ID", ns.getString("id")), null, true).body(), json, null);
                case "set" -> {
                    String path = "/v1/admin/tenants/" + tenantId("ID", ns.getString("id"));
                    JsonNode limits = parseJson("--json", ns.getString("limits"));
                    if (!limits.isObject()) throw new UsageException("--json must be a JSON object of limits, e.g. '{\"max_running\": 20}'");
                    FairqClient.Answer a = setOrCreate(client, path, limits, Boolean.TRUE.equals(ns.getBoolean("replace")));
                    tenant(a.body(), false, a.status() == 201 ? "created" : "updated");
                }
                case "keys" -> keys(client, ns, json);
                default -> throw new UsageException("unknown action " + action);
            }
        }

        private void keys(FairqClient client, Namespace ns, boolean json) {
            String tenant = tenantId("TENANT", ns.getString("tenant"));
            String action = ns.getString("key_action");
            switch (action) {
                case "create" -> {
                    JsonNode body = client.send("POST", "/v1/admin/tenants/" + enc(tenant) + "/keys", null, false).body();
                    if (printedAsJson(json, body)) return;
                    Model.NewKey k = read(body, Model.NewKey.class);
                    out.println("key " + k.keyId() + " for tenant " + k.tenant() + " (shown once: only its hash is kept)");
                    out.println(k.key());
                }
                case "revoke" -> {
                    client.send("DELETE", "/v1/admin/tenants/" + enc(tenant) + "/keys/" + enc(ns.getString("key_id")), null, true);
                    if (printedAsJson(json, JSON.createObjectNode().put("revoked", ns.getString("key_id")).put("tenant", tenant))) return;
                    out.println("key " + ns.getString("key_id") + " of tenant " + tenant + " revoked");
                }
                case "list" -> {
                    JsonNode body = client.send("GET", "/v1/admin/tenants/" + enc(tenant) + "/keys", null, true).body();
                    if (printedAsJson(json, body)) return;
                    out.printf("%-20s %-28s %s%n", "KEY_ID", "CREATED", "REVOKED");
                    for (Model.ApiKey k : read(body.get("keys"), new TypeReference<List<Model.ApiKey>>() { })) {
                        out.printf("%-20s %-28s %s%n", k.keyId(), k.createdAt(), k.revokedAt() == null ? "-" : k.revokedAt());
                    }
                }
                default -> throw new UsageException("unknown key action " + action);
            }
        }

        private <T> T read(JsonNode node, TypeReference<T> type) {
            return JSON.convertValue(node, type);
        }

        private void tenant(JsonNode body, boolean json, String verb) {
            if (printedAsJson(json, body)) return;
            Model.Tenant t = read(body, Model.Tenant.class);
            out.println("tenant " + t.id() + (verb == null ? "" : " " + verb));
            line("weight", t.weight());
            line("rate_per_second", t.ratePerSecond());
            line("burst", t.burst());
            line("max_running", t.maxRunning());
            line("max_queued", t.maxQueued());
            line("paused", t.paused());
            line("webhook_allow", t.webhookAllow().isEmpty() ? "-" : String.join(", ", t.webhookAllow()));
            line("max_schedules", t.maxSchedules());
            line("min_schedule_interval_s", t.minScheduleIntervalS());
            line("api_rate_per_second", t.apiRatePerSecond());
            line("api_burst", t.apiBurst());
            line("concurrency_limits", t.concurrencyLimits() == null || t.concurrencyLimits().isEmpty() ? "-"
                    : t.concurrencyLimits().toString());
            line("key_weights", t.keyWeights() == null || t.keyWeights().isEmpty() ? "-" : t.keyWeights().toString());
            line("updated_at", t.updatedAt());
            printLines();
        }
    }

    /** {@code admin-tokens create|list|revoke}: named admin tokens (FAIRQ_TOKEN is an admin token). */
    static final class AdminTokens extends ClientCommand {
        AdminTokens(Map<String, String> env, PrintStream out) {
            super("admin-tokens", "Named admin tokens (FAIRQ_URL, FAIRQ_TOKEN = an admin token)", env, out);
        }

        @Override
        public void configure(Subparser subparser) {
            Subparsers actions = subparser.addSubparsers().title("actions").dest("action").metavar("ACTION");
            leaf(actions, "create", "a new admin token with a name (the audit log's actor), printed once")
                    .addArgument("name").metavar("NAME");
            leaf(actions, "list", "every admin token (never the tokens themselves)");
            leaf(actions, "revoke", "revoke an admin token at once").addArgument("id").metavar("ID")
                    .help("adm_..., as list or create printed it");
        }

        @Override
        void execute(FairqClient client, Namespace ns, boolean json) {
            String action = ns.getString("action");
            switch (action) {
                case "create" -> {
                    JsonNode body = client.send("POST", "/v1/admin/tokens",
                            JSON.createObjectNode().put("name", ns.getString("name")), false).body();
                    if (printedAsJson(json, body)) return;
                    Model.NewAdminToken t = read(body, Model.NewAdminToken.class);
                    out.println("admin token " + t.id() + " named " + t.name() + " (shown once: only its hash is kept)");
                    out.println(t.token());
                }
                case "list" -> {
                    JsonNode body = client.send("GET", "/v1/admin/tokens", null, true).body();
                    if (printedAsJson(json, body)) return;
                    out.printf("%-22s %-28s %-16s %-28s %-28s %s%n", "ID", "NAME", "CREATED_BY", "CREATED", "REVOKED",
                            "REVOKED_BY");
                    for (JsonNode n : body.get("tokens")) {
                        Model.AdminToken t = read(n, Model.AdminToken.class);
                        out.printf("%-22s %-28s %-16s %-28s %-28s %s%n", t.id(), t.name(), t.createdBy(), t.createdAt(),
                                t.revokedAt() == null ? "-" : t.revokedAt(), t.revokedBy() == null ? "-" : t.revokedBy());
                    }
                }
                case "revoke" -> {
                    client.send("DELETE", "/v1/admin/tokens/" + enc(ns.getString("id")), null, true);
                    if (printedAsJson(json, JSON.createObjectNode().put("revoked", ns.getString("id")))) return;
                    out.println("admin token " + ns.getString("id") + " revoked");
                }
                default -> throw new UsageException("unknown action " + action);
            }
        }
    }
}

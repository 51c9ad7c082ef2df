package dev.fairq.schema;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.OptionalInt;
import java.util.regex.Pattern;

/**
 * A tenant's {@code webhook_allow} list: which destinations the built-in {@code http} job type may connect to.
 * One class for both sides: {@link #validate} when an admin writes a list (the API and tenants.yml), and
 * {@link #allows} when the worker decides whether to connect to an address it resolved.
 *
 * <p>An entry is one of (case-insensitive, each with an optional {@code :port} that restricts it to that port):
 * <ul>
 *   <li>a host name, {@code hooks.acme.example}: that host exactly;</li>
 *   <li>a wildcard domain, {@code *.acme.example}: any name under acme.example (not acme.example itself);</li>
 *   <li>an IP address, {@code 10.1.2.3}, {@code 2001:db8::1}, or {@code [2001:db8::1]:8443} (brackets needed
 *       when a port follows an IPv6 address);</li>
 *   <li>a CIDR range, {@code 10.0.0.0/8}, {@code fd00::/8}, or {@code [fd00::/8]:443}; the bits past the
 *       prefix must be zero, so a typo does not silently widen or move the range.</li>
 * </ul>
 * A host-name or wildcard entry without a port allows ports 80 and 443 only; an IP or CIDR entry without a port
 * allows any port (an admin writes those on purpose).
 *
 * <p>The rule ({@link #allows}): a connection to {@code address} for a URL naming {@code host:port} is allowed
 * when an IP or CIDR entry opens the address ({@link Range#opens}: contains it, and for a non-public address lies
 * wholly within its non-public block, so {@code 0.0.0.0/0} opens public addresses only) and its port, if any, is
 * the URL's, whatever the host name;
 * or when the address is public ({@link AddressRanges}) and a host-name or wildcard entry matches the host and
 * port. A host name never opens a non-public address: the tenant controls the DNS of its own names and could
 * point them at 127.0.0.1 or 169.254.169.254; only an admin-written address or range reaches those.
 *
 * <p>Lists stored before entries were validated may hold entries that do not parse; {@link #of} skips them
 * (they could never match anything).
 */
public final class WebhookAllowList {
    /** The ports a host-name or wildcard entry without {@code :port} allows. */
    public static final List<Integer> DEFAULT_HOST_PORTS = List.of(80, 443);
    /** Longest entry accepted (a 253-character name, a wildcard and a port fit). */
    public static final int MAX_ENTRY_LENGTH = 270;

    /** No '_': java.net.URI finds no host in a URL whose name has one, so such an entry could never match. */
    private static final Pattern LABEL = Pattern.compile("[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?");
    private static final Pattern DIGITS = Pattern.compile("[0-9]{1,5}");
    private static final Pattern NUMERIC_LABEL = Pattern.compile("[0-9]+|0x[0-9a-f]*");

    /** One parsed entry; {@code port} empty means the default ports of its kind. */
    public sealed interface Entry permits Host, Wildcard, Range {
        OptionalInt port();

        /** The entry as written, normalized (lower case, trimmed). */
        String text();

        default boolean allowsPort(int port) {
            OptionalInt p = port();
            if (p.isPresent()) return p.getAsInt() == port;
            return this instanceof Range || DEFAULT_HOST_PORTS.contains(port);
        }
    }

    /** {@code hooks.acme.example[:port]}. */
    public record Host(String name, OptionalInt port, String text) implements Entry {
        boolean matches(String host) {
            return name.equals(host);
        }
    }

    /** {@code *.acme.example[:port]}: {@code domain} is {@code acme.example}. */
    public record Wildcard(String domain, OptionalInt port, String text) implements Entry {
        boolean matches(String host) {
            return host.length() > domain.length() + 1 && host.endsWith("." + domain);
        }
    }

    /** An IP address ({@code prefixLength} 32 or 128) or a CIDR range. */
    public record Range(InetAddress network, int prefixLength, OptionalInt port, String text) implements Entry {
        public boolean contains(InetAddress address) {
            byte[] a = unmapped(address).getAddress();
            byte[] n = network.getAddress();
            if (a.length != n.length) return false;
            int full = prefixLength / 8;
            for (int i = 0; i < full; i++) if (a[i] != n[i]) return false;
            int rest = prefixLength % 8;
            if (rest == 0) return true;
            int mask = (0xff << (8 - rest)) & 0xff;
            return (a[full] & mask) == (n[full] & mask);
        }

        /**
         * Whether this entry lets a connection reach {@code address}: a public address it contains, but a
         * non-public one only when the whole range lies in that address's non-public block. {@code 10.0.0.0/8},
         * {@code 127.0.0.1} or {@code 169.254.169.254} name a block (or part of one) and open it; {@code 0.0.0.0/0},
         * {@code ::/0} or {@code 172.0.0.0/8} name none, so they open only their public addresses: an admin writing
         * "any address" means the internet, not the worker's loopback, its cloud metadata service or the database.
         */
        public boolean opens(InetAddress address) {
            if (!contains(address)) return false;
            String block = block(unmapped(address));
            return block == null || block.equals(block(edge(false))) && block.equals(block(edge(true)));
        }

        /** The range's first address, or its last. */
        private InetAddress edge(boolean last) {
            byte[] b = network.getAddress();
            if (last) {
                for (int i = 0; i < b.length; i++) {
                    int keep = Math.max(0, Math.min(8, prefixLength - i * 8));
                    b[i] |= (byte) (0xff >>> keep);
                }
            }
            try {
                return InetAddress.getByAddress(b);
            } catch (UnknownHostException e) {
                throw new IllegalStateException(e);
            }
        }

        /**
         * The non-public block an address is in, as {@link AddressRanges#nonPublicReason} names it (null for a
         * public one), the two single addresses inside a larger block counted as that block. The blocks are CIDR
         * ranges, so a range whose first and last addresses are in one block lies wholly within it.
         */
        private static String block(InetAddress a) {
            String reason = AddressRanges.nonPublicReason(a);
            if (reason == null) return null;
            if (reason.equals("unspecified 0.0.0.0")) return "this-network 0.0.0.0/8";
            if (reason.equals("unspecified ::") || reason.equals("loopback ::1")) return "deprecated IPv4-compatible ::/96";
            return reason;
        }
    }

    private final List<Entry> entries;

    private WebhookAllowList(List<Entry> entries) {
        this.entries = List.copyOf(entries);
    }

    // ------------------------------------------------------------------------------------------------ writing

    /**
     * The problems of a list an admin wants to store, one per bad entry, with the field {@code webhook_allow[i]}
     * and a message that names the entry; empty when every entry is valid. Callers with another field path
     * (tenants.yml) prefix it.
     */
    public static List<FieldError> validate(List<String> entries) {
        List<FieldError> errors = new ArrayList<>();
        for (int i = 0; i < entries.size(); i++) {
            try {
                parseEntry(entries.get(i));
            } catch (IllegalArgumentException e) {
                errors.add(new FieldError("webhook_allow[" + i + "]", e.getMessage()));
            }
        }
        return errors;
    }

    /**
     * Parses one entry.
     *
     * @throws IllegalArgumentException with a message that quotes the entry and says what is wrong
     */
    public static Entry parseEntry(String raw) {
        if (raw == null) throw new IllegalArgumentException("an entry is null (expected a host name, *.domain, IP address or CIDR range)");
        String text = raw.trim().toLowerCase(Locale.ROOT);
        String q = "'" + (raw.length() > 80 ? raw.substring(0, 80) + "..." : raw) + "'";
        if (text.isEmpty()) throw new IllegalArgumentException("an entry is empty");
        if (text.length() > MAX_ENTRY_LENGTH) throw new IllegalArgumentException(q + " is too long");
        if (text.contains("://") || text.contains("@") || text.contains("?") || text.contains("%")
                || text.chars().anyMatch(c -> c <= ' ')) {
            throw new IllegalArgumentException(q + " is not a host name, *.domain, IP address or CIDR range (write the "
                    + "host alone, without scheme, user, path or spaces, e.g. hooks.acme.example or 10.0.0.0/8:8080)");
        }

        String hostPart;
        String portPart = null;
        boolean bracketed = text.startsWith("[");
        if (bracketed) {
            int close = text.indexOf(']');
            if (close < 0) throw new IllegalArgumentException(q + ": '[' without ']'");
            hostPart = text.substring(1, close);
            String after = text.substring(close + 1);
            if (!after.isEmpty()) {
                if (!after.startsWith(":")) {
                    throw new IllegalArgumentException(q + ": only ':port' may follow ']' (write a range as [fd00::/8]:443)");
                }
                portPart = after.substring(1);
            }
        } else {
            int colons = (int) text.chars().filter(c -> c == ':').count();
            if (colons == 1) {
                int c = text.indexOf(':');
                hostPart = text.substring(0, c);
                portPart = text.substring(c + 1);
            } else {
                hostPart = text; // no port, or an unbracketed IPv6 address / range (which cannot carry one)
            }
        }
        OptionalInt port = OptionalInt.empty();
        if (portPart != null) {
            if (!DIGITS.matcher(portPart).matches() || Integer.parseInt(portPart) < 1 || Integer.parseInt(portPart) > 65535) {
                throw new IllegalArgumentException(q + ": the port must be a number from 1 to 65535"
                        + (hostPart.contains(":") && !bracketed ? " (put an IPv6 address in brackets before a port: [::1]:8080)" : ""));
            }
            port = OptionalInt.of(Integer.parseInt(portPart));
        }

        int slash = hostPart.indexOf('/');
        if (slash >= 0) {
            if (AddressRanges.literal(hostPart.substring(0, slash)) == null) {
                throw new IllegalArgumentException(q + ": only a CIDR range (10.0.0.0/8) may contain '/'; write a host "
                        + "name without a path");
            }
            return range(hostPart.substring(0, slash), hostPart.substring(slash + 1), port, text, q);
        }
        InetAddress literal = AddressRanges.literal(hostPart);
        if (literal != null) {
            if (bracketed && literal instanceof Inet4Address && !hostPart.contains(":")) {
                throw new IllegalArgumentException(q + ": brackets are for IPv6 addresses");
            }
            return new Range(literal, literal.getAddress().length * 8, port, text);
        }
        if (bracketed || hostPart.contains(":")) {
            throw new IllegalArgumentException(q + " is not a valid IPv6 address");
        }
        if (hostPart.startsWith("*.")) {
            String domain = hostName(hostPart.substring(2), q);
            if (!domain.contains(".")) {
                throw new IllegalArgumentException(q + ": a wildcard must be under a domain of at least two labels (*.acme.example)");
            }
            return new Wildcard(domain, port, text);
        }
        if (hostPart.contains("*")) {
            throw new IllegalArgumentException(q + ": '*' is allowed only as the first label (*.acme.example)");
        }
        return new Host(hostName(hostPart, q), port, text);
    }

    private static Range range(String address, String prefix, OptionalInt port, String text, String q) {
        InetAddress network = AddressRanges.literal(address);
        int bits = network.getAddress().length * 8;
        if (!DIGITS.matcher(prefix).matches() || Integer.parseInt(prefix) > bits) {
            throw new IllegalArgumentException(q + ": the prefix length must be a number from 0 to " + bits);
        }
        int length = Integer.parseInt(prefix);
        Range r = new Range(network, length, port, text);
        byte[] masked = network.getAddress();
        for (int i = 0; i < masked.length; i++) {
            int keep = Math.max(0, Math.min(8, length - i * 8));
            masked[i] &= (byte) ((0xff << (8 - keep)) & 0xff);
        }
        InetAddress base;
        try {
            base = InetAddress.getByAddress(masked);
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e);
        }
        if (!base.equals(network)) {
            throw new IllegalArgumentException(q + ": bits are set past the /" + length + " prefix (did you mean "
                    + base.getHostAddress() + "/" + length + "?)");
        }
        return r;
    }

    private static String hostName(String h, String q) {
        String name = h.endsWith(".") ? h.substring(0, h.length() - 1) : h;
        if (name.isEmpty() || name.length() > 253) {
            throw new IllegalArgumentException(q + " is not a host name, *.domain, IP address or CIDR range");
        }
        String[] labels = name.split("\\.", -1);
        for (String label : labels) {
            if (!LABEL.matcher(label).matches()) {
                throw new IllegalArgumentException(q + " is not a host name, *.domain, IP address or CIDR range"
                        + " (a host name is dot-separated labels of letters, digits and '-')");
            }
        }
        if (NUMERIC_LABEL.matcher(labels[labels.length - 1]).matches()) {
            // 127.1, 010.0.0.1, 0x7f.1: resolvers read these as addresses in ways that differ; write the address
            throw new IllegalArgumentException(q + " is not a valid IP address (write four decimal parts, e.g. 10.0.0.1)");
        }
        if (name.equals("localhost") || name.endsWith(".localhost")) {
            // RFC 6761: these always resolve to loopback, which a host-name entry never opens: it could never match
            throw new IllegalArgumentException(q + " names loopback, which a host-name entry never allows; write the "
                    + "address instead (127.0.0.1 or ::1, with :port to allow only that port)");
        }
        return name;
    }

    // ------------------------------------------------------------------------------------------------ reading

    /** The usable entries of a stored list; entries that do not parse are skipped (they cannot match). */
    public static WebhookAllowList of(List<String> entries) {
        List<Entry> parsed = new ArrayList<>();
        if (entries != null) {
            for (String e : entries) {
                try {
                    parsed.add(parseEntry(e));
                } catch (IllegalArgumentException skipped) {
                    // stored before validation existed; never matches
                }
            }
        }
        return new WebhookAllowList(parsed);
    }

    public List<Entry> entries() {
        return entries;
    }

    /**
     * Whether any entry could allow {@code host:port} once it is resolved: false means refuse without a DNS
     * lookup. {@code host} is the URL's host (IPv6 with or without brackets).
     */
    public boolean mayAllow(String host, int port) {
        String h = normalizeHost(host);
        InetAddress literal = AddressRanges.literal(h);
        for (Entry e : entries) {
            if (!e.allowsPort(port)) continue;
            if (e instanceof Range r && (literal == null || r.contains(literal))) return true;
            if (literal == null && e instanceof Host x && x.matches(h)) return true;
            if (literal == null && e instanceof Wildcard w && w.matches(h)) return true;
        }
        return false;
    }

    /** Whether a URL naming {@code host:port} may connect to {@code address} (see the class comment). */
    public boolean allows(String host, int port, InetAddress address) {
        return refusal(host, port, address) == null;
    }

    /** null when {@link #allows}, else why not, in words fit for the tenant (host, port and address only). */
    public String refusal(String host, int port, InetAddress address) {
        String h = normalizeHost(host);
        for (Entry e : entries) {
            if (e instanceof Range r && r.opens(address) && r.allowsPort(port)) return null;
        }
        String reason = AddressRanges.nonPublicReason(address);
        String ip = unmapped(address).getHostAddress();
        if (reason != null) {
            boolean otherPort = entries.stream().anyMatch(e -> e instanceof Range r && r.opens(address));
            if (otherPort) {
                return "address " + ip + " (" + reason + ") is on the webhook_allow list only for another port than " + port;
            }
            String wide = entries.stream().filter(e -> e instanceof Range r && r.contains(address)).map(Entry::text)
                    .findFirst().orElse(null);
            if (wide != null) {
                return "address " + ip + " (" + reason + ") is in '" + wide + "', but a range opens a non-public "
                        + "address only when it lies wholly within that address's block: add " + ip + " (or a range "
                        + "inside its block) to reach it";
            }
            return "address " + ip + " (" + reason + ") is not a public address, and only an IP or CIDR entry naming "
                    + "it allows it (a host name never does)";
        }
        if (AddressRanges.literal(h) == null) {
            boolean hostMatched = false;
            for (Entry e : entries) {
                boolean named = e instanceof Host x && x.matches(h) || e instanceof Wildcard w && w.matches(h);
                if (named && e.allowsPort(port)) return null;
                hostMatched |= named;
            }
            if (hostMatched) {
                return "port " + port + " of '" + h + "' is not on the webhook_allow list (an entry without a port "
                        + "allows 80 and 443 only; add '" + h + ":" + port + "')";
            }
        }
        return (AddressRanges.literal(h) != null ? "address " + ip : "'" + h + "' (" + ip + ")") + " port " + port
                + " is not on the webhook_allow list";
    }

    /** Lower case, no brackets around an IPv6 literal, no trailing dot. */
    public static String normalizeHost(String host) {
        String h = host.trim().toLowerCase(Locale.ROOT);
        if (h.startsWith("[") && h.endsWith("]")) h = h.substring(1, h.length() - 1);
        if (h.endsWith(".")) h = h.substring(0, h.length() - 1);
        return h;
    }

    /** An IPv4-mapped IPv6 address as the IPv4 address it is; anything else unchanged. */
    static InetAddress unmapped(InetAddress a) {
        if (!(a instanceof Inet6Address)) return a;
        byte[] b = a.getAddress();
        for (int i = 0; i < 10; i++) if (b[i] != 0) return a;
        if (b[10] != (byte) 0xff || b[11] != (byte) 0xff) return a;
        try {
            return InetAddress.getByAddress(new byte[]{b[12], b[13], b[14], b[15]});
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public String toString() {
        return entries.stream().map(Entry::text).toList().toString();
    }
}

package dev.fairq.schema;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.regex.Pattern;

/**
 * Which addresses a webhook may not reach unless an operator names them by address: everything that is not a
 * public unicast address. Pure byte arithmetic on {@link InetAddress} values (no DNS), so it is cheap and
 * testable with literals.
 *
 * <p>IPv4: this-network 0/8, private 10/8, 172.16/12 and 192.168/16, carrier-grade NAT 100.64/10, loopback
 * 127/8, link-local 169.254/16, IETF protocol assignments 192.0.0/24, documentation 192.0.2/24, 198.51.100/24
 * and 203.0.113/24, the 6to4 relay anycast 192.88.99/24, benchmarking 198.18/15, multicast 224/4 and reserved
 * 240/4 (with the broadcast address).
 *
 * <p>IPv6: only global unicast {@code 2000::/3} can be public, and within it not IETF protocol assignments
 * {@code 2001::/23} (Teredo, benchmarking, ORCHID), documentation {@code 2001:db8::/32} and
 * {@code 3fff::/20}. Everything outside {@code 2000::/3} is refused (unspecified, loopback, unique-local
 * {@code fc00::/7}, link-local, site-local, multicast, discard-only {@code 100::/64}, local-use NAT64
 * {@code 64:ff9b:1::/48}, the deprecated IPv4-compatible {@code ::/96}, unallocated space), except the two
 * forms that carry an IPv4 address to a public destination: IPv4-mapped {@code ::ffff:0:0/96} and NAT64
 * {@code 64:ff9b::/96} are judged by the IPv4 address they embed, and so is 6to4 {@code 2002::/16}; so
 * {@code ::ffff:127.0.0.1}, {@code 64:ff9b::a9fe:a9fe} or {@code 2002:7f00:1::} count as loopback or
 * link-local.
 */
public final class AddressRanges {
    private static final Pattern DOTTED_QUAD = Pattern.compile(
            "(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)(\\.(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)){3}");

    private AddressRanges() {}

    /** null for a public unicast address, else why it is not one (e.g. "loopback", "private 10.0.0.0/8"). */
    public static String nonPublicReason(InetAddress address) {
        byte[] b = address.getAddress();
        if (address instanceof Inet4Address) return ipv4Reason(b);
        if (address instanceof Inet6Address) return ipv6Reason(b);
        return "unknown address family";
    }

    public static boolean isPublic(InetAddress address) {
        return nonPublicReason(address) == null;
    }

    private static String ipv4Reason(byte[] b) {
        int a0 = b[0] & 0xff;
        int a1 = b[1] & 0xff;
        int a2 = b[2] & 0xff;
        if (a0 == 0) return (a1 | a2 | (b[3] & 0xff)) == 0 ? "unspecified 0.0.0.0" : "this-network 0.0.0.0/8";
        if (a0 == 10) return "private 10.0.0.0/8";
        if (a0 == 100 && (a1 & 0xc0) == 64) return "carrier-grade NAT 100.64.0.0/10";
        if (a0 == 127) return "loopback 127.0.0.0/8";
        if (a0 == 169 && a1 == 254) return "link-local 169.254.0.0/16";
        if (a0 == 172 && (a1 & 0xf0) == 16) return "private 172.16.0.0/12";
        if (a0 == 192 && a1 == 0 && a2 == 0) return "IETF protocol assignments 192.0.0.0/24";
        if (a0 == 192 && a1 == 0 && a2 == 2) return "documentation 192.0.2.0/24";
        if (a0 == 192 && a1 == 88 && a2 == 99) return "reserved 6to4 relay anycast 192.88.99.0/24";
        if (a0 == 192 && a1 == 168) return "private 192.168.0.0/16";
        if (a0 == 198 && (a1 & 0xfe) == 18) return "benchmarking 198.18.0.0/15";
        if (a0 == 198 && a1 == 51 && a2 == 100) return "documentation 198.51.100.0/24";
        if (a0 == 203 && a1 == 0 && a2 == 113) return "documentation 203.0.113.0/24";
        if ((a0 & 0xf0) == 224) return "multicast 224.0.0.0/4";
        if ((a0 & 0xf0) == 240) return "reserved 240.0.0.0/4";
        return null;
    }

    private static String ipv6Reason(byte[] b) {
        boolean first10Zero = true;
        for (int i = 0; i < 10; i++) first10Zero &= b[i] == 0;
        if (first10Zero && b[10] == (byte) 0xff && b[11] == (byte) 0xff) {
            return embedded("IPv4-mapped", b, 12);
        }
        if (first10Zero && b[10] == 0 && b[11] == 0) {
            boolean upperZero = b[12] == 0 && b[13] == 0 && b[14] == 0;
            if (upperZero && b[15] == 0) return "unspecified ::";
            if (upperZero && b[15] == 1) return "loopback ::1";
            return "deprecated IPv4-compatible ::/96";
        }
        int w0 = ((b[0] & 0xff) << 8) | (b[1] & 0xff);
        int w1 = ((b[2] & 0xff) << 8) | (b[3] & 0xff);
        int w2 = ((b[4] & 0xff) << 8) | (b[5] & 0xff);
        if (w0 == 0x0064 && w1 == 0xff9b) {
            boolean zeros = true;
            for (int i = 4; i < 12; i++) zeros &= b[i] == 0;
            if (zeros) return embedded("NAT64", b, 12);
            if (w2 == 0x0001) return "local-use NAT64 64:ff9b:1::/48";
        }
        if ((b[0] & 0xff) == 0xff) return "multicast ff00::/8";
        if ((b[0] & 0xff) == 0xfe && (b[1] & 0xc0) == 0x80) return "link-local fe80::/10";
        if ((b[0] & 0xff) == 0xfe && (b[1] & 0xc0) == 0xc0) return "site-local fec0::/10";
        if ((b[0] & 0xfe) == 0xfc) return "unique-local fc00::/7";
        if (w0 == 0x0100 && w1 == 0 && w2 == 0 && b[6] == 0 && b[7] == 0) return "discard-only 100::/64";
        if ((b[0] & 0xe0) != 0x20) return "reserved (not global unicast 2000::/3)";
        if (w0 == 0x2001 && w1 == 0x0000) return "Teredo 2001::/32";
        if (w0 == 0x2001 && w1 < 0x0200) return "IETF protocol assignments 2001::/23";
        if (w0 == 0x2001 && w1 == 0x0db8) return "documentation 2001:db8::/32";
        if (w0 == 0x3fff && (w1 & 0xf000) == 0) return "documentation 3fff::/20";
        if (w0 == 0x2002) return embedded("6to4", b, 2);
        return null;
    }

    private static String embedded(String form, byte[] b, int offset) {
        byte[] v4 = {b[offset], b[offset + 1], b[offset + 2], b[offset + 3]};
        String r = ipv4Reason(v4);
        return r == null ? null : form + " " + r;
    }

    /**
     * The address an IP literal stands for, without any DNS lookup; null when {@code host} is a name.
     * Accepts dotted-quad IPv4 and IPv6 (with or without brackets).
     */
    public static InetAddress literal(String host) {
        String h = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
        boolean v4 = DOTTED_QUAD.matcher(h).matches();
        if (!v4 && h.indexOf(':') < 0) return null;
        try {
            // A valid dotted quad is parsed, never looked up; in brackets an IPv6 string is parsed or refused,
            // never looked up either.
            return InetAddress.getByName(v4 ? h : "[" + h + "]");
        } catch (UnknownHostException | SecurityException e) {
            return null;
        }
    }
}

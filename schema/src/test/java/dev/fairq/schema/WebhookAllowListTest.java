package dev.fairq.schema;

import dev.fairq.schema.WebhookAllowList.Entry;
import dev.fairq.schema.WebhookAllowList.Host;
import dev.fairq.schema.WebhookAllowList.Range;
import dev.fairq.schema.WebhookAllowList.Wildcard;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Parsing, validation messages and matching of webhook_allow entries; literals only, no DNS. */
class WebhookAllowListTest {

    private static InetAddress ip(String literal) {
        InetAddress a = AddressRanges.literal(literal);
        assertNotNull(a, literal);
        return a;
    }

    // ------------------------------------------------------------------------------------------ parsing

    @Test
    void validEntriesParseToTheirKindAndPort() {
        assertEquals(new Host("hooks.acme.example", OptionalInt.empty(), "hooks.acme.example"),
                WebhookAllowList.parseEntry(" Hooks.ACME.example "));
        assertEquals(new Host("hooks.acme.example", OptionalInt.of(8443), "hooks.acme.example:8443"),
                WebhookAllowList.parseEntry("hooks.acme.example:8443"));
        assertEquals(new Wildcard("acme.example", OptionalInt.empty(), "*.acme.example"),
                WebhookAllowList.parseEntry("*.acme.example"));
        assertEquals(OptionalInt.of(8080), WebhookAllowList.parseEntry("*.acme.example:8080").port());

        Map<String, String> ranges = Map.of(
                "127.0.0.1", "127.0.0.1/32 any",
                "127.0.0.1:8080", "127.0.0.1/32 8080",
                "10.0.0.0/8", "10.0.0.0/8 any",
                "10.0.0.0/8:443", "10.0.0.0/8 443",
                "::1", "0:0:0:0:0:0:0:1/128 any",
                "[::1]:8080", "0:0:0:0:0:0:0:1/128 8080",
                "[2001:db8::1]", "2001:db8:0:0:0:0:0:1/128 any",
                "fd00::/8", "fd00:0:0:0:0:0:0:0/8 any",
                "[fd00::/8]:443", "fd00:0:0:0:0:0:0:0/8 443",
                "0.0.0.0/0", "0.0.0.0/0 any");
        ranges.forEach((text, expected) -> {
            Range r = assertInstanceOf(Range.class, WebhookAllowList.parseEntry(text), text);
            String port = r.port().isPresent() ? Integer.toString(r.port().getAsInt()) : "any";
            assertEquals(expected, r.network().getHostAddress() + "/" + r.prefixLength() + " " + port, text);
        });
    }

    @Test
    void invalidEntriesAreRejectedWithAMessageNamingTheEntry() {
        Map<String, String> cases = Map.ofEntries(
                Map.entry("", "empty"),
                Map.entry("   ", "empty"),
                Map.entry("https://hooks.acme.example", "without scheme"),
                Map.entry("user@hooks.acme.example", "without scheme, user"),
                Map.entry("hooks.acme.example/path", "only a CIDR range"),
                Map.entry("hooks acme", "spaces"),
                Map.entry("hooks.acme.example:0", "port must be a number from 1 to 65535"),
                Map.entry("hooks.acme.example:65536", "port must be a number from 1 to 65535"),
                Map.entry("hooks.acme.example:http", "port must be a number from 1 to 65535"),
                Map.entry("127.0.0.1:", "port must be a number"),
                Map.entry("[::1]8080", "only ':port' may follow ']'"),
                Map.entry("[::1", "'[' without ']'"),
                Map.entry("[127.0.0.1]:80", "brackets are for IPv6"),
                Map.entry("[hooks.acme.example]:80", "not a valid IPv6 address"),
                Map.entry("fe80::zz", "not a valid IPv6 address"),
                Map.entry("10.0.0.0/33", "prefix length must be a number from 0 to 32"),
                Map.entry("fd00::/129", "prefix length must be a number from 0 to 128"),
                Map.entry("10.0.0.0/", "prefix length"),
                Map.entry("10.1.2.3/8", "did you mean 10.0.0.0/8?"),
                Map.entry("*.example", "at least two labels"),
                Map.entry("*", "'*' is allowed only as the first label"),
                Map.entry("a.*.example", "'*' is allowed only as the first label"),
                Map.entry("*acme.example", "'*' is allowed only as the first label"),
                Map.entry("-hooks.acme.example", "not a host name"),
                Map.entry("hooks..acme.example", "not a host name"),
                Map.entry("my_hook.acme.example", "not a host name"),
                Map.entry("*._hooks.acme.example", "not a host name"),
                Map.entry("999.1.1.1", "not a valid IP address"),
                Map.entry("127.1", "not a valid IP address"),
                Map.entry("010.0.0.1", "not a valid IP address"),
                Map.entry("localhost", "names loopback"),
                Map.entry("api.localhost:8080", "names loopback"),
                Map.entry("x".repeat(300), "too long"));
        cases.forEach((entry, expected) -> {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> WebhookAllowList.parseEntry(entry), entry);
            assertTrue(e.getMessage().contains(expected), entry + " -> " + e.getMessage());
            if (!entry.isBlank()) {
                String shown = entry.length() > 80 ? entry.substring(0, 80) : entry;
                assertTrue(e.getMessage().contains("'" + shown), entry + " -> " + e.getMessage() + " names the entry");
            }
        });
    }

    @Test
    void validateReportsEachBadEntryByIndex() {
        assertEquals(List.of(), WebhookAllowList.validate(List.of("hooks.acme.example", "*.acme.example:8443",
                "127.0.0.1:8080", "[::1]:8080", "10.0.0.0/8", "fd00::/8")));
        List<FieldError> errors = WebhookAllowList.validate(List.of("ok.example", "bad example", "10.1.0.0/8"));
        assertEquals(List.of("webhook_allow[1]", "webhook_allow[2]"), errors.stream().map(FieldError::field).toList());
        assertTrue(errors.get(0).message().contains("'bad example'"), errors.get(0).message());
        assertTrue(errors.get(1).message().contains("'10.1.0.0/8'"), errors.get(1).message());
    }

    @Test
    void ofSkipsEntriesThatDoNotParse() {
        WebhookAllowList list = WebhookAllowList.of(List.of("localhost", "hooks.acme.example", "a b"));
        assertEquals(List.of("hooks.acme.example"), list.entries().stream().map(Entry::text).toList());
        assertEquals(0, WebhookAllowList.of(null).entries().size());
    }

    // ------------------------------------------------------------------------------------------ matching

    private static final InetAddress PUBLIC = ip("93.184.216.34");

    @Test
    void aHostEntryWithoutAPortAllowsPorts80And443Only() {
        WebhookAllowList list = WebhookAllowList.of(List.of("hooks.acme.example"));
        assertTrue(list.allows("hooks.acme.example", 443, PUBLIC));
        assertTrue(list.allows("HOOKS.acme.example.", 80, PUBLIC), "case and a trailing dot do not matter");
        assertFalse(list.allows("hooks.acme.example", 8443, PUBLIC));
        assertTrue(list.refusal("hooks.acme.example", 8443, PUBLIC).contains("add 'hooks.acme.example:8443'"));
        assertFalse(list.allows("other.acme.example", 443, PUBLIC));
        assertFalse(list.allows("a.hooks.acme.example", 443, PUBLIC));
        assertTrue(list.mayAllow("hooks.acme.example", 443));
        assertFalse(list.mayAllow("hooks.acme.example", 8443));
        assertFalse(list.mayAllow("other.acme.example", 443));
    }

    @Test
    void aHostEntryWithAPortAllowsThatPortOnly() {
        WebhookAllowList list = WebhookAllowList.of(List.of("hooks.acme.example:8443"));
        assertTrue(list.allows("hooks.acme.example", 8443, PUBLIC));
        assertFalse(list.allows("hooks.acme.example", 443, PUBLIC));
        assertFalse(list.allows("hooks.acme.example", 80, PUBLIC));
    }

    @Test
    void aWildcardMatchesSubdomainsOnlyAndNeverAnIpLiteral() {
        WebhookAllowList list = WebhookAllowList.of(List.of("*.acme.example"));
        assertTrue(list.allows("api.acme.example", 443, PUBLIC));
        assertTrue(list.allows("a.b.acme.example", 80, PUBLIC));
        assertFalse(list.allows("acme.example", 443, PUBLIC), "a wildcard is for subdomains");
        assertFalse(list.allows("evilacme.example", 443, PUBLIC));
        assertFalse(list.allows("api.acme.example", 8080, PUBLIC));
        assertFalse(list.allows("93.184.216.34", 443, PUBLIC));
        assertFalse(list.mayAllow("93.184.216.34", 443));
        assertTrue(WebhookAllowList.of(List.of("*.acme.example:8080")).allows("api.acme.example", 8080, PUBLIC));
    }

    @Test
    void aHostNameNeverOpensANonPublicAddress() {
        WebhookAllowList list = WebhookAllowList.of(List.of("hooks.acme.example", "*.acme.example", "internal.corp"));
        for (String target : List.of("127.0.0.1", "10.0.0.7", "169.254.169.254", "100.64.0.1", "::1", "fd00::1",
                "64:ff9b::7f00:1", "198.18.0.1", "0.0.0.0")) {
            assertFalse(list.allows("hooks.acme.example", 443, ip(target)), target);
            assertFalse(list.allows("api.acme.example", 443, ip(target)), target);
            assertFalse(list.allows("internal.corp", 80, ip(target)), target);
            assertTrue(list.refusal("hooks.acme.example", 443, ip(target)).contains("not a public address"), target);
        }
    }

    @Test
    void anAddressEntryAllowsThatAddressUnderAnyNameOnAnyPortUnlessItNamesAPort() {
        WebhookAllowList list = WebhookAllowList.of(List.of("127.0.0.1"));
        assertTrue(list.allows("127.0.0.1", 8080, ip("127.0.0.1")));
        assertTrue(list.allows("localhost", 8080, ip("127.0.0.1")), "the admin named the address");
        assertFalse(list.allows("127.0.0.2", 8080, ip("127.0.0.2")));
        assertTrue(list.mayAllow("127.0.0.1", 1));
        assertFalse(list.mayAllow("127.0.0.2", 1));

        WebhookAllowList port = WebhookAllowList.of(List.of("127.0.0.1:8080"));
        assertTrue(port.allows("127.0.0.1", 8080, ip("127.0.0.1")));
        assertFalse(port.allows("127.0.0.1", 8081, ip("127.0.0.1")));
        assertTrue(port.refusal("127.0.0.1", 8081, ip("127.0.0.1")).contains("only for another port"));
        assertFalse(port.mayAllow("127.0.0.1", 8081));
    }

    @Test
    void cidrRangesMatchByPrefixInTheirOwnFamily() {
        WebhookAllowList v4 = WebhookAllowList.of(List.of("10.0.0.0/8", "192.168.4.0/22:9000", "172.16.0.0/12"));
        assertTrue(v4.allows("svc.corp", 80, ip("10.255.1.2")));
        assertFalse(v4.allows("svc.corp", 80, ip("11.0.0.1")));
        assertTrue(v4.allows("svc.corp", 9000, ip("192.168.7.255")));
        assertFalse(v4.allows("svc.corp", 9000, ip("192.168.8.0")));
        assertFalse(v4.allows("svc.corp", 9001, ip("192.168.5.1")));
        assertTrue(v4.allows("svc.corp", 1, ip("172.31.255.255")));
        assertFalse(v4.allows("svc.corp", 1, ip("172.32.0.0")));
        assertFalse(v4.allows("svc.corp", 80, ip("fd00::a00:1")), "an IPv4 range does not match IPv6");
        InetAddress mapped = WebhookAllowList.unmapped(v6Mapped(10, 1, 2, 3));
        assertTrue(v4.allows("svc.corp", 80, mapped), "IPv4-mapped IPv6 is the IPv4 address");
        assertTrue(v4.allows("svc.corp", 80, v6Mapped(10, 1, 2, 3)));

        WebhookAllowList v6 = WebhookAllowList.of(List.of("fd00:1234::/32", "[2001:db8::/48]:443"));
        assertTrue(v6.allows("svc.corp", 80, ip("fd00:1234:ffff::1")));
        assertFalse(v6.allows("svc.corp", 80, ip("fd00:1235::1")));
        assertTrue(v6.allows("svc.corp", 443, ip("2001:db8:0:ffff::1")));
        assertFalse(v6.allows("svc.corp", 443, ip("2001:db8:1::1")));
        assertFalse(v6.allows("svc.corp", 80, ip("2001:db8::1")));
        assertFalse(v6.allows("svc.corp", 80, ip("10.0.0.1")));

        WebhookAllowList odd = WebhookAllowList.of(List.of("10.0.0.128/25"));
        assertTrue(odd.allows("h.corp", 80, ip("10.0.0.200")));
        assertFalse(odd.allows("h.corp", 80, ip("10.0.0.127")));
    }

    @Test
    void aRangeOpensANonPublicAddressOnlyWhenItLiesWithinThatAddresssBlock() {
        WebhookAllowList everything = WebhookAllowList.of(List.of("0.0.0.0/0", "::/0"));
        assertTrue(everything.allows("93.184.216.34", 443, PUBLIC), "any address means the internet");
        assertTrue(everything.allows("h.example", 8080, ip("2606:2800:220:1:248:1893:25c8:1946")));
        for (String target : List.of("127.0.0.1", "169.254.169.254", "10.0.0.7", "172.16.0.1", "192.168.1.1",
                "100.64.0.1", "0.0.0.0", "::1", "::", "fe80::1", "fd00::1", "::ffff:127.0.0.1", "64:ff9b::a9fe:a9fe",
                "2002:7f00:1::")) {
            assertFalse(everything.allows(target, 5432, ip(target)), target);
        }
        assertTrue(everything.refusal("127.0.0.1", 5432, ip("127.0.0.1")).contains("is in '0.0.0.0/0', but a range "
                + "opens a non-public address only when it lies wholly within that address's block: add 127.0.0.1"),
                everything.refusal("127.0.0.1", 5432, ip("127.0.0.1")));
        assertFalse(WebhookAllowList.of(List.of("172.0.0.0/8")).allows("svc", 80, ip("172.16.0.1")), "wider than 172.16/12");
        assertTrue(WebhookAllowList.of(List.of("172.0.0.0/8")).allows("svc", 80, ip("172.1.0.1")), "its public part");
        assertFalse(WebhookAllowList.of(List.of("64:ff9b::/96")).allows("svc", 80, ip("64:ff9b::7f00:1")));

        for (String[] within : new String[][]{{"127.0.0.1", "127.0.0.1"}, {"127.0.0.0/8", "127.0.0.53"},
                {"169.254.169.254", "169.254.169.254"}, {"10.0.0.0/8", "10.1.2.3"}, {"10.1.0.0/16", "10.1.2.3"},
                {"0.0.0.0", "0.0.0.0"}, {"::1", "::1"}, {"fe80::/10", "fe80::1"}, {"fc00::/7", "fd00::1"},
                {"64:ff9b::7f00:0/104", "64:ff9b::7f00:1"}, {"127.0.0.1", "::ffff:127.0.0.1"}}) {
            assertTrue(WebhookAllowList.of(List.of(within[0])).allows("svc", 80, ip(within[1])), within[0] + " " + within[1]);
        }
    }

    @Test
    void aPublicAddressNotNamedByAnyEntryIsRefused() {
        WebhookAllowList list = WebhookAllowList.of(List.of("hooks.acme.example"));
        assertFalse(list.allows("93.184.216.34", 443, PUBLIC), "an IP URL needs an IP entry");
        assertTrue(list.refusal("93.184.216.34", 443, PUBLIC).contains("not on the webhook_allow list"));
        assertTrue(WebhookAllowList.of(List.of("93.184.216.0/24")).allows("93.184.216.34", 443, PUBLIC));
        assertFalse(WebhookAllowList.of(List.of()).allows("hooks.acme.example", 443, PUBLIC));
    }

    private static InetAddress v6Mapped(int a, int b, int c, int d) {
        byte[] m = new byte[16];
        m[10] = (byte) 0xff;
        m[11] = (byte) 0xff;
        m[12] = (byte) a;
        m[13] = (byte) b;
        m[14] = (byte) c;
        m[15] = (byte) d;
        try {
            return java.net.Inet6Address.getByAddress(null, m, -1);
        } catch (java.net.UnknownHostException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void normalizeHost() {
        assertEquals("::1", WebhookAllowList.normalizeHost("[::1]"));
        assertEquals("hooks.acme.example", WebhookAllowList.normalizeHost("Hooks.Acme.Example."));
        assertNull(AddressRanges.literal(WebhookAllowList.normalizeHost("hooks.acme.example")));
    }
}

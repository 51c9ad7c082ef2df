package dev.fairq.schema;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.InetAddress;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Literal addresses only: nothing here touches DNS. */
class AddressRangesTest {

    private static InetAddress ip(String literal) {
        InetAddress a = AddressRanges.literal(literal);
        assertNotNull(a, literal + " should parse as a literal");
        return a;
    }

    /** A 16-byte IPv6 address kept as Inet6Address even when it is IPv4-mapped (getByName would unwrap it). */
    private static InetAddress v6bytes(String literal) throws Exception {
        byte[] b = java.net.Inet6Address.getByName("[" + literal + "]").getAddress();
        if (b.length == 4) { // the JDK turned ::ffff:a.b.c.d into an Inet4Address; rebuild the mapped form
            byte[] m = new byte[16];
            m[10] = (byte) 0xff;
            m[11] = (byte) 0xff;
            System.arraycopy(b, 0, m, 12, 4);
            b = m;
        }
        return java.net.Inet6Address.getByAddress(null, b, -1);
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255", "100.64.0.1", "100.127.255.254", "127.0.0.1",
            "127.255.0.1", "169.254.169.254", "172.16.0.1", "172.31.255.255", "192.0.0.8", "192.168.1.1",
            "198.18.0.1", "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255",
            "::", "::1", "fe80::1", "febf::1", "fec0::1", "fc00::1", "fd12:3456::1", "ff02::1",
            "::ffff:127.0.0.1", "::ffff:10.1.2.3", "::ffff:169.254.169.254", "::127.0.0.1",
            "64:ff9b::a9fe:a9fe", "2002:7f00:1::", "2002:c0a8:101::1", "2001:0:4136:e378:8000:63bf:80ff:fffe",
            "192.0.2.1", "198.51.100.7", "203.0.113.255", "192.88.99.1", "198.19.255.255", "::8.8.8.8",
            "64:ff9b:1::a00:1", "64:ff9b::a00:1", "64:ff9b::6440:1", "100::1", "2001:db8::1", "3fff::1",
            "2001:2::1", "2001:10::1", "2001:0:5ef5:79fd::1", "fbff::1", "fe7f::1", "5f00::1", "4000::1", "1::1"})
    void nonPublic(String literal) {
        assertNotNull(AddressRanges.nonPublicReason(ip(literal)), literal);
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "1.1.1.1", "8.8.8.8", "9.255.255.255", "11.0.0.1", "100.63.255.255", "100.128.0.1", "126.255.255.255",
            "128.0.0.1", "169.253.1.1", "172.15.255.255", "172.32.0.1", "192.167.1.1", "192.169.0.1",
            "198.17.0.1", "198.20.0.1", "223.255.255.255", "93.184.216.34",
            "2606:4700:4700::1111", "2001:4860:4860::8888", "::ffff:8.8.8.8", "64:ff9b::808:808",
            "2002:808:808::1", "2001:200::1", "2001:db7:ffff::1", "2001:db9::1", "3fff:1000::1", "2c0f:f248::1",
            "3ffe:ffff::1", "192.0.1.255", "192.0.3.0", "198.51.99.1", "203.0.112.1", "192.88.98.1"})
    void publicUnicast(String literal) {
        assertNull(AddressRanges.nonPublicReason(ip(literal)), literal);
    }

    @Test
    void reasonsSayWhichRange() {
        assertTrue(AddressRanges.nonPublicReason(ip("127.0.0.1")).startsWith("loopback"));
        assertTrue(AddressRanges.nonPublicReason(ip("10.0.0.1")).startsWith("private"));
        assertTrue(AddressRanges.nonPublicReason(ip("172.20.0.1")).startsWith("private"));
        assertTrue(AddressRanges.nonPublicReason(ip("192.168.0.1")).startsWith("private"));
        assertTrue(AddressRanges.nonPublicReason(ip("169.254.169.254")).startsWith("link-local"));
        assertTrue(AddressRanges.nonPublicReason(ip("100.100.100.100")).startsWith("carrier-grade NAT"));
        assertTrue(AddressRanges.nonPublicReason(ip("0.0.0.0")).startsWith("unspecified"));
        assertTrue(AddressRanges.nonPublicReason(ip("224.0.0.251")).startsWith("multicast"));
        assertTrue(AddressRanges.nonPublicReason(ip("::1")).startsWith("loopback"));
        assertTrue(AddressRanges.nonPublicReason(ip("::")).startsWith("unspecified"));
        assertTrue(AddressRanges.nonPublicReason(ip("fe80::1")).startsWith("link-local"));
        assertTrue(AddressRanges.nonPublicReason(ip("fd00::1")).startsWith("unique-local"));
        assertTrue(AddressRanges.nonPublicReason(ip("ff05::2")).startsWith("multicast"));
        assertTrue(AddressRanges.nonPublicReason(ip("2002:a00:1::")).contains("private 10.0.0.0/8"));
        assertTrue(AddressRanges.nonPublicReason(ip("198.18.0.1")).startsWith("benchmarking"));
        assertTrue(AddressRanges.nonPublicReason(ip("192.0.2.1")).startsWith("documentation"));
        assertTrue(AddressRanges.nonPublicReason(ip("198.51.100.1")).startsWith("documentation"));
        assertTrue(AddressRanges.nonPublicReason(ip("203.0.113.1")).startsWith("documentation"));
        assertTrue(AddressRanges.nonPublicReason(ip("2001:db8::1")).startsWith("documentation"));
        assertTrue(AddressRanges.nonPublicReason(ip("240.0.0.1")).startsWith("reserved"));
        assertTrue(AddressRanges.nonPublicReason(ip("fc00::1")).startsWith("unique-local"));
        assertTrue(AddressRanges.nonPublicReason(ip("4000::1")).startsWith("reserved"));
        assertEquals("NAT64 loopback 127.0.0.0/8", AddressRanges.nonPublicReason(ip("64:ff9b::7f00:1")));
        assertEquals("NAT64 link-local 169.254.0.0/16", AddressRanges.nonPublicReason(ip("64:ff9b::a9fe:a9fe")));
        assertEquals("NAT64 carrier-grade NAT 100.64.0.0/10", AddressRanges.nonPublicReason(ip("64:ff9b::6440:1")));
        assertNull(AddressRanges.nonPublicReason(ip("64:ff9b::808:808")), "NAT64 to a public IPv4 address is public");
    }

    @Test
    void ipv4MappedIpv6IsJudgedByItsIpv4AddressEvenWhenKeptAsSixteenBytes() throws Exception {
        InetAddress mappedLoopback = v6bytes("::ffff:127.0.0.1");
        assertEquals(16, mappedLoopback.getAddress().length);
        assertEquals("IPv4-mapped loopback 127.0.0.0/8", AddressRanges.nonPublicReason(mappedLoopback));
        assertTrue(AddressRanges.nonPublicReason(v6bytes("::ffff:192.168.0.10")).contains("private"));
        assertTrue(AddressRanges.nonPublicReason(v6bytes("::ffff:100.64.0.1")).contains("carrier-grade NAT"));
        assertNull(AddressRanges.nonPublicReason(v6bytes("::ffff:1.1.1.1")));
    }

    @Test
    void literalParsesIpLiteralsOnlyAndNeverLooksUpNames() {
        assertEquals(ip("127.0.0.1"), AddressRanges.literal("127.0.0.1"));
        assertEquals(ip("::1"), AddressRanges.literal("[::1]"));
        assertEquals(ip("::1"), AddressRanges.literal("0:0:0:0:0:0:0:1"));
        assertNull(AddressRanges.literal("localhost"));
        assertNull(AddressRanges.literal("example.com"));
        assertNull(AddressRanges.literal("999.1.1.1"));
        assertNull(AddressRanges.literal("010.0.0.1"));
        assertNull(AddressRanges.literal("127.1"));
        assertNull(AddressRanges.literal("fe80::zz"));
    }
}

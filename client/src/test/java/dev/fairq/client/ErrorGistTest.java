package dev.fairq.client;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** An answer that is not fairq's JSON (Jetty's error page, a proxy's) becomes a one-line message, not a page. */
class ErrorGistTest {
    @Test
    void anHtmlPageIsItsTitleAndATextItsFirstLine() {
        String jetty = "<html>\n<head>\n<meta http-equiv=\"Content-Type\" content=\"text/html;charset=ISO-8859-1\"/>\n"
                + "<title>Error 400 Ambiguous URI path separator</title>\n</head>\n<body>\n<h2>HTTP ERROR 400 Ambiguous URI "
                + "path separator</h2>\n<table>\n<tr><th>URI:</th><td>/v1/admin/tenants/..%2Fjobs</td></tr>\n</table>\n</body>\n</html>\n";
        assertEquals("Error 400 Ambiguous URI path separator", FairqClient.gist(jetty));
        assertEquals("Bad Gateway", FairqClient.gist("  Bad Gateway\nupstream connect error\n"));
        assertEquals("x".repeat(200) + "...", FairqClient.gist("x".repeat(500)));
        assertEquals("", FairqClient.gist(""));
    }
}

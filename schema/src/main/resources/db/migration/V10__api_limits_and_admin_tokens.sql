-- Per-tenant API request limits: a token bucket per tenant in each API process (api/README.md). Read with the key
-- on every request (one join on the tenants primary key), so a change is live at the next request.
-- Tenants that exist when this runs get generous limits (1000/s, 2000 at once) rather than the API's default for new
-- tenants (100/s, 200; TenantLimit), so that no running integration starts getting 429s on upgrade.
ALTER TABLE tenants
    ADD COLUMN api_rate_per_second double precision NOT NULL DEFAULT 1000
        CHECK (api_rate_per_second > 0 AND api_rate_per_second <= 1000000),
    ADD COLUMN api_burst integer NOT NULL DEFAULT 2000 CHECK (api_burst BETWEEN 1 AND 1000000);

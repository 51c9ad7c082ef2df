package dev.fairq.schema;

/** A job was enqueued for a tenant that does not exist; nothing was written. */
public class UnknownTenantException extends IllegalArgumentException {
    public UnknownTenantException(String tenantId) {
        super("unknown tenant: " + tenantId);
    }
}

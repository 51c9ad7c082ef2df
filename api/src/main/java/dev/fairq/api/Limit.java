package dev.fairq.api;

import dev.fairq.schema.TenantLimit;
import jakarta.validation.Constraint;
import jakarta.validation.ConstraintValidator;
import jakarta.validation.ConstraintValidatorContext;
import jakarta.validation.Payload;
import org.hibernate.validator.constraintvalidation.HibernateConstraintValidatorContext;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * A tenant limit's value, checked by {@link TenantLimit#accept}: the one declaration of its range and message,
 * which tenants.yml and the tenants table's CHECK constraints share. The field at fault (e.g.
 * {@code webhook_allow[2]}) travels as the violation's dynamic payload.
 */
@Target(ElementType.FIELD)
@Retention(RetentionPolicy.RUNTIME)
@Constraint(validatedBy = Limit.Check.class)
public @interface Limit {
    TenantLimit value();

    String message() default "";

    Class<?>[] groups() default {};

    Class<? extends Payload>[] payload() default {};

    final class Check implements ConstraintValidator<Limit, Object> {
        private TenantLimit limit;

        @Override
        public void initialize(Limit annotation) {
            limit = annotation.value();
        }

        @Override
        public boolean isValid(Object value, ConstraintValidatorContext context) {
            if (value == null) return true;
            try {
                limit.accept(value);
                return true;
            } catch (TenantLimit.InvalidLimitException e) {
                context.disableDefaultConstraintViolation();
                HibernateConstraintValidatorContext h = context.unwrap(HibernateConstraintValidatorContext.class);
                for (dev.fairq.schema.FieldError error : e.errors()) { // a list limit names each bad entry
                    h.withDynamicPayload(error.field())
                            .buildConstraintViolationWithTemplate(error.message().replace("{", "\\{").replace("$", "\\$"))
                            .addConstraintViolation();
                }
                return false;
            }
        }
    }
}

package dev.fairq.api;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.dropwizard.configuration.ConfigurationException;
import io.dropwizard.configuration.ConfigurationFactory;
import io.dropwizard.configuration.ConfigurationSourceProvider;
import io.dropwizard.configuration.DefaultConfigurationFactoryFactory;
import jakarta.validation.Validator;

import java.io.IOException;
import java.util.Map;

/** Builds the configuration as Dropwizard does (file or defaults), then applies {@link EnvironmentOverrides}. */
final class EnvironmentConfigurationFactoryFactory<T extends FairqConfiguration> extends DefaultConfigurationFactoryFactory<T> {
    private final Map<String, String> env;

    EnvironmentConfigurationFactoryFactory(Map<String, String> env) {
        this.env = env;
    }

    @Override
    public ConfigurationFactory<T> create(Class<T> klass, Validator validator, ObjectMapper objectMapper, String propertyPrefix) {
        ConfigurationFactory<T> delegate = super.create(klass, validator, objectMapper, propertyPrefix);
        return new ConfigurationFactory<>() {
            @Override
            public T build(ConfigurationSourceProvider provider, String path) throws IOException, ConfigurationException {
                return EnvironmentOverrides.apply(delegate.build(provider, path), env);
            }

            @Override
            public T build() throws IOException, ConfigurationException {
                return EnvironmentOverrides.apply(delegate.build(), env);
            }
        };
    }
}

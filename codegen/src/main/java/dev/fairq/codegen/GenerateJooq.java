package dev.fairq.codegen;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.flywaydb.core.Flyway;
import org.jooq.codegen.GenerationTool;
import org.jooq.meta.jaxb.Configuration;
import org.jooq.meta.jaxb.Database;
import org.jooq.meta.jaxb.Generate;
import org.jooq.meta.jaxb.Generator;
import org.jooq.meta.jaxb.Jdbc;
import org.jooq.meta.jaxb.Target;

import java.nio.file.Path;

/**
 * Build-time step of the schema module: start an embedded PostgreSQL, apply the migrations, and let jOOQ
 * read the resulting catalog. Generating from the real database (not a DDL parser) means partial indexes,
 * enums and jsonb come out exactly as PostgreSQL sees them.
 *
 * <p>Arguments: the migrations directory, the output directory, the target package.
 */
public final class GenerateJooq {
    private GenerateJooq() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            throw new IllegalArgumentException("usage: GenerateJooq <migrations-dir> <output-dir> <package>");
        }
        Path migrations = Path.of(args[0]).toAbsolutePath();
        Path output = Path.of(args[1]).toAbsolutePath();
        String packageName = args[2];

        try (EmbeddedPostgres pg = EmbeddedPostgres.builder().start()) {
            String url = pg.getJdbcUrl("postgres", "postgres");
            Flyway.configure()
                    .dataSource(url, "postgres", null)
                    .locations("filesystem:" + migrations)
                    .load()
                    .migrate();

            GenerationTool.generate(new Configuration()
                    .withJdbc(new Jdbc().withDriver("org.postgresql.Driver").withUrl(url).withUser("postgres"))
                    .withGenerator(new Generator()
                            .withDatabase(new Database()
                                    .withName("org.jooq.meta.postgres.PostgresDatabase")
                                    .withInputSchema("public")
                                    .withExcludes("flyway_schema_history"))
                            .withGenerate(new Generate()
                                    .withJavaTimeTypes(true)
                                    .withPojos(false)
                                    .withDaos(false)
                                    .withRecords(true)
                                    .withFluentSetters(true))
                            .withTarget(new Target()
                                    .withPackageName(packageName)
                                    .withDirectory(output.toString()))));
        }
    }
}

import Devices
import HeraldFeature
import Jobs
public import Storage
import Webhooks

/// Herald's database schema: every module's migrations, composed in one fixed order, then those
/// the features of ``HeraldFeatures/all`` declare.
///
/// Each module owns the tables it stores into and numbers its migrations itself (`Devices 2`);
/// those released in the one global sequence of before keep that version
/// (``Storage/Migration/releasedAs``), so databases created then upgrade unchanged. It lives here,
/// in the one library that sees every domain module, so that the executable migrates with it and
/// HeraldAPITests' `SchemaCompositionTests` check this very list on SQLite and PostgreSQL. A
/// module that adds a table appends a migration with its next number; a new module declares its
/// migrations in its ``HeraldFeature/HeraldFeature``, numbered from 1
/// (``HeraldFeature/FeatureAssembly/validate()`` refuses a migration of another feature's module).
/// The migrator applies the released ones in their old order, then the later ones module by
/// module in this list's order.
public enum HeraldSchema {
    /// Every migration: ``coreMigrations`` and the features'.
    public static var migrations: [Migration] { HeraldFeatures.assembly.migrations }

    /// The migrations of the modules that are not (yet) declared as a feature.
    public static let coreMigrations: [Migration] =
        StorageMigrations.all + JobMigrations.all + IdempotencyMigrations.all
}

import Devices
import HeraldFeature
import Jobs
import LiveActivities
public import Storage
import Webhooks

/// Herald's database schema: every module's migrations, composed in one fixed order, then those
/// the features of ``HeraldFeatures/all`` declare.
///
/// Each module owns the tables it stores into; their versions form one sequence, so this list is
/// what databases created before the modules owned their tables recorded, version for version.
/// It lives here, in the one library that sees every domain module, so that the executable
/// migrates with it and HeraldAPITests' `SchemaCompositionTests` check this very list on SQLite
/// and PostgreSQL. A module that adds a table appends a migration to its own list with the next
/// free version; a new module declares its migrations in its ``HeraldFeature/HeraldFeature`` with
/// the next free versions (``HeraldFeature/FeatureAssembly/validate()`` refuses a version declared
/// twice). The migrator applies them by version, so a later version in an earlier module's list (6, `notifications_listing`) runs after 5.
public enum HeraldSchema {
    /// Every migration: ``coreMigrations`` and the features'.
    public static var migrations: [Migration] { HeraldFeatures.assembly.migrations }

    /// The migrations of the modules that are not (yet) declared as a feature.
    public static let coreMigrations: [Migration] =
        StorageMigrations.all + JobMigrations.all + IdempotencyMigrations.all
        + LiveActivityMigrations.all
}

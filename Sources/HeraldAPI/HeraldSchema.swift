import Devices
import Jobs
import LiveActivities
import Notifications
public import Storage
import Wake
import Webhooks

/// Herald's database schema: every module's migrations, composed in one fixed order.
///
/// Each module owns the tables it stores into; their versions form one sequence, so this list is
/// what databases created before the modules owned their tables recorded, version for version.
/// It lives here, in the one library that sees every domain module, so that the executable
/// migrates with it and HeraldAPITests' `SchemaCompositionTests` check this very list on SQLite
/// and PostgreSQL. A module that adds a table appends a migration to its own list with the next
/// free version, and a new module's list is appended here. The migrator applies them by version,
/// so a later version in an earlier module's list (6, `notifications_listing`) runs after 5.
public enum HeraldSchema {
    public static let migrations: [Migration] =
        StorageMigrations.all + JobMigrations.all + NotificationMigrations.all + IdempotencyMigrations.all
        + DeviceMigrations.all
        + WebhookMigrations.all
        + WakeMigrations.all
        + LiveActivityMigrations.all
}

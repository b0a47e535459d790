public import Storage

/// The `idempotency_keys` table of ``IdempotencyStore``. Numbered in its own module,
/// `Idempotency` (``Storage/Migration``); never change one that has shipped.
public enum IdempotencyMigrations {
    public static let all: [Migration] = [
        Migration(
            module: "Idempotency",
            number: 1,
            name: "create_idempotency_keys",
            releasedAs: 5,
            sql: """
                CREATE TABLE idempotency_keys (
                    api_key_hash TEXT NOT NULL,
                    idempotency_key TEXT NOT NULL,
                    request_hash TEXT NOT NULL,
                    status_code BIGINT,
                    response_headers TEXT,
                    response_body TEXT,
                    created_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL,
                    PRIMARY KEY (api_key_hash, idempotency_key)
                );
                CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);
                """
        )
    ]
}

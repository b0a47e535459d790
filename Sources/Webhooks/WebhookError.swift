public import HeraldCore

/// The webhooks API's refusals (``WebhookError``).
public enum WebhookDomain: RefusalDomain {}

/// Why a webhook request was refused: invalid, too large, not found (no webhook has the id), or
/// limit reached (as many webhooks exist as are allowed). Messages never quote a webhook's secret.
public typealias WebhookError = Refusal<WebhookDomain>

import { PROVIDERS, type Provider } from './model';
import { REDACTED_HEADERS } from './secrets/redacted-headers';

/**
 * What an ingester's provider config must hold. Pure so that the API can refuse a bad config
 * when it is written, instead of every event of the ingester failing verification later.
 */

/** Every provider has a verifier in this build. */
export const SUPPORTED_PROVIDERS: readonly Provider[] = PROVIDERS;

export const GENERIC_ALGORITHMS = ['sha1', 'sha256', 'sha512'] as const;
export const GENERIC_ENCODINGS = ['hex', 'base64'] as const;
export const DEFAULT_TOLERANCE_SECONDS = 300;
export const MAX_TOLERANCE_SECONDS = 86_400;

export interface ConfigProblem {
  field: string;
  message: string;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Padded standard base64, nothing else. */
export function isBase64(text: string): boolean {
  return text !== '' && BASE64.test(text);
}

/** A Standard Webhooks secret: `whsec_` + base64, or the bare base64 key (both are accepted by the spec's libraries). */
export function isStandardWebhooksSecret(secret: string): boolean {
  const key = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  return isBase64(key);
}

function secretProblems(provider: Provider, config: Record<string, unknown>): ConfigProblem[] {
  const { signing_secret: one, signing_secrets: many } = config;
  const problems: ConfigProblem[] = [];
  if (one !== undefined && (typeof one !== 'string' || one === '')) {
    problems.push({ field: 'config.signing_secret', message: 'must be a non-empty string' });
  }
  if (many !== undefined && (!Array.isArray(many) || many.some((s) => typeof s !== 'string' || s === ''))) {
    problems.push({ field: 'config.signing_secrets', message: 'must be an array of non-empty strings' });
  }
  if (problems.length > 0) return problems;
  if (one === undefined && (!Array.isArray(many) || many.length === 0)) {
    return [{ field: 'config.signing_secret', message: `is required for the ${provider} provider (or config.signing_secrets)` }];
  }
  if (provider === 'standard-webhooks') {
    if (typeof one === 'string' && !isStandardWebhooksSecret(one)) {
      problems.push({ field: 'config.signing_secret', message: 'must be whsec_ followed by base64' });
    }
    if (Array.isArray(many)) {
      many.forEach((s, i) => {
        if (typeof s === 'string' && !isStandardWebhooksSecret(s)) problems.push({ field: `config.signing_secrets[${i}]`, message: 'must be whsec_ followed by base64' });
      });
    }
  }
  return problems;
}

function oneOfProblem(config: Record<string, unknown>, key: string, allowed: readonly string[]): ConfigProblem[] {
  const value = config[key];
  if (value === undefined || (typeof value === 'string' && allowed.includes(value))) return [];
  return [{ field: `config.${key}`, message: `must be one of ${allowed.join(', ')}` }];
}

function stringProblem(config: Record<string, unknown>, key: string, nonEmpty: boolean): ConfigProblem[] {
  const value = config[key];
  if (value === undefined || (typeof value === 'string' && (!nonEmpty || value !== ''))) return [];
  return [{ field: `config.${key}`, message: nonEmpty ? 'must be a non-empty string' : 'must be a string' }];
}

function toleranceProblem(config: Record<string, unknown>): ConfigProblem[] {
  const value = config.tolerance_seconds;
  if (value === undefined) return [];
  if (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_TOLERANCE_SECONDS) return [];
  return [{ field: 'config.tolerance_seconds', message: `must be an integer from 1 to ${MAX_TOLERANCE_SECONDS}` }];
}

/** One entry per problem; an empty list means the config is usable. Unknown keys are allowed. */
export function checkProviderConfig(provider: Provider, config: Record<string, unknown>): ConfigProblem[] {
  const problems = provider === 'none' ? [] : secretProblems(provider, config);
  problems.push(...toleranceProblem(config));
  problems.push(...stringProblem(config, 'event_type_header', true), ...stringProblem(config, 'event_type_field', true));
  if (provider === 'generic') {
    problems.push(...oneOfProblem(config, 'algorithm', GENERIC_ALGORITHMS), ...oneOfProblem(config, 'encoding', GENERIC_ENCODINGS));
    problems.push(...stringProblem(config, 'header', true), ...stringProblem(config, 'prefix', false));
  }
  for (const member of ['header', 'event_type_header']) {
    const name = config[member];
    if (typeof name === 'string' && REDACTED_HEADERS.has(name.trim().toLowerCase())) problems.push({ field: `config.${member}`, message: `${name} is redacted when a webhook arrives (it carries credentials); use another header` });
  }
  if (provider === 'github' && config.allow_sha1 !== undefined && typeof config.allow_sha1 !== 'boolean') {
    problems.push({ field: 'config.allow_sha1', message: 'must be a boolean' });
  }
  return problems;
}

export interface ProviderDoc {
  signature: string;
  event_type: string;
  config: string;
}

const SECRETS = '`signing_secret` or `signing_secrets` (any matches)';
const TOLERANCE = `\`tolerance_seconds\` (default ${DEFAULT_TOLERANCE_SECONDS})`;
const EVENT_TYPE_KEYS = '`event_type_header` (a header name) or `event_type_field` (dotted path into the JSON body)';

export const PROVIDER_DOCS: Record<Provider, ProviderDoc> = {
  generic: {
    signature: 'HMAC of the raw body in one header, optionally after a prefix',
    event_type: `from ${EVENT_TYPE_KEYS}, else none`,
    config: `${SECRETS}; \`header\` (default x-webhook-signature), \`algorithm\` sha1|sha256|sha512, \`encoding\` hex|base64, \`prefix\`; ${EVENT_TYPE_KEYS}`,
  },
  stripe: {
    signature: '`Stripe-Signature: t=…,v1=…`, HMAC-SHA256 of `t.body` keyed with the whsec_ secret as text',
    event_type: 'body `type`',
    config: `${SECRETS}; ${TOLERANCE}`,
  },
  github: {
    signature: '`X-Hub-Signature-256: sha256=…`, HMAC-SHA256 of the body',
    event_type: '`X-GitHub-Event` header',
    config: `${SECRETS}; \`allow_sha1\` accepts \`X-Hub-Signature\` when the SHA-256 header is absent`,
  },
  shopify: {
    signature: '`X-Shopify-Hmac-Sha256`, base64 HMAC-SHA256 of the body',
    event_type: '`X-Shopify-Topic` header',
    config: SECRETS,
  },
  slack: {
    signature: '`X-Slack-Signature: v0=…`, HMAC-SHA256 of `v0:timestamp:body` with `X-Slack-Request-Timestamp`',
    event_type: 'body `event.type` for event_callback, else body `type`, or the `type` of a form `payload`',
    config: `${SECRETS}; ${TOLERANCE}`,
  },
  'standard-webhooks': {
    signature: '`webhook-id`/`webhook-timestamp`/`webhook-signature` (or `svix-*`), HMAC-SHA256 of `id.timestamp.body`',
    event_type: 'body `type`, else body `eventType`',
    config: `${SECRETS}, each whsec_ + base64; ${TOLERANCE}`,
  },
  none: {
    signature: 'not checked',
    event_type: `from ${EVENT_TYPE_KEYS}, else none`,
    config: EVENT_TYPE_KEYS,
  },
};

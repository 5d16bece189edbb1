// Which policies a key may ask for: those at least as strict as its own.
//
// The rules of llmeu/routing/policy.py (`widening_field`) and durations.py, so
// the playground offers exactly the policies the gateway would accept; the
// gateway still checks every request and answers 403 `policy_widening`.

const DURATION = /^P(?!$)(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?(?:T(?=\d)(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/;
const UNIT_SECONDS = [365 * 86400, 30 * 86400, 7 * 86400, 86400, 3600, 60, 1];

/** Seconds in an ISO-8601 duration (a year is 365 days, a month 30); NaN when invalid. */
export function durationSeconds(text) {
  const match = DURATION.exec(text ?? "");
  if (match === null) return NaN;
  return UNIT_SECONDS.reduce((sum, unit, i) => sum + (match[i + 1] ? Number(match[i + 1]) * unit : 0), 0);
}

const subset = (inner, outer) => inner.every((item) => outer.includes(item));

/** The first field in which `stricter` is looser than `base`, or null when it only narrows. */
export function wideningField(base, stricter) {
  if (!subset(stricter.allow_classes, base.allow_classes)) return "allow_classes";
  if (base.allow_countries.length && !(stricter.allow_countries.length && subset(stricter.allow_countries, base.allow_countries))) {
    return "allow_countries";
  }
  if (base.allow_providers.length && !(stricter.allow_providers.length && subset(stricter.allow_providers, base.allow_providers))) {
    return "allow_providers";
  }
  if (durationSeconds(stricter.max_retention) > durationSeconds(base.max_retention)) return "max_retention";
  if (durationSeconds(stricter.store_content) > durationSeconds(base.store_content)) return "store_content";
  if (stricter.fallback && !base.fallback) return "fallback";
  return null;
}

/** The policies a key with policy `keyPolicyId` may name, its own first. */
export function usablePolicies(keyPolicyId, policies) {
  const base = policies.find((p) => p.policy_id === keyPolicyId);
  if (!base) return [];
  return [base, ...policies.filter((p) => p !== base && wideningField(base, p) === null)];
}

// Which policies a key may ask for: those at least as strict as its own.
//
// The rules come from the gateway's own table (llmeu/routing/predicates.py), served as
// policy-rules.js: each rule names its field and the kind of comparison, and this module
// implements each kind once, so the playground offers exactly the policies the gateway
// would accept; the gateway still checks every request and answers 403 `policy_widening`.

import { RULES } from "./policy-rules.js";

const DURATION = /^P(?!$)(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?(?:T(?=\d)(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/;
const UNIT_SECONDS = [365 * 86400, 30 * 86400, 7 * 86400, 86400, 3600, 60, 1];

/** Seconds in an ISO-8601 duration (a year is 365 days, a month 30); NaN when invalid. */
export function durationSeconds(text) {
  const match = DURATION.exec(text ?? "");
  if (match === null) return NaN;
  return UNIT_SECONDS.reduce((sum, unit, i) => sum + (match[i + 1] ? Number(match[i + 1]) * unit : 0), 0);
}

const subset = (inner, outer) => inner.every((item) => outer.includes(item));
const absent = (value) => value === null || value === undefined;

// Patterns of names (llmeu/routing/glob_rules.py): `*` any run of characters, `?` one.
const globRegex = (pattern) => {
  const escaped = pattern.replace(/[.+^$()|{}[\]\\]/g, "\\$&");
  return new RegExp("^" + escaped.replace(/\*/g, "[\\s\\S]*").replace(/\?/g, "[\\s\\S]") + "$");
};
const isPattern = (text) => text.includes("*") || text.includes("?");
/** Whether `pattern` admits nothing `patterns` does not: listed, or a plain name one matches. */
const globWithin = (pattern, patterns) =>
  patterns.includes(pattern) || (!isPattern(pattern) && patterns.some((p) => globRegex(p).test(pattern)));

/** For each kind of rule: whether `other` is looser than `base` in that rule's field. */
const WIDENS = {
  within: (base, other) => !subset(other, base),
  within_or_any: (base, other) => base.length > 0 && !(other.length > 0 && subset(other, base)),
  at_most_duration: (base, other) => durationSeconds(other) > durationSeconds(base),
  never_enable: (base, other) => Boolean(other) && !base,
  includes_all: (base, other) => !subset(base, other),
  at_least: (base, other) => !absent(base) && (absent(other) || other < base),
  globs: (base, other) => base.length > 0 && !(other.length > 0 && other.every((p) => globWithin(p, base))),
};

/** The first field in which `stricter` is looser than `base`, or null when it only narrows. */
export function wideningField(base, stricter) {
  for (const rule of RULES) {
    const widens = WIDENS[rule.kind];
    if (widens === undefined) throw new Error(`no comparison for rule kind ${rule.kind}`);
    const value = (policy) => (absent(policy[rule.field]) ? rule.default : policy[rule.field]);
    if (widens(value(base), value(stricter))) return rule.field;
  }
  return null;
}

/** The policies a key with policy `keyPolicyId` may name, its own first. */
export function usablePolicies(keyPolicyId, policies) {
  const base = policies.find((p) => p.policy_id === keyPolicyId);
  if (!base) return [];
  return [base, ...policies.filter((p) => p !== base && wideningField(base, p) === null)];
}

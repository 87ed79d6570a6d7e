/**
 * Plan hash v1 (docs/plan-hash.md in the repository): encode, hash and verify an EvidencePlan.
 *
 * Works on the generated message, whose 64-bit integers are exact: `bigint` for the uint64
 * fields, a decimal string for `SpanRef.sourceVersionTx` (declared `[jstype = JS_STRING]`).
 * Every integer is written big-endian; strings as a u32 UTF-8 byte length and the bytes; the
 * weight as its IEEE-754 bits. Spans are hashed in the order the plan lists them (ordering is
 * the server's job); `verifyPlan` also checks that order, comparing source ids by code point.
 */

import { blake3 } from "@noble/hashes/blake3.js";
import { bytesToHex } from "@noble/hashes/utils.js";

import { type EvidencePlan, type SpanRef, SpanClass } from "./gen/planner/v1/plan_pb.js";

/** Starts every rendered plan hash. */
export const PREFIX = "b3:";

/** Hash of the empty plan: plan model "v1", budget 0, used 0, no spans. */
export const EMPTY_PLAN_HASH =
  "b3:272a6a0e4d57118a898c1ade3401cddff16bf0e0e2e7cbe59483978e37c82068";

const U32_MAX = 2 ** 32 - 1;
const U64_MAX = 2n ** 64n - 1n;
const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const DECIMAL = /^-?[0-9]+$/;
const utf8 = new TextEncoder();

/** A plan that cannot be hashed or verified as it is; `field` names the offending field. */
export class PlanFormatError extends Error {
  override readonly name = "PlanFormatError";

  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/** A plan whose `planHash` differs from the hash recomputed from its fields. */
export class PlanHashMismatchError extends Error {
  override readonly name = "PlanHashMismatchError";

  constructor(
    /** The plan's `planHash` as received. */
    readonly received: string,
    /** `planHash(plan)`. */
    readonly computed: string,
  ) {
    super(`plan hash mismatch: plan carries ${JSON.stringify(received)}, recomputed ${JSON.stringify(computed)}`);
  }
}

/** Growable big-endian byte writer. */
class Writer {
  private buf = new Uint8Array(256);
  private view = new DataView(this.buf.buffer);
  private len = 0;

  private reserve(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }

  u8(value: number): void {
    this.reserve(1);
    this.view.setUint8(this.len, value);
    this.len += 1;
  }

  u64(value: bigint, field: string): void {
    if (value < 0n || value > U64_MAX) {
      throw new PlanFormatError(field, `${value} is outside u64 (0..${U64_MAX})`);
    }
    this.reserve(8);
    this.view.setBigUint64(this.len, value, false);
    this.len += 8;
  }

  i64(value: bigint, field: string): void {
    if (value < I64_MIN || value > I64_MAX) {
      throw new PlanFormatError(field, `${value} is outside i64 (${I64_MIN}..${I64_MAX})`);
    }
    this.reserve(8);
    this.view.setBigInt64(this.len, value, false);
    this.len += 8;
  }

  f64(value: number): void {
    this.reserve(8);
    this.view.setFloat64(this.len, value, false);
    this.len += 8;
  }

  str(value: string, field: string): void {
    if (LONE_SURROGATE.test(value)) {
      throw new PlanFormatError(field, "holds a lone UTF-16 surrogate (not encodable as UTF-8)");
    }
    const raw = utf8.encode(value);
    if (raw.length > U32_MAX) {
      throw new PlanFormatError(field, `${raw.length} UTF-8 bytes, at most ${U32_MAX}`);
    }
    this.reserve(4 + raw.length);
    this.view.setUint32(this.len, raw.length, false);
    this.buf.set(raw, this.len + 4);
    this.len += 4 + raw.length;
  }

  bytes(): Uint8Array {
    return this.buf.slice(0, this.len);
  }
}

/**
 * `SpanRef.sourceVersionTx` (a decimal string) as a bigint.
 *
 * @throws PlanFormatError when it is not a decimal integer.
 */
export function sourceVersionTx(ref: SpanRef, field = "span.sourceVersionTx"): bigint {
  const text = ref.sourceVersionTx === "" ? "0" : ref.sourceVersionTx;
  if (!DECIMAL.test(text)) {
    throw new PlanFormatError(field, `${JSON.stringify(ref.sourceVersionTx)} is not a decimal integer`);
  }
  return BigInt(text);
}

/**
 * The canonical plan hash v1 bytes of `plan`, spans in the order the plan lists them.
 *
 * The weight is written as whatever bits it has (checking it is `verifyPlan`'s job).
 *
 * @throws PlanFormatError for a span without a reference, a class other than TRUTH (1) or
 *   CACHE (2), an integer outside its field, or a string that is not encodable.
 */
export function encodePlan(plan: EvidencePlan): Uint8Array {
  const out = new Writer();
  out.str(plan.planModel, "planModel");
  out.u64(plan.budget, "budget");
  out.u64(plan.used, "used");
  out.u64(BigInt(plan.spans.length), "spans");
  plan.spans.forEach((s, i) => {
    const at = `spans[${i}]`;
    const ref = s.span;
    if (ref === undefined) throw new PlanFormatError(`${at}.span`, "missing");
    out.str(ref.sourceId, `${at}.span.sourceId`);
    out.i64(sourceVersionTx(ref, `${at}.span.sourceVersionTx`), `${at}.span.sourceVersionTx`);
    out.u64(ref.start, `${at}.span.start`);
    out.u64(ref.end, `${at}.span.end`);
    out.str(s.kind, `${at}.kind`);
    if (s.class !== SpanClass.TRUTH && s.class !== SpanClass.CACHE) {
      throw new PlanFormatError(`${at}.class`, `${SpanClass[s.class] ?? s.class}, must be SPAN_CLASS_TRUTH or SPAN_CLASS_CACHE`);
    }
    out.u8(s.class);
    out.f64(s.weight);
    out.u64(s.tokens, `${at}.tokens`);
  });
  return out.bytes();
}

/**
 * `"b3:"` + the 64 lowercase hex digits of BLAKE3-256 over `encodePlan(plan)`.
 *
 * @throws PlanFormatError see `encodePlan`.
 */
export function planHash(plan: EvidencePlan): string {
  return PREFIX + bytesToHex(blake3(encodePlan(plan)));
}

/**
 * Compare two source ids by Unicode code point (the same as comparing their UTF-8 bytes):
 * negative, zero or positive. Not JavaScript's `<`, which compares UTF-16 code units and so
 * puts U+1F600 before U+FF21.
 */
export function compareSourceIds(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const ca = a.codePointAt(i) as number;
    const cb = b.codePointAt(j) as number;
    if (ca !== cb) return ca < cb ? -1 : 1;
    i += ca > 0xffff ? 2 : 1;
    j += cb > 0xffff ? 2 : 1;
  }
  if (i < a.length) return 1;
  if (j < b.length) return -1;
  return 0;
}

/** Canonical span order: source id by code point, then version, start and end. */
export function compareSpanRefs(a: SpanRef, b: SpanRef): number {
  const bySource = compareSourceIds(a.sourceId, b.sourceId);
  if (bySource !== 0) return bySource;
  const ta = sourceVersionTx(a);
  const tb = sourceVersionTx(b);
  if (ta !== tb) return ta < tb ? -1 : 1;
  if (a.start !== b.start) return a.start < b.start ? -1 : 1;
  if (a.end !== b.end) return a.end < b.end ? -1 : 1;
  return 0;
}

/**
 * Check that `plan` is well formed for hashing and that its `planHash` is `planHash(plan)`.
 *
 * Well formed: every span has a reference, a class TRUTH or CACHE and a weight that is finite
 * and not below zero (-0.0 is allowed and hashed as its own bits); spans are strictly
 * ascending in canonical order (`compareSpanRefs`).
 *
 * @throws PlanFormatError naming the field when the plan is malformed.
 * @throws PlanHashMismatchError naming both hashes when they differ.
 */
export function verifyPlan(plan: EvidencePlan): void {
  let previous: SpanRef | undefined;
  plan.spans.forEach((s, i) => {
    const ref = s.span;
    if (ref === undefined) throw new PlanFormatError(`spans[${i}].span`, "missing");
    if (!Number.isFinite(s.weight) || s.weight < 0) {
      throw new PlanFormatError(`spans[${i}].weight`, `${s.weight}, must be finite and >= 0`);
    }
    if (previous !== undefined && compareSpanRefs(previous, ref) >= 0) {
      throw new PlanFormatError(
        `spans[${i}].span`,
        `(${JSON.stringify(ref.sourceId)}, ${ref.sourceVersionTx}, ${ref.start}, ${ref.end}) is not after spans[${i - 1}]; spans must be in ascending canonical order`,
      );
    }
    previous = ref;
  });
  const computed = planHash(plan);
  if (computed !== plan.planHash) throw new PlanHashMismatchError(plan.planHash, computed);
}

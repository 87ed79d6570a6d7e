/** Plan hash v1 in TypeScript against every committed vector, the byte layout and the rules. */

import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";

import { type JsonObject, clone, create, fromJson } from "@bufbuild/protobuf";
import { bytesToHex } from "@noble/hashes/utils.js";

import { safeNumber, toPlan } from "../src/client.js";
import {
  CandidateExplanationSchema,
  CandidateFate,
  type EvidencePlan,
  EvidencePlanSchema,
  PlanStatsSchema,
  SpanClass,
} from "../src/gen/planner/v1/plan_pb.js";
import {
  EMPTY_PLAN_HASH,
  PlanFormatError,
  PlanHashMismatchError,
  compareSourceIds,
  encodePlan,
  planHash,
  verifyPlan,
} from "../src/planhash.js";
import { repoRoot } from "./paths.js";

interface Vector {
  file: string;
  name: string;
  plan: EvidencePlan;
}

function loadVectors(): Vector[] {
  const dir = join(repoRoot(), "tests", "vectors");
  const out: Vector[] = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".jsonl")).sort()) {
    for (const line of readFileSync(join(dir, file), "utf8").split("\n")) {
      if (line.trim() === "") continue;
      const json = JSON.parse(line) as JsonObject;
      // "name" is the only key outside the EvidencePlan JSON mapping.
      const plan = fromJson(EvidencePlanSchema, json, { ignoreUnknownFields: true });
      out.push({ file, name: String(json["name"]), plan });
    }
  }
  return out;
}

const VECTORS = loadVectors();

function vector(prefix: string): EvidencePlan {
  const found = VECTORS.find((v) => v.name.startsWith(prefix));
  assert.ok(found, `vector ${prefix} missing`);
  return found.plan;
}

describe("every committed vector", () => {
  test("is read: the published seven and the fifteen edge cases", () => {
    const perFile = new Map<string, number>();
    for (const v of VECTORS) perFile.set(v.file, (perFile.get(v.file) ?? 0) + 1);
    assert.deepEqual(Object.fromEntries(perFile), {
      "plan_hash_v1.jsonl": 7,
      "plan_hash_v1_extra.jsonl": 15,
    });
  });

  for (const v of VECTORS) {
    test(`${v.file}: ${v.name}`, () => {
      assert.equal(planHash(v.plan), v.plan.planHash);
      verifyPlan(v.plan);
    });
  }
});

describe("the rules of docs/plan-hash.md", () => {
  test("a span's location is read but not hashed", () => {
    const plan = vector("spans with locations");
    assert.equal(plan.spans.length, 3);
    assert.equal(plan.spans[0]!.location?.page, 2);
    assert.deepEqual(plan.spans[0]!.location?.headingPath, ["Swarm control"]);
    assert.equal(plan.spans[1]!.location?.cellIndex, 3);
    const bare = clone(EvidencePlanSchema, plan);
    for (const span of bare.spans) span.location = undefined;
    assert.equal(planHash(plan), plan.planHash);
    assert.equal(planHash(bare), plan.planHash);
  });

  test("source ids compare by code point, not UTF-16 code units", () => {
    const plan = vector("source ids by code point");
    const ids = plan.spans.map((s) => s.span?.sourceId ?? "");
    assert.deepEqual(ids, ["\uFF21", "\uFFFD", "\u{10000}", "\u{1F600}"]);
    assert.deepEqual([...ids].sort(compareSourceIds), ids);
    // JavaScript's own comparison is by UTF-16 code units: the surrogate pairs come first.
    assert.deepEqual([...ids].sort(), ["\u{10000}", "\u{1F600}", "\uFF21", "\uFFFD"]);
    assert.equal(ids[1]! < ids[2]!, false);
    assert.equal(compareSourceIds(ids[1]!, ids[2]!), -1);
    // Code point order is UTF-8 byte order.
    const bytes = ids.map((id) => Buffer.from(id, "utf8"));
    assert.deepEqual([...bytes].sort(Buffer.compare), bytes);
    assert.equal(compareSourceIds("ab", "abc"), -1);
    assert.equal(compareSourceIds("abc", "ab"), 1);
    assert.equal(compareSourceIds("\u{1F600}", "\u{1F600}"), 0);
  });

  test("the byte layout of one span", () => {
    const plan = create(EvidencePlanSchema, {
      planModel: "v1",
      budget: 100n,
      used: 7n,
      spans: [
        {
          span: { sourceId: "ab", sourceVersionTx: "-2", start: 3n, end: 9n },
          kind: "code",
          class: SpanClass.CACHE,
          weight: 1.5,
          tokens: 7n,
          text: "not hashed",
        },
      ],
    });
    const expected =
      "00000002" + "7631" + "0000000000000064" + "0000000000000007" + "0000000000000001" +
      "00000002" + "6162" + "fffffffffffffffe" + "0000000000000003" + "0000000000000009" +
      "00000004" + "636f6465" + "02" + "3ff8000000000000" + "0000000000000007";
    assert.equal(bytesToHex(encodePlan(plan)), expected);
  });

  test("the empty plan", () => {
    const empty = create(EvidencePlanSchema, { planModel: "v1" });
    assert.equal(bytesToHex(encodePlan(empty)), "000000027631" + "00".repeat(24));
    assert.equal(planHash(empty), EMPTY_PLAN_HASH);
    assert.match(EMPTY_PLAN_HASH, /^b3:[0-9a-f]{64}$/);
  });

  test("weights are hashed by their bits", () => {
    const plan = vector("one truth span");
    const withWeight = (w: number): string => {
      const p = clone(EvidencePlanSchema, plan);
      p.spans[0]!.weight = w;
      return planHash(p);
    };
    assert.notEqual(withWeight(0.1 + 0.2), withWeight(0.3));
    assert.notEqual(withWeight(0), withWeight(-0));
    assert.equal(planHash(vector("weight 0.1+0.2 vs 0.3")), vector("weight 0.1+0.2 vs 0.3").planHash);
  });
});

describe("verifyPlan", () => {
  const base = (): EvidencePlan => clone(EvidencePlanSchema, vector("cache class and heading"));
  const rejects = (edit: (p: EvidencePlan) => void, field: string): void => {
    const plan = base();
    edit(plan);
    try {
      plan.planHash = planHash(plan); // the hash matches: only the shape is wrong
    } catch {
      // encodePlan refuses some shapes itself
    }
    assert.throws(() => verifyPlan(plan), (err: unknown) => err instanceof PlanFormatError && err.field === field);
  };

  test("accepts the vector", () => verifyPlan(base()));
  test("rejects class 0", () => rejects((p) => { p.spans[1]!.class = SpanClass.UNSPECIFIED; }, "spans[1].class"));
  test("rejects a NaN weight", () => rejects((p) => { p.spans[0]!.weight = Number.NaN; }, "spans[0].weight"));
  test("rejects an infinite weight", () => rejects((p) => { p.spans[0]!.weight = Infinity; }, "spans[0].weight"));
  test("rejects a negative weight", () => rejects((p) => { p.spans[1]!.weight = -0.25; }, "spans[1].weight"));
  test("rejects spans out of order", () => rejects((p) => { p.spans.reverse(); }, "spans[1].span"));
  test("rejects a duplicate span", () => rejects((p) => { p.spans[1] = clone(EvidencePlanSchema, p).spans[0]!; }, "spans[1].span"));
  test("rejects a span without its reference", () => rejects((p) => { p.spans[0]!.span = undefined; }, "spans[0].span"));

  test("names both hashes when a hashed field changed", () => {
    const plan = base();
    const sent = plan.planHash;
    plan.spans[0]!.tokens += 1n;
    assert.throws(
      () => verifyPlan(plan),
      (err: unknown) =>
        err instanceof PlanHashMismatchError && err.received === sent && err.computed === planHash(plan) &&
        err.message.includes(sent) && err.message.includes(err.computed),
    );
  });

  test("text, stats and explanations are not hashed", () => {
    const plan = base();
    plan.spans[0]!.text = "different text";
    plan.stats = create(PlanStatsSchema, { poolSpans: 9n, tokenEstimate: true });
    plan.explanations.push(create(CandidateExplanationSchema, { fate: CandidateFate.PACKED }));
    verifyPlan(plan);
  });

  test("integers outside their fields are refused", () => {
    const over = base();
    over.spans[0]!.tokens = 2n ** 64n;
    assert.throws(() => encodePlan(over), /spans\[0\]\.tokens: 18446744073709551616 is outside u64/);
    const tx = base();
    tx.spans[0]!.span!.sourceVersionTx = "9223372036854775808";
    assert.throws(() => encodePlan(tx), /spans\[0\]\.span\.sourceVersionTx: .* is outside i64/);
  });
});

describe("toPlan", () => {
  test("numbers for counts and offsets, a string for the version, JSON-serialisable", () => {
    const plan = toPlan(vector("one truth span"));
    assert.deepEqual(plan.spans[0], {
      sourceId: "doc-1",
      sourceVersionTx: "1751500000000000",
      start: 128,
      end: 512,
      kind: "paragraph",
      spanClass: "truth",
      weight: 0.842,
      tokens: 94,
      text: "",
      location: { page: null, headingPath: [], cellIndex: null },
    });
    assert.equal(plan.budget, 6000);
    assert.deepEqual(JSON.parse(JSON.stringify(plan)), plan);
  });

  test("each span's location, null where the plan has none", () => {
    const plan = toPlan(vector("spans with locations"));
    assert.deepEqual(plan.spans.map((s) => s.location), [
      { page: 2, headingPath: ["Swarm control"], cellIndex: null },
      { page: null, headingPath: ["Finding"], cellIndex: 3 },
      { page: null, headingPath: ["The varroa mite", "Oxalic acid in winter"], cellIndex: null },
    ]);
    assert.deepEqual(JSON.parse(JSON.stringify(plan)), plan);
  });

  test("a value beyond 2^53 - 1 throws instead of rounding", () => {
    assert.throws(() => toPlan(vector("max u64 tokens")), /budget: 18446744073709551615 does not fit/);
    assert.equal(safeNumber(2n ** 53n - 1n, "x"), Number.MAX_SAFE_INTEGER);
    assert.throws(() => safeNumber(2n ** 53n, "x"), RangeError);
  });
});

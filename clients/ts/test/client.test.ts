/**
 * The TypeScript client against a live server: `planner-svc serve` on a data directory built
 * with `planner-svc ingest tests/fixtures/wiki_fixture.jsonl`, on a port the server picks, and
 * stopped at the end. The planner-svc command is $PLANNER_SVC, else the repository's .venv.
 */

import assert from "node:assert/strict";
import { type ChildProcessByStdio, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";

import { Code } from "@connectrpc/connect";

import { PlannerClient, PlannerError } from "../src/client.js";
import { EMPTY_PLAN_HASH, planHash } from "../src/planhash.js";
import { repoRoot } from "./paths.js";

const ROOT = repoRoot();
const CLI = process.env["PLANNER_SVC"] ?? join(ROOT, ".venv", "bin", "planner-svc");
const AS_OF = "1800000000000000";
const GOATS = "In which present-day country did goats first get domesticated?";

/** The address the server logs in its "serving" event (JSON lines on stderr). */
async function servingAddress(server: ChildProcessByStdio<null, null, Readable>): Promise<string> {
  const lines = createInterface({ input: server.stderr });
  const exited = once(server, "exit").then(([code]) => {
    throw new Error(`planner-svc serve exited with code ${String(code)} before serving`);
  });
  const serving = (async () => {
    for await (const line of lines) {
      if (!line.startsWith("{")) continue;
      const event = JSON.parse(line) as { event?: string; address?: string };
      if (event.event === "serving" && event.address) return event.address;
    }
    throw new Error("planner-svc serve closed its log before serving");
  })();
  const timeout = new Promise<never>((_, reject) => {
    setTimeout(() => reject(new Error("planner-svc serve not serving after 120 s")), 120_000).unref();
  });
  return Promise.race([serving, exited, timeout]);
}

describe("PlannerClient against planner-svc serve", () => {
  let dataDir = "";
  let server: ChildProcessByStdio<null, null, Readable> | undefined;
  let address = "";
  let client: PlannerClient;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "planner-ts-"));
    execFileSync(CLI, ["ingest", join(ROOT, "tests", "fixtures", "wiki_fixture.jsonl"), "--data", dataDir, "--quiet"], {
      stdio: ["ignore", "ignore", "inherit"],
    });
    server = spawn(CLI, ["serve", "--data", dataDir, "--host", "127.0.0.1", "--port", "0"], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    address = await servingAddress(server);
    client = new PlannerClient({ baseUrl: `http://${address}` });
  });

  after(async () => {
    client?.close();
    if (server !== undefined && server.exitCode === null) {
      const exited = once(server, "exit");
      server.kill("SIGTERM");
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  test("plans a question, verified, with the hash the Python client gets", async () => {
    const plan = await client.plan(GOATS, { budgetTokens: 500, atValidUs: AS_OF, atTxUs: AS_OF });
    assert.ok(plan.spans.some((s) => s.sourceId === "wiki/Capra_(genus)"));
    assert.equal(plan.budget, 450); // 500 requested, every span estimated: floor(500 * 0.9)
    assert.ok(plan.used > 0 && plan.used <= plan.budget);
    for (const span of plan.spans) {
      assert.equal(typeof span.tokens, "number");
      assert.equal(typeof span.start, "number");
      assert.match(span.sourceVersionTx, /^[0-9]+$/);
    }
    assert.deepEqual(JSON.parse(JSON.stringify(plan)), plan);

    const python = JSON.parse(
      execFileSync(CLI, ["plan", GOATS, "--json", "--address", address, "--budget", "500",
        "--at-valid", AS_OF, "--at-tx", AS_OF], { encoding: "utf8" }),
    ) as { planHash: string; spans: { span: { sourceId: string }; location?: { headingPath?: string[] } }[] };
    assert.equal(plan.planHash, python.planHash);
    assert.deepEqual(plan.spans.map((s) => s.sourceId), python.spans.map((s) => s.span.sourceId));
    // Markdown spans name their headings; the fixture has no pages or notebook cells.
    assert.deepEqual(plan.spans.map((s) => s.location.headingPath), python.spans.map((s) => s.location?.headingPath ?? []));
    assert.ok(plan.spans.every((s) => s.location.headingPath.length > 0 && s.location.page === null && s.location.cellIndex === null));
  });

  test("the question once plans as the question in both legs", async () => {
    const common = { expandDepth: 1, budgetTokens: 800n, atValid: BigInt(AS_OF), atTx: BigInt(AS_OF) };
    const question = "Which port is the world's busiest by cargo tonnage?";
    const single = await client.planMessage({ question, ...common });
    const both = await client.planMessage({
      structured: { text: question },
      semantic: { input: { case: "text", value: question } },
      ...common,
    });
    assert.ok(single.spans.length > 0);
    assert.equal(single.planHash, both.planHash);
    assert.equal(planHash(single), single.planHash);
  });

  test("an invalid request is InvalidArgument with the field violation decoded", async () => {
    await assert.rejects(client.plan("goats", { expandDepth: 5 }), (err: unknown) => {
      assert.ok(err instanceof PlannerError);
      assert.equal(err.code, Code.InvalidArgument);
      assert.equal(err.codeName, "InvalidArgument");
      assert.deepEqual(err.fieldViolations, [{ field: "expand_depth", description: "must be in 0..2, got 5" }]);
      return true;
    });
  });

  test("no evidence is FailedPrecondition with ErrorInfo, or the empty plan when allowed", async () => {
    const request = { structured: { text: "zqxjkv wvqpzy" } };
    await assert.rejects(client.planMessage(request), (err: unknown) => {
      assert.ok(err instanceof PlannerError);
      assert.equal(err.code, Code.FailedPrecondition);
      assert.equal(err.reason, "INSUFFICIENT_EVIDENCE");
      assert.equal(err.domain, "planner.plannersvc.dev");
      return true;
    });
    const empty = await client.planMessage({ ...request, allowUngrounded: true });
    assert.equal(empty.planHash, EMPTY_PLAN_HASH);
    assert.equal(empty.spans.length, 0);
  });
});

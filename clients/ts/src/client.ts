/**
 * A small typed wrapper over the generated EvidencePlannerService client: plan a question,
 * verify the plan hash, and get the plan as plain, JSON-serialisable values.
 *
 * Number policy: token counts, budgets, offsets and counters are uint64 on the wire and
 * `bigint` in the generated messages; here they are `number`, because they fit in 2^53 (a
 * budget is at most 10^7 tokens, offsets index one text). A value that does not fit throws a
 * RangeError naming the field instead of losing precision. `sourceVersionTx` is a span's
 * identity: it stays a decimal string, exact at any value, as the proto3 JSON mapping writes it.
 */

import { type MessageInitShape, create } from "@bufbuild/protobuf";
import {
  type CallOptions,
  type Client,
  Code,
  ConnectError,
  type Interceptor,
  createClient,
} from "@connectrpc/connect";
import { Http2SessionManager, createGrpcTransport } from "@connectrpc/connect-node";

import { BadRequestSchema, ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";
import {
  type EvidencePlan,
  EvidencePlannerService,
  PlanRequestSchema,
  SpanClass,
} from "./gen/planner/v1/plan_pb.js";
import { verifyPlan } from "./planhash.js";

/** One span of a plan, with plain values. */
export interface Span {
  /** Identity of the source. */
  sourceId: string;
  /** Transaction time of the source version, microseconds since the Unix epoch, as a decimal string (exact). */
  sourceVersionTx: string;
  /** UTF-8 byte offset of the first byte. */
  start: number;
  /** UTF-8 byte offset one past the last byte. */
  end: number;
  /** Structural kind: paragraph | heading | cell | code | body. */
  kind: string;
  /** Verbatim source text or a derived artifact. */
  spanClass: "truth" | "cache";
  /** The span's weight (dimensionless, finite, >= 0). */
  weight: number;
  /** Tokens of the span text. */
  tokens: number;
  /** The span's text. */
  text: string;
  /** Where the span sits in its original document (not hashed). */
  location: SpanLocation;
}

/** Where a span sits in its original document (see SpanLocation in protos/planner/v1/plan.proto). */
export interface SpanLocation {
  /** Page number from 1 (PDF), else null. */
  page: number | null;
  /** Texts of the enclosing headings, outermost first; empty when none encloses the span. */
  headingPath: string[];
  /** Notebook cell index from 0, else null. */
  cellIndex: number | null;
}

/** Counters of one plan (see PlanStats in protos/planner/v1/plan.proto); counts are numbers. */
export interface PlanStats {
  poolSpans: number;
  selectedSpans: number;
  deduped: number;
  skippedUnpackable: number;
  skippedBudgetFull: number;
  capSkipped: number;
  budgetStrandedByCap: number;
  capTokens: number;
  tokenEstimate: boolean;
  nodesRecalled: number;
  nodesWithoutSpans: number;
  kindMissing: number;
  slicesMissing: number;
  poolDuplicates: number;
  structuredHits: number;
  semanticHits: number;
  expandedHits: number;
  nodesNotLive: number;
}

/** A verified evidence plan with plain values (`JSON.stringify` works on it). */
export interface Plan {
  /** Plan model version, "v1". */
  planModel: string;
  /** "b3:" + 64 lowercase hex digits, verified against the spans. */
  planHash: string;
  /** Effective budget in tokens. */
  budget: number;
  /** Tokens packed. */
  used: number;
  /** Selected spans in canonical order. */
  spans: Span[];
  /** Recall and selection counters. */
  stats: PlanStats;
}

/** A request's as-of time: microseconds since the Unix epoch (a number must be a safe integer). */
export type Micros = bigint | number | string;

/** Options of `PlannerClient.plan`. */
export interface PlanOptions {
  /** Requested budget in tokens, 1..10,000,000; absent = the server default. */
  budgetTokens?: number;
  /** Hop expansion depth, 0..2; default 1 (as `planner-svc plan` asks). */
  expandDepth?: number;
  /** As-of valid time; absent = now. */
  atValidUs?: Micros;
  /** As-of transaction time; absent = now. */
  atTxUs?: Micros;
  /** Model whose tokenizer and context window apply; absent = the server default. */
  model?: string;
  /** An empty plan instead of FAILED_PRECONDITION when nothing is recalled. */
  allowUngrounded?: boolean;
  /** Deadline of the call in milliseconds; default 30,000. */
  timeoutMs?: number;
  /** Cancels the call. */
  signal?: AbortSignal;
}

/** A field violation of a google.rpc.BadRequest detail. */
export interface FieldViolation {
  field: string;
  description: string;
}

/**
 * A failed call, with the service's error details decoded: the field violations of
 * INVALID_ARGUMENT (google.rpc.BadRequest) and the reason and domain of google.rpc.ErrorInfo
 * (FAILED_PRECONDITION, e.g. INSUFFICIENT_EVIDENCE in domain planner.plannersvc.dev).
 */
export class PlannerError extends Error {
  override readonly name = "PlannerError";
  /** The gRPC status code. */
  readonly code: Code;
  /** The code's name, e.g. "InvalidArgument". */
  readonly codeName: string;
  /** The status message. */
  readonly rawMessage: string;
  /** Field violations (empty when the status has no BadRequest detail). */
  readonly fieldViolations: readonly FieldViolation[];
  /** ErrorInfo.reason, when the status has an ErrorInfo detail. */
  readonly reason: string | undefined;
  /** ErrorInfo.domain, when the status has an ErrorInfo detail. */
  readonly domain: string | undefined;

  constructor(err: ConnectError) {
    super(err.message, { cause: err });
    this.code = err.code;
    this.codeName = Code[err.code];
    this.rawMessage = err.rawMessage;
    this.fieldViolations = err
      .findDetails(BadRequestSchema)
      .flatMap((d) => d.fieldViolations.map((v) => ({ field: v.field, description: v.description })));
    const [info] = err.findDetails(ErrorInfoSchema);
    this.reason = info?.reason;
    this.domain = info?.domain;
  }
}

/**
 * `value` as a number when it is a safe integer (|value| <= 2^53 - 1).
 *
 * @throws RangeError naming `field` otherwise.
 */
export function safeNumber(value: bigint, field: string): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) {
    throw new RangeError(`${field}: ${value} does not fit in a JavaScript number exactly (|x| <= 2^53 - 1)`);
  }
  return Number(value);
}

function exactInteger(value: bigint | number | string, field: string): bigint {
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw new RangeError(`${field}: ${value} is not a safe integer`);
    return BigInt(value);
  }
  if (typeof value === "string") {
    if (!/^-?[0-9]+$/.test(value)) throw new RangeError(`${field}: ${JSON.stringify(value)} is not a decimal integer`);
    return BigInt(value);
  }
  return value;
}

/**
 * The plain form of a generated EvidencePlan (no verification: see `verifyPlan`).
 *
 * @throws RangeError when a count or offset does not fit in a number.
 */
export function toPlan(message: EvidencePlan): Plan {
  const st = message.stats;
  const count = (name: string, value: bigint | undefined): number =>
    safeNumber(value ?? 0n, `stats.${name}`);
  return {
    planModel: message.planModel,
    planHash: message.planHash,
    budget: safeNumber(message.budget, "budget"),
    used: safeNumber(message.used, "used"),
    spans: message.spans.map((s, i) => ({
      sourceId: s.span?.sourceId ?? "",
      sourceVersionTx: s.span?.sourceVersionTx ?? "0",
      start: safeNumber(s.span?.start ?? 0n, `spans[${i}].span.start`),
      end: safeNumber(s.span?.end ?? 0n, `spans[${i}].span.end`),
      kind: s.kind,
      spanClass: s.class === SpanClass.CACHE ? "cache" : "truth",
      weight: s.weight,
      tokens: safeNumber(s.tokens, `spans[${i}].tokens`),
      text: s.text,
      location: {
        page: s.location?.page ?? null,
        headingPath: [...(s.location?.headingPath ?? [])],
        cellIndex: s.location?.cellIndex ?? null,
      },
    })),
    stats: {
      poolSpans: count("poolSpans", st?.poolSpans),
      selectedSpans: count("selectedSpans", st?.selectedSpans),
      deduped: count("deduped", st?.deduped),
      skippedUnpackable: count("skippedUnpackable", st?.skippedUnpackable),
      skippedBudgetFull: count("skippedBudgetFull", st?.skippedBudgetFull),
      capSkipped: count("capSkipped", st?.capSkipped),
      budgetStrandedByCap: count("budgetStrandedByCap", st?.budgetStrandedByCap),
      capTokens: count("capTokens", st?.capTokens),
      tokenEstimate: st?.tokenEstimate ?? false,
      nodesRecalled: count("nodesRecalled", st?.nodesRecalled),
      nodesWithoutSpans: count("nodesWithoutSpans", st?.nodesWithoutSpans),
      kindMissing: count("kindMissing", st?.kindMissing),
      slicesMissing: count("slicesMissing", st?.slicesMissing),
      poolDuplicates: count("poolDuplicates", st?.poolDuplicates),
      structuredHits: count("structuredHits", st?.structuredHits),
      semanticHits: count("semanticHits", st?.semanticHits),
      expandedHits: count("expandedHits", st?.expandedHits),
      nodesNotLive: count("nodesNotLive", st?.nodesNotLive),
    },
  };
}

/** Where the server is and how to authenticate. */
export interface PlannerClientOptions {
  /** The server, e.g. "http://127.0.0.1:50151" (plaintext HTTP/2) or "https://..." (TLS). */
  baseUrl: string;
  /** Bearer token (the server's PLANNER_SVC_AUTH_TOKEN); absent = none. */
  token?: string;
}

/**
 * Plans questions over gRPC (Connect's gRPC protocol on HTTP/2) and verifies every plan's hash.
 * `close()` ends the HTTP/2 connection.
 */
export class PlannerClient {
  /** The generated client, for everything the wrapper does not cover (explain, filters). */
  readonly planner: Client<typeof EvidencePlannerService>;
  private readonly session: Http2SessionManager;

  constructor(options: PlannerClientOptions) {
    this.session = new Http2SessionManager(options.baseUrl);
    const interceptors: Interceptor[] = [];
    const token = options.token;
    if (token) {
      interceptors.push((next) => (req) => {
        req.header.set("authorization", `Bearer ${token}`);
        return next(req);
      });
    }
    const transport = createGrpcTransport({
      baseUrl: options.baseUrl,
      sessionManager: this.session,
      interceptors,
    });
    this.planner = createClient(EvidencePlannerService, transport);
  }

  /**
   * The verified plan of `question`: the question once (both recall legs search with it),
   * hop expansion 1 unless `options.expandDepth` says otherwise.
   *
   * @throws PlannerError when the call fails (with its error details decoded).
   * @throws PlanHashMismatchError or PlanFormatError when the plan does not verify.
   * @throws RangeError when a count or offset does not fit in a number.
   */
  async plan(question: string, options: PlanOptions = {}): Promise<Plan> {
    const request: MessageInitShape<typeof PlanRequestSchema> = {
      question,
      expandDepth: options.expandDepth ?? 1,
      model: options.model ?? "",
      allowUngrounded: options.allowUngrounded ?? false,
    };
    if (options.budgetTokens !== undefined) {
      request.budgetTokens = exactInteger(options.budgetTokens, "budgetTokens");
    }
    if (options.atValidUs !== undefined) request.atValid = exactInteger(options.atValidUs, "atValidUs");
    if (options.atTxUs !== undefined) request.atTx = exactInteger(options.atTxUs, "atTxUs");
    const call: CallOptions = { timeoutMs: options.timeoutMs ?? 30_000 };
    if (options.signal !== undefined) call.signal = options.signal;
    return toPlan(await this.planMessage(request, call));
  }

  /**
   * The verified plan of any PlanRequest, as the generated message (exact 64-bit values,
   * explanations included when asked for).
   *
   * @throws PlannerError, PlanHashMismatchError, PlanFormatError as `plan`.
   */
  async planMessage(
    request: MessageInitShape<typeof PlanRequestSchema>,
    call: CallOptions = {},
  ): Promise<EvidencePlan> {
    let plan: EvidencePlan | undefined;
    try {
      plan = (await this.planner.plan(create(PlanRequestSchema, request), call)).plan;
    } catch (err) {
      throw err instanceof ConnectError ? new PlannerError(err) : err;
    }
    if (plan === undefined) throw new PlannerError(new ConnectError("response without a plan", Code.Internal));
    verifyPlan(plan);
    return plan;
  }

  /** Close the HTTP/2 connection; the client is not used after it. */
  close(): void {
    this.session.abort();
  }
}

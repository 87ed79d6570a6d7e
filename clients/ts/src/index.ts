/**
 * TypeScript client of planner-svc.
 *
 * - `PlannerClient`: plan a question over gRPC and get a verified plan with plain values;
 * - `planHash`, `verifyPlan`, `encodePlan`, `compareSourceIds`: plan hash v1
 *   (docs/plan-hash.md);
 * - the generated messages and services: `@planner-svc/client/gen/planner/v1/plan_pb.js` (and
 *   `memory_pb.js`, `research_pb.js`), `@planner-svc/client/gen/google/rpc/error_details_pb.js`.
 */

export * from "./client.js";
export * from "./planhash.js";

/** Where the repository is, seen from a compiled test (dist/test) or its source (test). */

import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root: the nearest ancestor holding protos/planner. */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "protos", "planner"))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error("not inside the planner-svc repository");
    dir = parent;
  }
  return dir;
}

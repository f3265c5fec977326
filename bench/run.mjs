// npm run bench [-- --jobs 10000 --repeats 3 --rounds 5 --scale 1000,100000,1000000 --out bench/results/latest.json --no-build]
// Prints the benchmark's tables and, with --out, writes the full result as JSON. --rounds is how
// many times the passes of what is compared alternate (in each repeat, and in the black-box
// run); --scale lists how many jobs are already in D1 at each point of the run as the table
// grows.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { parseArgs } from "node:util";
import { formatTable, runBenchmark } from "./benchmark.mjs";

const { values: args } = parseArgs({
  options: {
    jobs: { type: "string", default: "10000" },
    repeats: { type: "string", default: "3" },
    rounds: { type: "string", default: "5" },
    scale: { type: "string", default: "1000,100000,1000000" },
    out: { type: "string" },
    "no-build": { type: "boolean", default: false },
  },
});
const result = await runBenchmark({
  jobs: Number(args.jobs),
  repeats: Number(args.repeats),
  rounds: Number(args.rounds),
  scale: args.scale.split(",").map(Number),
  build: !args["no-build"],
});
console.log(`\n${formatTable(result)}`);
if (args.out) {
  mkdirSync(dirname(args.out), { recursive: true });
  writeFileSync(args.out, JSON.stringify(result, null, 2) + "\n");
  console.log(`\nwritten to ${args.out}`);
}

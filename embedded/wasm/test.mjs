// Loads the nrpt-core WebAssembly module in Node (20+) and checks it against the
// native results that the host binary `toyrun json` printed at test time.
//
//   node embedded/wasm/test.mjs MODULE.wasm NATIVE.json
//
// Checks: the optimal-window solver on a grid of (P, S) (windows exactly, reals to the
// bit, and W⋆(16, 0.4) = 7.4133862407 against the known value), and the toy tempering
// run (round trips, swap counts, ladder bits, checksum, and the whole text report byte
// for byte). Ends with the plain line "wasm: N passed, M failed"; exit status 1 on any
// failure.

import { readFileSync } from "node:fs";
import { strict as assert } from "node:assert";

const [wasmPath, nativePath] = process.argv.slice(2);
if (!wasmPath || !nativePath) {
  console.error("usage: node test.mjs MODULE.wasm NATIVE.json");
  process.exit(2);
}

const native = JSON.parse(readFileSync(nativePath, "utf8"));
const { instance } = await WebAssembly.instantiate(readFileSync(wasmPath), {});
const wasm = instance.exports;

let passed = 0;
let failed = 0;
function check(name, fn) {
  try {
    fn();
    passed += 1;
  } catch (e) {
    failed += 1;
    console.error(`FAIL ${name}: ${e.message}`);
  }
}

/** JSON numbers are the shortest decimals of the native f64; strings stand for the rest. */
function fromJson(x) {
  if (x === null) return null;
  if (typeof x === "string") return x === "inf" ? Infinity : x === "-inf" ? -Infinity : NaN;
  return x;
}

/** A u64 export: WebAssembly's i64 reaches JavaScript as a signed BigInt. */
const u64 = (x) => BigInt.asUintN(64, x);

function f64Bits(x) {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  return view.getBigUint64(0).toString(16).padStart(16, "0");
}

/** The same f64, bit for bit (NaN payloads aside). */
function sameF64(got, want, what) {
  if (Number.isNaN(want)) {
    assert.ok(Number.isNaN(got), `${what}: got ${got}, want NaN`);
  } else {
    assert.equal(f64Bits(got), f64Bits(want), `${what}: got ${got}, want ${want}`);
  }
}

check("W*(16, 0.4) = 7.4133862407", () => {
  const w = wasm.nrpt_w_star(16, 0.4);
  assert.ok(Math.abs(w - 7.4133862407) < 1e-9, `got ${w}`);
  assert.equal(wasm.nrpt_optimal_window(16, 0.4), 7);
  assert.equal(wasm.nrpt_paper_window(16, 0.4), 8);
});

check("invalid input gives NaN or 0", () => {
  assert.ok(Number.isNaN(wasm.nrpt_w_star(1, 0.4)));
  assert.equal(wasm.nrpt_optimal_window(16, 1.5), 0);
  assert.ok(Number.isNaN(wasm.nrpt_expected_round_trip(16, 0, 0.4)));
});

for (const row of native.solver) {
  const { chains: p, swap_rate: s } = row;
  check(`solver P = ${p}, S = ${s}`, () => {
    const wStar = fromJson(row.w_star);
    sameF64(wasm.nrpt_w_star(p, s), wStar ?? NaN, "w_star");
    assert.equal(wasm.nrpt_optimal_window(p, s), row.optimal_window ?? 0, "optimal_window");
    assert.equal(wasm.nrpt_paper_window(p, s), row.paper_window ?? 0, "paper_window");
    if (row.optimal_window !== null) {
      sameF64(
        wasm.nrpt_expected_round_trip(p, row.optimal_window, s),
        fromJson(row.expected_round_trip),
        "expected_round_trip",
      );
    }
    if (wStar !== null) {
      sameF64(wasm.nrpt_round_trip_rate(p, wStar, s), fromJson(row.round_trip_rate), "round_trip_rate");
    }
  });
}

const toy = native.toy;
const length = wasm.toy_run(toy.seed, toy.iterations);
check("toy run succeeds", () => assert.ok(length > 0, "toy_run returned 0"));

check("toy round trips and restarts", () => {
  assert.equal(u64(wasm.toy_round_trips()), BigInt(toy.round_trips));
  assert.equal(u64(wasm.toy_authors_round_trips()), BigInt(toy.authors_round_trips));
  assert.equal(u64(wasm.toy_restarts()), BigInt(toy.restarts));
});

check("toy swap counts per pair", () => {
  toy.swaps.forEach((n, pair) => assert.equal(u64(wasm.toy_swaps(pair)), BigInt(n), `pair ${pair}`));
  toy.attempts.forEach((n, pair) =>
    assert.equal(u64(wasm.toy_attempts(pair)), BigInt(n), `pair ${pair} attempts`),
  );
  assert.equal(u64(wasm.toy_swaps(toy.swaps.length)), 2n ** 64n - 1n, "pair out of range");
});

check("toy final ladder and buffer, bit for bit", () => {
  toy.ladder_bits.forEach((bits, level) =>
    assert.equal(f64Bits(wasm.toy_ladder(level)), bits, `level ${level}`),
  );
  sameF64(wasm.toy_buffer(), fromJson(toy.buffer), "buffer");
});

check("toy checksum of the target-level samples", () => {
  assert.equal(u64(wasm.toy_checksum()).toString(16).padStart(16, "0"), toy.checksum);
});

check("toy report, byte for byte", () => {
  const bytes = new Uint8Array(wasm.memory.buffer, wasm.toy_report_ptr(), length);
  const report = new TextDecoder().decode(bytes);
  const got = report.split("\n");
  const want = toy.report.split("\n");
  got.forEach((line, i) => assert.equal(line, want[i], `line ${i + 1}`));
  assert.equal(got.length, want.length, "number of lines");
});

console.log(`wasm: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);

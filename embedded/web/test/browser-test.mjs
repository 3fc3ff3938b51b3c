// The browser test of nrpt's web page (embedded/web), in headless Chromium through the
// DevTools protocol (puppeteer-core pointed at the system's browser).
//
//   node browser-test.mjs --page DIR --nrpt BIN --chromium EXE [--screenshot FILE]
//
// DIR is the page as embedded/web/build.sh wrote it, BIN the native `nrpt` command.
// For each fixed configuration below, the test loads the page from a static server on
// the loopback, lets it run both of its runs to the end, reads their counts from the
// page (the data attributes of #run-a and #run-b) and compares them with `nrpt run` on
// the same settings: round trips, restarts, swaps and indicators of every pair, the
// final ladder and buffer to the bit, and a checksum of every target-level sample (the
// native run's samples.npy); and the same for `nrpt run --config` on the page's exported
// configuration file. It also checks that the screenshot and every canvas are not
// blank, that nothing was written to the console as an error, that axe-core finds no
// WCAG 2 A/AA violation, and that the controls are labelled and work from the keyboard.
// It prints the chain-steps per second the browser ran. --screenshot FILE keeps the
// first configuration's screenshot (the book's picture; PNG, or WebP or JPEG by the
// file's extension). Ends with
// "browser: N passed, M failed"; exit status 1 on any failure.

import { execFileSync } from "node:child_process";
import { createServer } from "node:http";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { extname, join, normalize, resolve, sep } from "node:path";
import { strict as assert } from "node:assert";

import puppeteer from "puppeteer-core";
import { PNG } from "pngjs";

const require = createRequire(import.meta.url);

// --- arguments ---------------------------------------------------------------------------
function parseArgs(argv) {
  const args = { page: null, nrpt: null, chromium: null, screenshot: null };
  for (let i = 0; i < argv.length; i += 1) {
    const key = argv[i].replace(/^--/, "");
    if (!(key in args) || i + 1 >= argv.length) {
      console.error(`usage: node browser-test.mjs --page DIR --nrpt BIN --chromium EXE [--screenshot FILE]`);
      process.exit(2);
    }
    args[key] = argv[(i += 1)];
  }
  for (const key of ["page", "nrpt", "chromium"]) {
    if (!args[key]) {
      console.error(`browser-test: --${key} is required`);
      process.exit(2);
    }
  }
  return args;
}
const args = parseArgs(process.argv.slice(2));

// --- checks ------------------------------------------------------------------------------
let passed = 0;
let failed = 0;
async function check(name, fn) {
  try {
    await fn();
    passed += 1;
    console.log(`ok: ${name}`);
  } catch (e) {
    failed += 1;
    console.log(`FAIL: ${name}: ${e.message}`);
  }
}

// --- the configurations ------------------------------------------------------------------
/** Fixed settings: the page's URL parameters, and `nrpt run`'s flags for each run. */
const CONFIGS = [
  {
    name: "paper's rules, P = 16, W = 1 against W⋆",
    chains: 16,
    swap_rate: 0.4,
    rules: "paper",
    seed: 2023,
    iterations: 20000,
    window_a: "1",
    window_b: "opt",
    screenshot: true,
  },
  {
    name: "authors' rules (N + 1 iterations), P = 20, the paper's window against SEO",
    chains: 20,
    swap_rate: 0.3,
    rules: "authors-code",
    seed: 7,
    iterations: 2500,
    window_a: "paper",
    window_b: "seo",
  },
  {
    name: "paper's rules, P = 64, W = 5 against W⋆",
    chains: 64,
    swap_rate: 0.55,
    rules: "paper",
    seed: 4294967295,
    iterations: 3000,
    window_a: "5",
    window_b: "opt",
  },
];

function pageQuery(c) {
  const keys = ["chains", "swap_rate", "rules", "seed", "iterations", "window_a", "window_b"];
  return keys.map((k) => `${k}=${encodeURIComponent(String(c[k]))}`).join("&");
}

// --- the native runs ---------------------------------------------------------------------
/** 64-bit FNV-1a over the little-endian bytes of 32-bit words, as toyrun and the module. */
function fnv1a64(words) {
  let h = 0xcbf29ce484222325n;
  const prime = 0x100000001b3n;
  for (const w of words) {
    for (let shift = 0; shift < 32; shift += 8) {
      h = BigInt.asUintN(64, (h ^ BigInt((w >>> shift) & 0xff)) * prime);
    }
  }
  return h.toString(16).padStart(16, "0");
}

/** The f32 words of a little-endian `<f4` .npy file, in order. */
function npyWords(path) {
  const bytes = readFileSync(path);
  assert.equal(bytes.subarray(0, 6).toString("latin1"), "\x93NUMPY", `${path}: not a .npy file`);
  const major = bytes[6];
  const headerLength = major === 1 ? bytes.readUInt16LE(8) : bytes.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + headerLength;
  const header = bytes.subarray(major === 1 ? 10 : 12, start).toString("latin1");
  assert.match(header, /'descr': '<f4'/, `${path}: not little-endian f32`);
  assert.match(header, /'fortran_order': False/, `${path}: not C order`);
  const data = bytes.subarray(start);
  const words = new Uint32Array(data.length / 4);
  for (let i = 0; i < words.length; i += 1) words[i] = data.readUInt32LE(4 * i);
  return words;
}

/** `nrpt run` for one run of a configuration: its counts in the page's terms. */
function nativeRun(c, window, out) {
  const flags = [
    "run", "--target", "modes2d", "--chains", String(c.chains), "--ensembles", "1",
    "--iterations", String(c.iterations), "--window", window, "--swap-rate", String(c.swap_rate),
    "--preset", c.rules, "--seed", String(c.seed), "--thin", "1", "--warmup", "0",
  ];
  return { command: `nrpt ${flags.join(" ")}`, ...nativeCounts(flags, out) };
}

/** `nrpt run --config FILE` on the page's exported configuration file. */
function nativeFromToml(toml, file, out) {
  writeFileSync(file, toml);
  return nativeCounts(["run", "--config", file], out);
}

/** Runs `nrpt` with `flags` into `out`; its counts in the page's terms. */
function nativeCounts(flags, out) {
  const json = JSON.parse(execFileSync(args.nrpt, [...flags, "--out", out, "--json", "-q"], { encoding: "utf8" }));
  const summary = JSON.parse(readFileSync(join(out, "summary.json"), "utf8"));
  const n = summary.iterations_run;
  const count = (rate) => Math.round(rate * n);
  const perThousand = (rate) => Math.round((rate * n) / 1000);
  return {
    chainStepsPerSecond: json.chain_steps_per_sec,
    window: summary.window,
    iteration: n,
    roundTrips: perThousand(summary.round_trips_per_1000),
    authorsRoundTrips: perThousand(summary.round_trips_per_1000_authors),
    restarts: perThousand(summary.restarts_per_1000),
    swaps: summary.pair_executed_swap_rate.map(count),
    indicators: summary.pair_indicator_rate.map(count),
    ladder: summary.final_ladders[0],
    buffer: summary.final_buffer_mean,
    checksum: fnv1a64(npyWords(join(out, "samples.npy"))),
  };
}

// --- the page ----------------------------------------------------------------------------
/** A static server of DIR on the loopback, on a free port. */
function serve(dir) {
  const root = resolve(dir);
  const types = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".png": "image/png",
  };
  const server = createServer((req, res) => {
    const path = normalize(join(root, decodeURIComponent(new URL(req.url, "http://x").pathname)));
    let file = path.endsWith(sep) ? join(path, "index.html") : path;
    try {
      if (!file.startsWith(root + sep)) throw new Error("outside the page");
      if (statSync(file).isDirectory()) file = join(file, "index.html");
      const body = readFileSync(file);
      res.writeHead(200, { "content-type": types[extname(file)] ?? "application/octet-stream" });
      res.end(body);
    } catch {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("not found");
    }
  });
  return new Promise((ok) => server.listen(0, "127.0.0.1", () => ok(server)));
}

/** A fresh tab that collects console errors, page errors and failed requests. */
async function openTab(browser, errors) {
  const tab = await browser.newPage();
  await tab.setViewport({ width: 1280, height: 900 });
  tab.on("console", (m) => {
    if (m.type() === "error") errors.push(`console: ${m.text()}`);
  });
  tab.on("pageerror", (e) => errors.push(`page error: ${e.message}`));
  tab.on("requestfailed", (r) => errors.push(`request failed: ${r.url()}`));
  tab.on("response", (r) => {
    if (r.status() >= 400) errors.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  return tab;
}

/** Waits for the page's status to be one of `states`; returns it. */
async function waitForState(tab, states, timeout) {
  await tab.waitForFunction(
    (s) => s.includes(document.getElementById("status")?.dataset.state),
    { timeout, polling: 50 },
    states,
  );
  return tab.$eval("#status", (e) => e.dataset.state);
}

/** A run's counts as the page shows them. */
async function pageRun(tab, id) {
  const d = await tab.$eval(`#${id}`, (e) => ({ ...e.dataset }));
  const numbers = (s) => (s ?? "").split(",").filter((x) => x !== "").map(Number);
  return {
    window: Number(d.window),
    iteration: Number(d.iteration),
    roundTrips: Number(d.roundTrips),
    authorsRoundTrips: Number(d.authorsRoundTrips),
    restarts: Number(d.restarts),
    swaps: numbers(d.swaps),
    indicators: numbers(d.indicators),
    ladder: numbers(d.ladder),
    buffer: Number(d.buffer),
    checksum: d.checksum,
    command: d.command,
    toml: d.toml,
  };
}

/** A command line's words before its first flag, and each flag with its value. */
function flagsOf(command) {
  const words = command.trim().split(/\s+/);
  const first = words.findIndex((w) => w.startsWith("--"));
  const flags = {};
  for (let i = first; i < words.length; i += 2) {
    if (words[i] !== "--out") flags[words[i]] = words[i + 1];
  }
  return { command: words.slice(0, first).join(" "), flags };
}

/** Fails unless the page's run made the native run's counts, bits and samples. */
function sameCounts(page, want) {
  for (const key of ["window", "iteration", "roundTrips", "authorsRoundTrips", "restarts", "checksum"]) {
    assert.equal(page[key], want[key], key);
  }
  assert.deepEqual(page.swaps, want.swaps, "swaps per pair");
  assert.deepEqual(page.indicators, want.indicators, "indicators per pair");
  assert.equal(page.ladder.length, want.ladder.length, "levels of the ladder");
  page.ladder.forEach((eta, l) => assert.ok(sameBits(eta, want.ladder[l]), `ladder level ${l}: ${eta} against ${want.ladder[l]}`));
  assert.ok(sameBits(page.buffer, want.buffer), `buffer ${page.buffer} against ${want.buffer}`);
}

/** Same doubles, bit for bit. */
function sameBits(a, b) {
  const view = new DataView(new ArrayBuffer(16));
  view.setFloat64(0, a);
  view.setFloat64(8, b);
  return view.getBigUint64(0) === view.getBigUint64(8);
}

/** The share of pixels unlike the most common colour, and the number of colours. */
function pixelSpread(png) {
  const counts = new Map();
  for (let i = 0; i < png.data.length; i += 4) {
    const key = png.data.readUInt32BE(i);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const most = Math.max(...counts.values());
  const pixels = png.data.length / 4;
  return { other: 1 - most / pixels, colours: counts.size };
}

/** Every canvas of the page with its count of distinct pixel values. */
function canvasColours(tab) {
  return tab.$$eval("canvas", (canvases) =>
    canvases.map((c) => {
      const data = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      const seen = new Set();
      for (let i = 0; i < data.length && seen.size < 1000; i += 4) {
        seen.add((data[i] << 24) | (data[i + 1] << 16) | (data[i + 2] << 8) | data[i + 3]);
      }
      return { label: c.getAttribute("aria-label") ?? c.id, colours: seen.size };
    }),
  );
}

// --- the test ----------------------------------------------------------------------------
const work = mkdtempSync(join(tmpdir(), "nrpt-browser-test-"));
const server = await serve(args.page);
const base = `http://127.0.0.1:${server.address().port}/index.html`;
const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
const browser = await puppeteer.launch({
  executablePath: args.chromium,
  headless: true,
  // Chromium's sandbox needs user namespaces, which a root process in a container lacks.
  args: [...(isRoot ? ["--no-sandbox"] : []), "--disable-gpu", "--disable-dev-shm-usage"],
});
console.log(`browser: ${await browser.version()} (headless, ${args.chromium}); page served from ${base}`);

try {
  for (const [index, c] of CONFIGS.entries()) {
    console.log(`\n== ${c.name}: ${base}?${pageQuery(c)}`);
    const native = {
      a: nativeRun(c, c.window_a, join(work, `native-${index}-a`)),
      b: nativeRun(c, c.window_b, join(work, `native-${index}-b`)),
    };
    const errors = [];
    const tab = await openTab(browser, errors);
    await tab.goto(`${base}?${pageQuery(c)}&autorun=1`, { waitUntil: "load" });
    const state = await waitForState(tab, ["done", "error"], 180_000);
    const status = await tab.$eval("#status", (e) => e.textContent.trim());

    await check(`${c.name}: the page finished both runs`, () => {
      assert.equal(state, "done", `status is ${state}: ${status}`);
    });
    for (const id of ["a", "b"]) {
      const page = await pageRun(tab, `run-${id}`);
      const want = native[id];
      console.log(
        `run ${id.toUpperCase()} (window ${c[`window_${id}`]} = ${want.window}): ` +
          `page ${page.roundTrips} round trips, native ${want.roundTrips}; ` +
          `authors' counting ${page.authorsRoundTrips} / ${want.authorsRoundTrips}; ` +
          `restarts ${page.restarts} / ${want.restarts}; iterations ${page.iteration} / ${want.iteration}; ` +
          `checksum ${page.checksum} / ${want.checksum}`,
      );
      await check(`${c.name}: run ${id.toUpperCase()} = ${want.command}`, () => sameCounts(page, want));
      await check(`${c.name}: run ${id.toUpperCase()}'s exported configuration file, run by nrpt run --config, makes its counts`, () =>
        sameCounts(page, nativeFromToml(page.toml, join(work, `page-${index}-${id}.toml`), join(work, `toml-${index}-${id}`))),
      );
      await check(`${c.name}: run ${id.toUpperCase()}'s exported command is the native one`, () => {
        // The page's command names its own output folder; the flags must be these.
        assert.deepEqual(flagsOf(page.command), flagsOf(want.command));
      });
    }
    const rate = await tab.$eval("#rate", (e) => Number(e.dataset.chainStepsPerSecond));
    console.log(
      `chain-steps per second: ${rate.toExponential(3)} in the browser (both runs, one thread); ` +
        `native ${native.a.chainStepsPerSecond.toExponential(3)} (run A, ${args.nrpt})`,
    );
    await check(`${c.name}: the page reports its chain-steps per second`, () => {
      assert.ok(Number.isFinite(rate) && rate > 0, `data-chain-steps-per-second is ${rate}`);
    });

    if (c.screenshot) {
      // The whole page: both runs' figures, the comparison and the export.
      const shot = await tab.screenshot({ type: "png", fullPage: true });
      writeFileSync(join(work, "page.png"), shot);
      if (args.screenshot) {
        // The same picture in the file's format: .png as checked, .webp or .jpg (quality
        // 85) smaller for the book.
        const format = { ".webp": "webp", ".jpg": "jpeg", ".jpeg": "jpeg" }[extname(args.screenshot)];
        const kept = format ? await tab.screenshot({ type: format, quality: 85, fullPage: true }) : shot;
        writeFileSync(args.screenshot, kept);
        console.log(`screenshot kept in ${args.screenshot} (${kept.length} bytes)`);
      }
      await check("the screenshot is not blank", () => {
        const spread = pixelSpread(PNG.sync.read(shot));
        console.log(`screenshot: ${(100 * spread.other).toFixed(1)} % of the pixels unlike the background, ${spread.colours} colours`);
        assert.ok(spread.other > 0.15, `only ${(100 * spread.other).toFixed(1)} % of the pixels differ from the background`);
        assert.ok(spread.colours > 200, `only ${spread.colours} colours`);
      });
      await check("every canvas has drawn something", async () => {
        const canvases = await canvasColours(tab);
        assert.ok(canvases.length >= 6, `${canvases.length} canvases`);
        for (const k of canvases) assert.ok(k.colours > 3, `"${k.label}" has ${k.colours} colours`);
      });
      await check("axe-core: no WCAG 2 A or AA violation", async () => {
        await tab.addScriptTag({ path: require.resolve("axe-core/axe.min.js") });
        const result = await tab.evaluate(() =>
          window.axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa"] } }),
        );
        const found = result.violations.map((v) => `${v.id} (${v.nodes.length}: ${v.nodes[0]?.target})`);
        console.log(`axe-core ${result.testEngine.version}: ${result.passes.length} rules pass, ${found.length} violated`);
        assert.deepEqual(found, []);
      });
    }
    await check(`${c.name}: no console error, page error or failed request`, () => {
      assert.deepEqual(errors, []);
    });
    await tab.close();
  }

  console.log("\n== the controls from the keyboard");
  const errors = [];
  const tab = await openTab(browser, errors);
  await tab.goto(`${base}?chains=12&iterations=400`, { waitUntil: "load" });
  await waitForState(tab, ["ready"], 30_000);
  const controls = await tab.$$eval("input, select, button, textarea", (all) =>
    all
      .filter((e) => !e.disabled && e.type !== "hidden")
      .map((e) => ({
        id: e.id,
        name:
          e.getAttribute("aria-label") ??
          ([...(e.labels ?? [])].map((l) => l.textContent.trim()).join(" ") || e.textContent.trim()),
      })),
  );
  await check("every control has a name (a label, text or aria-label)", () => {
    const unnamed = controls.filter((c) => !c.name).map((c) => c.id || "(no id)");
    assert.deepEqual(unnamed, []);
  });
  const reached = new Set();
  let run = null;
  for (let i = 0; i < 4 * controls.length + 10 && run === null; i += 1) {
    await tab.keyboard.press("Tab");
    const focused = await tab.evaluate(() => {
      const e = document.activeElement;
      return e ? { id: e.id, tag: e.tagName, text: e.textContent.trim() } : null;
    });
    if (focused?.id) reached.add(focused.id);
    if (focused?.tag === "BUTTON" && /^(Run|Restart)$/.test(focused.text)) run = focused;
  }
  await check("Tab reaches the Run button", () => assert.ok(run, "never focused"));
  await check("Enter on the Run button runs the page", async () => {
    await tab.keyboard.press("Enter");
    const state = await waitForState(tab, ["running", "done", "error"], 30_000);
    assert.notEqual(state, "error");
    assert.equal(await waitForState(tab, ["done", "error"], 60_000), "done");
  });
  const missed = controls.filter((c) => c.id && !reached.has(c.id)).map((c) => c.id);
  console.log(`keyboard: ${reached.size} controls reached by Tab before the Run button; named: ${controls.map((c) => c.name).join(" | ")}`);
  await check("no console error from the keyboard run", () => assert.deepEqual(errors, []));
  if (missed.length > 0) console.log(`(after the Run button in tab order: ${missed.join(", ")})`);
  await tab.close();
} finally {
  await browser.close();
  server.close();
  rmSync(work, { recursive: true, force: true });
}

console.log(`\nbrowser: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);

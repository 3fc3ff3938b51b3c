// The nrpt browser page: two live runs of the paper's 2D experiment side by side.
//
// The sampler is the nrpt WebAssembly module (embedded/wasm, its `live_*` exports),
// which build.sh embeds in nrpt-module.js as NRPT_WASM_BASE64. Each animation frame
// steps both runs for about 8 ms, a few hundred iterations per `live_step` call, reads
// the trace of every call (the level-0 samples and the replicas' levels), then redraws
// the figures. A classic script (no modules), so that the page also works from file://.
//
// Kept whole past 600 lines: one script in sections (target, module, settings, export,
// runs, drawing, scheduling, link), sharing the page's state; file:// pages cannot load
// ES modules, and several classic scripts would share it through globals instead.
"use strict";

(function () {
  /** Half-width of the square view [−VIEW, VIEW]² of the target. */
  const VIEW = 2.5;
  /** Bins per side of the histogram of the level-0 samples. */
  const HIST_BINS = 100;
  /** Iterations shown by the levels figure (the paper's Figure 6). */
  const HISTORY = 1500;
  /** Most points of the faint lines of the levels figure, all replicas together, and
   * at most one per pixel column for each: more replicas, sparser points. */
  const FAINT_POINTS = 12000;
  /** Milliseconds of stepping per animation frame, both runs together. */
  const FRAME_BUDGET_MS = 8;
  /** Milliseconds one `live_step` call aims at (the slice adapts to it). */
  const SLICE_MS = 2.5;
  /** Most `live_step` calls per frame, and most chain-steps per call: a frame stays
   * bounded even where the clock does not advance while a script runs. */
  const MAX_CALLS_PER_FRAME = 16;
  const MAX_CHAIN_STEPS_PER_CALL = 131072;
  /** Colours of the replicas drawn boldly (Okabe–Ito blue, vermilion, green). */
  const BOLD_COLOURS = ["#0072b2", "#d55e00", "#009e73"];
  /** Viridis stops: level 0 (dark purple) … top level (yellow). */
  const VIRIDIS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  /** Colours of the rates figure. */
  const INDICATOR_COLOUR = "#0072b2";
  const EXECUTED_COLOUR = "#d55e00";
  /** Rules of `live_start` and of `nrpt run --preset`. */
  const RULES = { paper: 0, "authors-code": 1 };
  const NAMED_WINDOWS = ["1", "opt", "paper", "seo"];

  const $ = (id) => document.getElementById(id);
  const statusBox = $("status");
  const runButton = $("run-button");
  const pauseButton = $("pause-button");
  const pendingNote = $("pending");
  const rateBox = $("rate");
  const compareBox = $("compare");

  /** The module's exports and memory, once loaded. */
  let wasm = null;
  /** Row length of `live_trace_levels`. */
  let traceRow = 0;
  /** One of loading, ready, running, paused, done, error (the `data-state`). */
  let state = "loading";
  let framePending = false;
  /** What the link said that a control could not hold, by control id. */
  const linkErrors = {};
  /** Chain-steps and milliseconds spent inside `live_step` since the last start. */
  const timing = { chainSteps: 0, ms: 0 };

  // ---- The target --------------------------------------------------------------

  /** U(x) of the 25-mode target (its wall beyond |x|² > 20 lies outside the view). */
  function potential(x, y) {
    return 0.2 * (x * x + y * y) - 2 * (Math.cos(2 * Math.PI * x) + Math.cos(2 * Math.PI * y));
  }

  /** The density exp(−U) as a grey image of the view, drawn once. */
  function makeDensityImage(size) {
    const canvas = document.createElement("canvas");
    canvas.width = canvas.height = size;
    const ctx = canvas.getContext("2d");
    const image = ctx.createImageData(size, size);
    const uMin = potential(0, 0);
    for (let row = 0; row < size; row++) {
      const y = VIEW - ((row + 0.5) / size) * 2 * VIEW;
      for (let col = 0; col < size; col++) {
        const x = -VIEW + ((col + 0.5) / size) * 2 * VIEW;
        // The square root of the density relative to the highest mode, so that the
        // outer modes (e^−1.6 of the centre) still show.
        const v = Math.exp(-(potential(x, y) - uMin) / 2);
        const k = 4 * (row * size + col);
        image.data[k] = 248 - 170 * v;
        image.data[k + 1] = 248 - 168 * v;
        image.data[k + 2] = 250 - 155 * v;
        image.data[k + 3] = 255;
      }
    }
    ctx.putImageData(image, 0, 0);
    return canvas;
  }

  const densityImage = makeDensityImage(200);

  // ---- Loading the module ------------------------------------------------------

  function decodeBase64(text) {
    const binary = atob(text);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  }

  function loadModule() {
    return Promise.resolve().then(() => {
      if (typeof NRPT_WASM_BASE64 !== "string") {
        throw new Error("nrpt-module.js did not load: build the page with embedded/web/build.sh");
      }
      return WebAssembly.instantiate(decodeBase64(NRPT_WASM_BASE64), {});
    }).then((result) => result.instance.exports);
  }

  // ---- Settings: reading and checking the controls ------------------------------

  /** The element that shows a control's error: `X-error` for control X, and for a
   * custom window input that of its select. */
  function errorBox(control) {
    return $(control.id.replace(/-custom$/, "") + "-error");
  }

  function showError(control, message) {
    errorBox(control).textContent = message;
    control.setAttribute("aria-invalid", "true");
  }

  function clearError(control) {
    if (control.getAttribute("aria-invalid") === "true") errorBox(control).textContent = "";
    control.removeAttribute("aria-invalid");
  }

  /** A whole number from `min` to `max` read from a number input, or an error text. */
  function readInteger(input, what, min, max) {
    const text = input.value.trim();
    if (text === "") {
      return { error: input.validity.badInput
        ? `${what}: what is typed is not a number.`
        : `${what}: enter a whole number from ${min} to ${max}.` };
    }
    const value = Number(text);
    if (!Number.isInteger(value) || value < min || value > max) {
      return { error: `${what} must be a whole number from ${min} to ${max}, not ${text}.` };
    }
    return { value };
  }

  function readSwapRate(input) {
    const text = input.value.trim();
    if (text === "") {
      return { error: input.validity.badInput
        ? "S: what is typed is not a number."
        : "Enter a target swap rate S strictly between 0 and 1." };
    }
    const value = Number(text);
    if (!(value > 0 && value < 1)) {
      return { error: `The target swap rate S must lie strictly between 0 and 1, not ${text}.` };
    }
    return { value };
  }

  /** A run's window as chosen: "1", "opt", "paper", "seo" or a whole number (custom). */
  function readWindowChoice(run) {
    if (run.select.value !== "custom") return { value: run.select.value };
    const custom = readInteger(run.custom, "The custom window W", 1, 4294967295);
    return custom.error ? custom : { value: String(custom.value) };
  }

  /** Checks one control: `read` gives { value } or { error }; a link's complaint wins. */
  function check(control, read, errors) {
    const result = linkErrors[control.id] ? { error: linkErrors[control.id] } : read();
    if (result.error) {
      showError(control, result.error);
      errors.push(control);
    } else {
      clearError(control);
    }
    return result.value;
  }

  /** Reads and checks every control, showing what is wrong next to each. Returns the
   * shared settings and each run's window choice, or null and focuses the first
   * invalid control when `focus` is set. */
  function readSettings(focus) {
    const errors = [];
    const settings = {
      chains: check($("chains"), () => readInteger($("chains"), "Chains P", 2, 256), errors),
      swapRate: check($("swap-rate"), () => readSwapRate($("swap-rate")), errors),
      rules: check($("rules"), () => ({ value: $("rules").value }), errors),
      seed: check($("seed"), () => readInteger($("seed"), "The seed", 0, 4294967295), errors),
      iterations: check($("iterations"), () => readInteger($("iterations"), "Iterations N", 1, 100000000), errors),
    };
    const choices = runs.map((run) => {
      if (run.custom.disabled) clearError(run.custom);
      const control = run.select.value === "custom" && !linkErrors[run.select.id] ? run.custom : run.select;
      if (control === run.custom) clearError(run.select);
      return check(control, () => readWindowChoice(run), errors);
    });
    if (errors.length > 0) {
      if (focus) errors[0].focus();
      return null;
    }
    return { settings, choices };
  }

  /** The window the command resolves for a choice: { spec (as the command takes it),
   * window (the integer W, 0 for SEO), text }, or { error } where the solver finds none. */
  function resolveWindow(choice, chains, swapRate) {
    if (choice === "seo") {
      return { spec: "seo", window: 0, text: "SEO: the even or the odd pairs, at random each iteration (reversible)" };
    }
    if (choice === "opt" || choice === "paper") {
      const solve = choice === "opt" ? wasm.nrpt_optimal_window : wasm.nrpt_paper_window;
      const w = solve(chains, swapRate) >>> 0;
      if (w === 0) return { error: `The solver finds no window for P = ${chains}, S = ${swapRate}.` };
      const wStar = wasm.nrpt_w_star(chains, swapRate).toFixed(2);
      const text = choice === "opt"
        ? `W = ${w} (W⋆ = ${wStar})`
        : `W = ${w} (the paper's asymptotic formula; W⋆ = ${wStar})`;
      return { spec: choice, window: w, text };
    }
    const w = Number(choice);
    return { spec: choice, window: w, text: w === 1 ? "W = 1: a pair keeps its turn one iteration" : `W = ${w}` };
  }

  // ---- Export: the native command that reproduces a run ---------------------------

  function commandLine(config, out) {
    return [
      "nrpt run --target modes2d",
      `--chains ${config.chains}`,
      "--ensembles 1",
      `--iterations ${config.iterations}`,
      `--window ${config.window.spec}`,
      `--swap-rate ${String(config.swapRate)}`,
      `--preset ${config.rules}`,
      `--seed ${config.seed}`,
      "--thin 1 --warmup 0",
      `--out ${out}`,
    ].join(" ");
  }

  function tomlText(config) {
    const spec = config.window.spec;
    const windowValue = /^\d+$/.test(spec) ? spec : `"${spec}"`; // a number or a string
    return [
      'target = "modes2d"',
      `chains = ${config.chains}`,
      "ensembles = 1",
      `iterations = ${config.iterations}`,
      `window = ${windowValue}`,
      `swap_rate = ${String(config.swapRate)}`,
      `preset = "${config.rules}"`,
      `seed = ${config.seed}`,
      "thin = 1",
      "warmup = 0",
    ].join("\n") + "\n";
  }

  // ---- Runs ----------------------------------------------------------------------

  /** A canvas drawn at the screen's pixel density, in CSS pixels of its attributes. */
  function setupCanvas(canvas) {
    const width = canvas.width;
    const height = canvas.height;
    const ratio = Math.max(1, Math.min(3, window.devicePixelRatio || 1));
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    const ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    return { ctx, width, height };
  }

  /** Attributes of the run template that name the run ({id}, {ID}). */
  const TEMPLATE_ATTRIBUTES = ["id", "for", "aria-describedby", "aria-labelledby", "aria-label", "data-copy"];

  /** A run's section, made from the page's template for run `id` ("a" or "b") with
   * `window` ("1", "opt", …) chosen, and placed in the page. */
  function makeRunSection(id, window) {
    const name = (text) => text.replaceAll("{id}", id).replaceAll("{ID}", id.toUpperCase());
    const section = $("run-template").content.firstElementChild.cloneNode(true);
    for (const element of [section, ...section.querySelectorAll("*")]) {
      for (const attribute of TEMPLATE_ATTRIBUTES) {
        const value = element.getAttribute(attribute);
        if (value !== null) element.setAttribute(attribute, name(value));
      }
    }
    const walker = document.createTreeWalker(section, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      node.nodeValue = name(node.nodeValue);
    }
    $("runs").appendChild(section);
    $("window-" + id).value = window;
    return section;
  }

  function createRun(slot, id, window) {
    const section = makeRunSection(id, window);
    const part = (name) => section.querySelector(`[data-part="${name}"]`);
    const field = (name) => section.querySelector(`[data-field="${name}"]`);
    const histCanvas = document.createElement("canvas");
    histCanvas.width = histCanvas.height = HIST_BINS;
    return {
      slot,
      id,
      name: "Run " + id.toUpperCase(),
      out: "nrpt-run-" + id,
      section,
      select: $("window-" + id),
      custom: $("window-" + id + "-custom"),
      resolved: $("window-" + id + "-resolved"),
      target: setupCanvas(part("target")),
      levels: setupCanvas(part("levels")),
      ladder: setupCanvas(part("ladder")),
      rates: setupCanvas(part("rates")),
      levelsCaption: part("levels-caption"),
      command: part("command"),
      toml: part("toml"),
      fields: {
        iteration: field("iteration"),
        roundTrips: field("round-trips"),
        rate: field("rate"),
        predicted: field("predicted"),
        authors: field("authors"),
        restarts: field("restarts"),
        buffer: field("buffer"),
      },
      histCanvas,
      histImage: histCanvas.getContext("2d").createImageData(HIST_BINS, HIST_BINS),
      // The run itself, set by `beginRun` and as it goes:
      config: null, // the settings the run was started with
      goal: 0, // iterations to run: N, or N + 1 under the authors' rules
      counts: null, // what `readCounts` read last
      predicted: NaN, // Lemma 1's round trips per 1000 iterations (NaN for SEO)
      bold: [], // replicas drawn boldly
      slice: 64, // iterations of the next `live_step` call
      hist: new Uint32Array(HIST_BINS * HIST_BINS),
      histMax: 0,
      history: new Uint8Array(0), // levels of the last HISTORY iterations, P per row
      stepped: false, // stepped in this frame: its counts are to be read again
      dirty: true, // its figures are to be drawn again
    };
  }

  // The paper's comparison by default: W = 1 in run A, W⋆ in run B.
  const runs = [createRun(0, "a", "1"), createRun(1, "b", "opt")];

  /** Most iterations of one call for P chains. */
  function maxSlice(chains) {
    return Math.max(16, Math.min(4096, Math.floor(MAX_CHAIN_STEPS_PER_CALL / chains)));
  }

  /** Prepares `run` for a run that `live_start` accepted. */
  function beginRun(run, settings, resolved) {
    const config = Object.assign({}, settings, { window: resolved });
    const p = config.chains;
    run.config = config;
    run.goal = config.iterations + (config.rules === "authors-code" ? 1 : 0);
    run.predicted = resolved.window === 0
      ? NaN
      : 1000 * wasm.nrpt_round_trip_rate(p, resolved.window, config.swapRate);
    run.bold = Array.from(new Set([0, Math.floor(p / 2), p - 1]));
    run.slice = Math.min(64, maxSlice(p));
    run.hist.fill(0);
    run.histMax = 0;
    run.history = new Uint8Array(HISTORY * p);
    run.command.value = commandLine(config, run.out);
    run.toml.value = tomlText(config);
    run.section.dataset.command = run.command.value;
    run.section.dataset.toml = run.toml.value;
    run.section.dataset.chains = String(p);
    run.section.dataset.window = String(resolved.window);
    writeLevelsCaption(run);
    readCounts(run);
    run.dirty = true;
  }

  /** Forgets a run that did not start. */
  function dropRun(run) {
    run.config = null;
    run.counts = null;
    run.command.value = "";
    run.toml.value = "";
    for (const key of Object.keys(run.section.dataset)) delete run.section.dataset[key];
    run.dirty = true;
  }

  function writeLevelsCaption(run) {
    const caption = run.levelsCaption;
    caption.textContent = `Level of each replica over the last ${HISTORY} iterations (the paper's Figure 6), level 0 at the bottom; bold: `;
    run.bold.forEach((replica, i) => {
      const key = document.createElement("span");
      key.className = "key";
      key.style.setProperty("--key", BOLD_COLOURS[i]);
      key.textContent = `replica ${replica}`;
      if (i > 0) caption.append(i === run.bold.length - 1 ? " and " : ", ");
      caption.append(key);
    });
    caption.append(".");
  }

  /** Everything the run's figures, numbers and data attributes show, from the module. */
  function readCounts(run) {
    const slot = run.slot;
    const pairs = run.config.chains - 1;
    const perPair = (get) => Array.from({ length: pairs }, (_, i) => get(slot, i));
    run.counts = {
      iteration: wasm.live_iteration(slot),
      roundTrips: wasm.live_round_trips(slot),
      authors: wasm.live_authors_round_trips(slot),
      restarts: wasm.live_restarts(slot),
      buffer: wasm.live_buffer(slot),
      swaps: perPair(wasm.live_swaps),
      indicators: perPair(wasm.live_indicators),
      attempts: perPair(wasm.live_attempts),
      ladder: Array.from({ length: pairs + 1 }, (_, l) => wasm.live_ladder(slot, l)),
      checksum: BigInt.asUintN(64, wasm.live_checksum(slot)).toString(16).padStart(16, "0"),
    };
    writeAttributes(run);
  }

  /** The test contract: the run's counts as data attributes of its section. */
  function writeAttributes(run) {
    const c = run.counts;
    const data = run.section.dataset;
    data.iteration = String(c.iteration);
    data.roundTrips = String(c.roundTrips);
    data.authorsRoundTrips = String(c.authors);
    data.restarts = String(c.restarts);
    data.swaps = c.swaps.join(",");
    data.indicators = c.indicators.join(",");
    data.attempts = c.attempts.join(",");
    data.ladder = c.ladder.map(String).join(",");
    data.buffer = String(c.buffer);
    data.checksum = c.checksum;
  }

  /** Runs the next slice of `run` and takes in its trace. */
  function stepRun(run) {
    const p = run.config.chains;
    const asked = Math.min(run.slice, run.goal - run.counts.iteration);
    const started = performance.now();
    const ran = wasm.live_step(run.slot, asked) >>> 0;
    const ms = performance.now() - started;
    if (ran !== asked) throw new Error(`${run.name}: live_step ran ${ran} of ${asked} iterations`);
    timing.chainSteps += ran * p;
    timing.ms += ms;
    // Aim the next slice at SLICE_MS (grow it while the clock shows nothing).
    const aimed = ms > 0.05 ? (ran * SLICE_MS) / ms : 2 * run.slice;
    run.slice = Math.max(8, Math.min(maxSlice(p), Math.round((run.slice + aimed) / 2)));
    takeTrace(run, ran, run.counts.iteration);
    run.counts.iteration = wasm.live_iteration(run.slot);
    run.stepped = true;
  }

  /** Adds the last slice's `n` level-0 samples to the histogram and keeps the levels of
   * its last HISTORY iterations; `before` is the iteration count before the slice. */
  function takeTrace(run, n, before) {
    const p = run.config.chains;
    const samplesAt = wasm.live_trace_samples(run.slot) >>> 0;
    const levelsAt = wasm.live_trace_levels(run.slot) >>> 0;
    const memory = wasm.memory.buffer; // after the calls: memory may grow in one
    const samples = new Float32Array(memory, samplesAt, 2 * n);
    const scale = HIST_BINS / (2 * VIEW);
    for (let i = 0; i < n; i++) {
      const col = Math.floor((samples[2 * i] + VIEW) * scale);
      const row = Math.floor((VIEW - samples[2 * i + 1]) * scale);
      if (col >= 0 && col < HIST_BINS && row >= 0 && row < HIST_BINS) {
        const k = row * HIST_BINS + col;
        run.hist[k] += 1;
        if (run.hist[k] > run.histMax) run.histMax = run.hist[k];
      }
    }
    const levels = new Uint8Array(memory, levelsAt, n * traceRow);
    for (let i = Math.max(0, n - HISTORY); i < n; i++) {
      // Iteration `before + i + 1` goes to row (before + i) mod HISTORY.
      const row = (before + i) % HISTORY;
      run.history.set(levels.subarray(i * traceRow, i * traceRow + p), row * p);
    }
  }

  // ---- Drawing ---------------------------------------------------------------------

  function levelColour(level, chains) {
    const t = chains > 1 ? (level / (chains - 1)) * (VIRIDIS.length - 1) : 0;
    const i = Math.min(VIRIDIS.length - 2, Math.floor(t));
    const f = t - i;
    const c = VIRIDIS[i].map((v, k) => Math.round(v + f * (VIRIDIS[i + 1][k] - v)));
    return `rgb(${c[0]},${c[1]},${c[2]})`;
  }

  function clear(view) {
    view.ctx.clearRect(0, 0, view.width, view.height);
    view.ctx.font = "11px system-ui, sans-serif";
    view.ctx.fillStyle = "#333";
    view.ctx.lineWidth = 1;
  }

  /** The plot area of a figure with room for labels at the left and bottom. */
  function plotArea(view, left, bottom, right) {
    return { left, top: 8, right: view.width - (right || 8), bottom: view.height - bottom };
  }

  function frameArea(ctx, area) {
    ctx.strokeStyle = "#666";
    ctx.strokeRect(area.left + 0.5, area.top + 0.5, area.right - area.left, area.bottom - area.top);
  }

  /** Density, the histogram of the level-0 samples, and the replicas now. */
  function drawTarget(run) {
    const view = run.target;
    const ctx = view.ctx;
    const size = view.width;
    clear(view);
    ctx.imageSmoothingEnabled = true;
    ctx.drawImage(densityImage, 0, 0, size, size);
    if (!run.config) return;
    paintHistogram(run);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(run.histCanvas, 0, 0, size, size);
    const p = run.config.chains;
    const statesAt = wasm.live_states(run.slot) >>> 0;
    const levelsAt = wasm.live_levels(run.slot) >>> 0;
    const memory = wasm.memory.buffer; // after the calls: memory may grow in one
    const states = new Float32Array(memory, statesAt, 2 * p);
    const levels = new Uint32Array(memory, levelsAt, p);
    const toPixel = (v) => ((v + VIEW) / (2 * VIEW)) * size;
    // Hot levels first, so that the target level's replica lies on top.
    const order = Array.from(levels.keys()).sort((a, b) => levels[b] - levels[a]);
    for (const r of order) {
      const x = toPixel(states[2 * r]);
      const y = size - toPixel(states[2 * r + 1]);
      if (x < 0 || x > size || y < 0 || y > size) continue;
      ctx.beginPath();
      ctx.arc(x, y, levels[r] === 0 ? 6 : 3.5, 0, 2 * Math.PI);
      ctx.fillStyle = levelColour(levels[r], p);
      ctx.fill();
      ctx.strokeStyle = levels[r] === 0 ? "#000" : "#fff";
      ctx.lineWidth = levels[r] === 0 ? 2 : 1;
      ctx.stroke();
    }
  }

  /** The histogram as an orange image whose opacity grows with the count. */
  function paintHistogram(run) {
    const data = run.histImage.data;
    const max = Math.max(1, run.histMax);
    for (let k = 0; k < run.hist.length; k++) {
      data[4 * k] = 230;
      data[4 * k + 1] = 97;
      data[4 * k + 2] = 0;
      data[4 * k + 3] = run.hist[k] === 0 ? 0 : 60 + 190 * Math.sqrt(run.hist[k] / max);
    }
    run.histCanvas.getContext("2d").putImageData(run.histImage, 0, 0);
  }

  /** Figure 6: the level of every replica over the last HISTORY iterations. */
  function drawLevels(run) {
    const view = run.levels;
    const ctx = view.ctx;
    const area = plotArea(view, 34, 20);
    clear(view);
    frameArea(ctx, area);
    if (!run.config) return;
    const p = run.config.chains;
    const end = run.counts.iteration;
    const first = Math.max(1, end - HISTORY + 1);
    const origin = Math.max(0, end - HISTORY);
    const x = (i) => area.left + ((i - origin) / HISTORY) * (area.right - area.left);
    const y = (level) => area.bottom - (level / (p - 1)) * (area.bottom - area.top);
    const levelAt = (i, r) => run.history[((i - 1) % HISTORY) * p + r];
    const trace = (r, stride) => {
      ctx.moveTo(x(first), y(levelAt(first, r)));
      for (let i = first + stride; i < end; i += stride) ctx.lineTo(x(i), y(levelAt(i, r)));
      ctx.lineTo(x(end), y(levelAt(end, r)));
    };
    if (end >= 1) {
      const points = Math.min(area.right - area.left, FAINT_POINTS / p);
      const stride = Math.max(1, Math.ceil((end - first + 1) / points));
      ctx.beginPath();
      for (let r = 0; r < p; r++) trace(r, stride);
      ctx.strokeStyle = "rgba(40, 40, 60, 0.16)";
      ctx.stroke();
      ctx.lineWidth = 2;
      run.bold.forEach((r, k) => {
        ctx.beginPath();
        trace(r, 1);
        ctx.strokeStyle = BOLD_COLOURS[k];
        ctx.stroke();
      });
    }
    ctx.textAlign = "right";
    ctx.fillText("0", area.left - 4, area.bottom);
    ctx.fillText(String(p - 1), area.left - 4, area.top + 9);
    ctx.save();
    ctx.translate(12, (area.top + area.bottom) / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "center";
    ctx.fillText("level", 0, 0);
    ctx.restore();
    ctx.textAlign = "left";
    ctx.fillText(String(origin), area.left, view.height - 5);
    ctx.textAlign = "right";
    ctx.fillText(`iteration ${origin + HISTORY}`, area.right, view.height - 5);
  }

  /** The learning rate of each level on a log scale, one decade per tick. */
  function drawLadder(run) {
    const view = run.ladder;
    const ctx = view.ctx;
    const area = plotArea(view, 42, 20);
    clear(view);
    frameArea(ctx, area);
    if (!run.config) return;
    const ladder = run.counts.ladder;
    const p = ladder.length;
    const logs = ladder.map(Math.log10);
    const low = Math.floor(Math.min.apply(null, logs));
    const high = Math.max(low + 1, Math.ceil(Math.max.apply(null, logs)));
    const x = (l) => area.left + ((l + 0.5) / p) * (area.right - area.left);
    const y = (g) => area.bottom - ((g - low) / (high - low)) * (area.bottom - area.top);
    ctx.textAlign = "right";
    for (let d = low; d <= high; d++) {
      ctx.fillText(String(Math.pow(10, d)), area.left - 4, y(d) + 4);
      ctx.strokeStyle = "#ddd";
      ctx.beginPath();
      ctx.moveTo(area.left + 1, Math.round(y(d)) + 0.5);
      ctx.lineTo(area.right, Math.round(y(d)) + 0.5);
      ctx.stroke();
    }
    ctx.strokeStyle = "#999";
    ctx.beginPath();
    logs.forEach((g, l) => (l === 0 ? ctx.moveTo(x(l), y(g)) : ctx.lineTo(x(l), y(g))));
    ctx.stroke();
    const radius = Math.max(1.5, Math.min(3.5, (area.right - area.left) / p / 2.5));
    logs.forEach((g, l) => {
      ctx.beginPath();
      ctx.arc(x(l), y(g), radius, 0, 2 * Math.PI);
      ctx.fillStyle = levelColour(l, p);
      ctx.fill();
    });
    ctx.fillStyle = "#333";
    ctx.textAlign = "left";
    ctx.fillText("level 0", area.left, view.height - 5);
    ctx.textAlign = "right";
    ctx.fillText(`level ${p - 1}`, area.right, view.height - 5);
  }

  /** Per pair: the indicator rate, the executed swap rate and the target S. */
  function drawRates(run) {
    const view = run.rates;
    const ctx = view.ctx;
    const area = plotArea(view, 30, 20, 18);
    clear(view);
    frameArea(ctx, area);
    const y = (rate) => area.bottom - rate * (area.bottom - area.top);
    ctx.textAlign = "right";
    for (const tick of [0, 0.5, 1]) ctx.fillText(String(tick), area.left - 4, y(tick) + 4);
    if (!run.config) return;
    const c = run.counts;
    const pairs = c.swaps.length;
    const x = (i) => area.left + ((i + 0.5) / pairs) * (area.right - area.left);
    ctx.setLineDash([5, 4]);
    ctx.strokeStyle = "#333";
    ctx.beginPath();
    ctx.moveTo(area.left, y(run.config.swapRate));
    ctx.lineTo(area.right, y(run.config.swapRate));
    ctx.stroke();
    ctx.setLineDash([]);
    const radius = Math.max(1.5, Math.min(3.5, (area.right - area.left) / pairs / 2.5));
    const dots = (counts, colour, square) => {
      ctx.fillStyle = colour;
      counts.forEach((n, i) => {
        const rate = c.iteration > 0 ? n / c.iteration : 0;
        if (square) {
          ctx.fillRect(x(i) - radius, y(rate) - radius, 2 * radius, 2 * radius);
        } else {
          ctx.beginPath();
          ctx.arc(x(i), y(rate), radius, 0, 2 * Math.PI);
          ctx.fill();
        }
      });
    };
    dots(c.indicators, INDICATOR_COLOUR, false);
    dots(c.swaps, EXECUTED_COLOUR, true);
    ctx.fillStyle = "#333";
    ctx.textAlign = "left";
    ctx.fillText("S", area.right + 5, y(run.config.swapRate) + 4);
    ctx.fillText("pair 0", area.left, view.height - 5);
    ctx.textAlign = "right";
    ctx.fillText(`pair ${pairs - 1}`, area.right, view.height - 5);
  }

  const formatCount = (n) => n.toLocaleString("en-US");

  function writeNumbers(run) {
    const f = run.fields;
    if (!run.config) {
      for (const key of Object.keys(f)) f[key].textContent = "—";
      return;
    }
    const c = run.counts;
    f.iteration.textContent = `${formatCount(c.iteration)} of ${formatCount(run.goal)}`;
    f.roundTrips.textContent = formatCount(c.roundTrips);
    f.rate.textContent = c.iteration > 0 ? ((1000 * c.roundTrips) / c.iteration).toFixed(2) : "—";
    f.predicted.textContent = Number.isFinite(run.predicted) ? run.predicted.toFixed(2) : "— (SEO)";
    f.authors.textContent = formatCount(c.authors);
    f.restarts.textContent = formatCount(c.restarts);
    f.buffer.textContent = c.buffer.toFixed(3);
  }

  /** The resolved window: the run's own once started, else what the controls give. */
  function writeResolvedWindow(run) {
    if (run.config) {
      run.resolved.textContent = run.config.window.text;
      return;
    }
    const usable = (control, read) => (linkErrors[control.id] ? {} : read());
    const chains = usable($("chains"), () => readInteger($("chains"), "", 2, 256)).value;
    const swapRate = usable($("swap-rate"), () => readSwapRate($("swap-rate"))).value;
    const choice = usable(run.select, () => readWindowChoice(run)).value;
    const valid = wasm && chains !== undefined && swapRate !== undefined && choice !== undefined;
    const resolved = valid ? resolveWindow(choice, chains, swapRate) : null;
    run.resolved.textContent = resolved && !resolved.error ? resolved.text : "";
  }

  function drawRun(run) {
    drawTarget(run);
    drawLevels(run);
    drawLadder(run);
    drawRates(run);
    writeNumbers(run);
    writeResolvedWindow(run);
  }

  // ---- The sentences below the runs ----------------------------------------------------

  function compareRuns(a, b) {
    if (!a.config || !b.config || a.counts.iteration === 0 || b.counts.iteration === 0) return "";
    const rate = (run) => run.counts.roundTrips / run.counts.iteration;
    const [more, fewer] = rate(b) >= rate(a) ? [b, a] : [a, b];
    if (rate(more) === 0) return "Neither run has made a round trip yet.";
    if (rate(fewer) === 0) {
      const n = more.counts.roundTrips;
      return `${more.name} has made ${formatCount(n)} round trip${n === 1 ? "" : "s"}, ${fewer.name} none yet.`;
    }
    const ratio = (rate(more) / rate(fewer)).toPrecision(2);
    const predicted = more.predicted / fewer.predicted;
    const lemma = Number.isFinite(predicted)
      ? `Lemma 1 predicts ${predicted.toPrecision(2)}×`
      : "Lemma 1 has no prediction for SEO";
    return `${more.name} makes ${ratio}× the round trips of ${fewer.name} per iteration (${lemma}).`;
  }

  function writeRate() {
    const perSecond = timing.ms > 0 ? (timing.chainSteps / timing.ms) * 1000 : 0;
    rateBox.dataset.chainStepsPerSecond = String(Math.round(perSecond));
    if (perSecond === 0) return;
    const text = perSecond >= 1e6
      ? `${(perSecond / 1e6).toFixed(2)} million`
      : formatCount(Math.round(perSecond));
    rateBox.textContent = `${text} chain-steps per second in this browser (P × iterations of both runs, over the time spent inside the sampler's steps).`;
  }

  // ---- State and scheduling ------------------------------------------------------------

  function setState(next, text) {
    state = next;
    statusBox.dataset.state = next;
    statusBox.textContent = text;
    const usable = next !== "loading" && next !== "error";
    runButton.disabled = !usable;
    runButton.textContent = usable && runs.some((run) => run.config) ? "Restart" : "Run";
    pauseButton.disabled = next !== "running" && next !== "paused";
    pauseButton.textContent = next === "paused" ? "Resume" : "Pause";
  }

  function goalText() {
    const c = runs[0].config;
    return c.rules === "authors-code"
      ? `${formatCount(c.iterations + 1)} iterations (0 … ${formatCount(c.iterations)}, the authors' rules)`
      : `${formatCount(c.iterations)} iterations`;
  }

  function fail(error) {
    console.error(error);
    let message = error && error.message ? error.message : String(error);
    const line = wasm && wasm.nrpt_panic_line ? wasm.nrpt_panic_line() : 0;
    if (line > 0) message += ` (the sampler stopped at line ${line} of its Rust sources)`;
    setState("error", `Error: ${message}`);
  }

  function requestFrame() {
    if (!framePending) {
      framePending = true;
      requestAnimationFrame(onFrame);
    }
  }

  /** The unfinished run that is behind (so that the two go in step), or null. */
  function laggard() {
    const open = runs.filter((run) => run.config && run.counts.iteration < run.goal);
    open.sort((a, b) => a.counts.iteration - b.counts.iteration);
    return open.length > 0 ? open[0] : null;
  }

  function stepFrame() {
    const started = performance.now();
    for (let calls = 0; calls < MAX_CALLS_PER_FRAME; calls++) {
      const run = laggard();
      if (!run || performance.now() - started >= FRAME_BUDGET_MS) break;
      stepRun(run);
    }
    if (!laggard()) setState("done", `Done: both runs ran ${goalText()}.`);
  }

  function onFrame() {
    framePending = false;
    if (state === "error") return;
    try {
      if (state === "running") stepFrame();
      for (const run of runs) {
        if (run.stepped) {
          run.stepped = false;
          readCounts(run);
          run.dirty = true;
        }
        if (run.dirty) {
          run.dirty = false;
          drawRun(run);
        }
      }
      compareBox.textContent = compareRuns(runs[0], runs[1]);
      writeRate();
      if (state === "running") requestFrame();
    } catch (error) {
      fail(error);
    }
  }

  const NOT_STARTED = "Not started: correct the settings marked below.";

  const START_ERRORS = {
    "-1": "the module has no slot for this run",
    "-2": "Chains P must be from 2 to 256.",
    "-3": "The target swap rate S must lie strictly between 0 and 1.",
    "-4": "The sampler refused these settings.",
    "-5": "The rules are neither the paper's nor the authors' code.",
    "-6": "The authors' rules round the initial learning rates to 3 decimals, and from P = 28 on two levels then share a learning rate: choose at most 27 chains, or the paper's rules.",
  };

  /** Where `live_start`'s complaint belongs. */
  function startErrorControl(code, run) {
    return { "-2": $("chains"), "-3": $("swap-rate"), "-5": $("rules"), "-6": $("chains") }[code] || run.select;
  }

  /** Starts both runs from iteration 0 with the controls' settings, or shows what is
   * wrong and starts nothing. */
  function startRuns() {
    const read = readSettings(true);
    if (!read) {
      // Runs that go on keep going; before any run, the status says why none started.
      if (state === "ready") setState("ready", NOT_STARTED);
      return;
    }
    const { settings, choices } = read;
    const windows = runs.map((run, i) => resolveWindow(choices[i], settings.chains, settings.swapRate));
    let firstInvalid = null;
    runs.forEach((run, i) => {
      if (windows[i].error) {
        showError(run.select, windows[i].error);
        firstInvalid = firstInvalid || run.select;
      }
    });
    if (!firstInvalid) {
      runs.forEach((run, i) => {
        if (firstInvalid) return;
        const code = wasm.live_start(run.slot, settings.chains, settings.swapRate, windows[i].window, RULES[settings.rules], settings.seed);
        if (code === 0) return;
        if (code === -1) throw new Error(`${run.name}: ${START_ERRORS[code]}`);
        firstInvalid = startErrorControl(String(code), run);
        showError(firstInvalid, START_ERRORS[code] || `The sampler refused the settings (code ${code}).`);
        if (code === -6) showError($("rules"), "The authors' code runs at most 27 chains (see Chains P).");
      });
    }
    if (firstInvalid) {
      // `live_start` empties a slot it refuses: neither run goes on.
      runs.forEach(dropRun);
      firstInvalid.focus();
      setState("ready", NOT_STARTED);
      requestFrame();
      return;
    }
    runs.forEach((run, i) => beginRun(run, settings, windows[i]));
    timing.chainSteps = 0;
    timing.ms = 0;
    pendingNote.hidden = true;
    setState("running", `Running: both runs, ${goalText()} each.`);
    requestFrame();
  }

  function togglePause() {
    if (state === "running") {
      const at = formatCount(Math.min(runs[0].counts.iteration, runs[1].counts.iteration));
      setState("paused", `Paused at iteration ${at} of ${goalText()}.`);
    } else if (state === "paused") {
      setState("running", `Running: both runs, ${goalText()} each.`);
      requestFrame();
    }
  }

  /** After any change of a control: check it, and say that running runs keep theirs. */
  function onControlChange(event) {
    const control = event.target;
    delete linkErrors[control.id];
    for (const run of runs) run.custom.disabled = run.select.value !== "custom";
    readSettings(false);
    if (runs.some((run) => run.config)) pendingNote.hidden = false;
    runs.forEach((run) => writeResolvedWindow(run));
  }

  // ---- Copy buttons ---------------------------------------------------------------------

  function copyText(button) {
    const area = $(button.dataset.copy);
    const say = (text) => ($("copy-status").textContent = text);
    const selectIt = () => {
      area.focus();
      area.select();
      say("Selected: press Ctrl+C (⌘C on a Mac) to copy.");
    };
    if (!area.value) return say("Nothing to copy yet: press Run first.");
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(area.value).then(() => say("Copied."), selectIt);
    } else {
      selectIt();
    }
  }

  // ---- Link parameters ------------------------------------------------------------------

  /** What a number input can hold (HTML's "valid floating-point number"). */
  const NUMBER_TEXT = /^-?(\d+(\.\d+)?|\.\d+)([eE][+-]?\d+)?$/;

  /** Puts a link's number into a number input; other text is kept as its error. */
  function numberFromLink(input, key, text) {
    if (NUMBER_TEXT.test(text)) input.value = text;
    else linkErrors[input.id] = `The link's ${key}=${text} is not a number.`;
  }

  function windowFromLink(run, key, text) {
    if (NAMED_WINDOWS.includes(text)) {
      run.select.value = text;
    } else if (/^\d+$/.test(text)) {
      run.select.value = "custom";
      run.custom.value = text;
    } else {
      linkErrors[run.select.id] = `The link's ${key}=${text} is not a window: give 1, opt, paper, seo or a number of iterations.`;
    }
    run.custom.disabled = run.select.value !== "custom";
  }

  /** Fills the controls from the page's link; returns whether it asks to run at once. */
  function applyLink() {
    const params = new URLSearchParams(location.search);
    const numbers = { chains: "chains", swap_rate: "swap-rate", seed: "seed", iterations: "iterations" };
    for (const key of Object.keys(numbers)) {
      if (params.has(key)) numberFromLink($(numbers[key]), key, params.get(key));
    }
    if (params.has("rules")) {
      const rules = params.get("rules");
      if (rules in RULES) $("rules").value = rules;
      else linkErrors.rules = `The link's rules=${rules} is neither "paper" nor "authors-code".`;
    }
    for (const run of runs) {
      const key = "window_" + run.id;
      if (params.has(key)) windowFromLink(run, key, params.get(key));
    }
    return params.get("autorun") === "1";
  }

  // ---- Start-up ------------------------------------------------------------------------

  function init() {
    window.addEventListener("error", (event) => fail(event.error || event.message));
    window.addEventListener("unhandledrejection", (event) => fail(event.reason));
    $("settings").addEventListener("submit", (event) => {
      event.preventDefault();
      if (state === "loading" || state === "error") return;
      try {
        startRuns();
      } catch (error) {
        fail(error);
      }
    });
    pauseButton.addEventListener("click", togglePause);
    for (const control of document.querySelectorAll("input, select")) {
      control.addEventListener("input", onControlChange);
      control.addEventListener("change", onControlChange);
    }
    for (const button of document.querySelectorAll("button[data-copy]")) {
      button.addEventListener("click", () => copyText(button));
    }
    const autorun = applyLink();
    readSettings(false);
    requestFrame();
    loadModule().then((exports) => {
      wasm = exports;
      traceRow = wasm.live_max_chains() >>> 0;
      setState("ready", "Ready: choose the settings and a window for each run, then press Run.");
      runs.forEach((run) => writeResolvedWindow(run));
      if (autorun) startRuns();
    }).catch(fail);
  }

  init();
})();

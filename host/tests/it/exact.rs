//! Exact tempering from the command line: `nrpt run --target gaussian-path` reports the
//! barrier Λ, log Z and round trips beside their closed forms, `--chains auto` picks the
//! number of chains its rule gives for the closed-form Λ, and `nrpt scale --target
//! gaussian-path` measures E[T] beside Lemma 1 and the limit P (2 + 2Λ).

use crate::common;
use common::{json_of, nrpt, number, stderr};

/// Λ = c_d ln 10 with c_d = Γ((d+1)/2)/(√π Γ(d/2)) (nrpt-core's exact::gaussian): the
/// values for d = 2 and 16, computed independently.
fn closed_form_lambda(d: usize) -> f64 {
    // c_2 = Γ(3/2)/(√π Γ(1)) = 1/2; c_16 = Γ(8.5)/(√π Γ(8)) = (15!!/2^8)/7!.
    match d {
        2 => 0.5 * 10f64.ln(),
        16 => (2_027_025.0 / 256.0) / 5040.0 * 10f64.ln(),
        _ => unreachable!(),
    }
}

#[test]
fn gaussian_path_reports_the_barrier_and_log_z() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g");
    let args = &[
        "run",
        "--target",
        "gaussian-path",
        "--reference",
        "fixed",
        "--dim",
        "2",
        "-p",
        "12",
        "-n",
        "8000",
        "-e",
        "3",
        "-w",
        "1",
        "--json",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ];
    let v = json_of(&nrpt(args));
    let lambda = closed_form_lambda(2);
    assert!(
        (number(&v["closed_form"], "lambda") - lambda).abs() < 1e-12,
        "{v}"
    );
    // log Z = (d/2) ln(2π σ₁²) with σ₁² = 0.1, as the path is normalized (exact::gaussian).
    let log_z = (2.0 * std::f64::consts::PI * 0.1).ln();
    assert!(
        (number(&v["closed_form"], "log_z") - log_z).abs() < 1e-12,
        "{v}"
    );
    let est = number(&v, "lambda");
    assert!((est / lambda - 1.0).abs() < 0.02, "Λ̂ {est} vs {lambda}");
    let z = number(&v, "log_z");
    let se = number(&v, "log_z_se");
    assert!((z - log_z).abs() < 0.05, "log Z {z} ± {se} vs {log_z}");
    assert!(se > 0.0 && se < 0.05, "{se}");
    // Round trips: below the W = 1 prediction from the measured rejections (MALA is not
    // a perfect explorer), within 10 %; and below the limit 1/(2 + 2Λ̂).
    let measured = number(&v, "round_trips_per_1000");
    let predicted = number(&v, "predicted_round_trips_per_1000");
    assert!(
        (0.9..1.0).contains(&(measured / predicted)),
        "{measured} vs {predicted}"
    );
    assert!(predicted < number(&v, "limit_round_trips_per_1000"));
    assert_eq!(v["chains"], 12);
    assert!(v["pilot"].is_null(), "a fixed P and window need no pilot");
    assert_eq!(v["pilots"], serde_json::json!([]));
    // log Z is the mean of the two stepping stones; its error the larger of the batch
    // means' (SE_f + SE_r)/2 and the spread of the ensembles, named.
    let (f, r) = (number(&v, "log_z_forward"), number(&v, "log_z_reverse"));
    let (sf, sr) = (
        number(&v, "log_z_forward_se"),
        number(&v, "log_z_reverse_se"),
    );
    assert_eq!(z, 0.5 * (f + r), "{v}");
    let batch_means = number(&v, "log_z_se_batch_means");
    let between = number(&v, "log_z_se_between_ensembles");
    assert_eq!(batch_means, 0.5 * (sf + sr), "{v}");
    assert_eq!(se, batch_means.max(between), "{v}");
    let source = if between > batch_means {
        "between_ensembles"
    } else {
        "batch_means"
    };
    assert_eq!(v["log_z_se_source"], source, "{v}");
    assert_eq!(
        v["log_z_ensembles"].as_array().map(Vec::len),
        Some(3),
        "{v}"
    );
    assert!(sf > 0.0 && sr > 0.0 && f <= r + 4.0 * sf.hypot(sr), "{v}");
    // A healthy run: no diagnostic fires. Λ̂'s batch-means error is small but not
    // zero, and the Gaussian-swap correction lies above Σ r̂, near Λ.
    assert_eq!(v["warnings"], serde_json::json!([]), "{v}");
    let lambda_se = number(&v, "lambda_se");
    assert!(lambda_se > 0.0 && lambda_se < 0.02, "{lambda_se}");
    let corrected = number(&v, "barrier_gaussian_corrected");
    assert!(
        corrected >= est && (corrected / lambda - 1.0).abs() < 0.02,
        "{v}"
    );
    assert_eq!(v["explorer"]["name"], "mala");
    assert_eq!(v["explorer"]["steps_per_iteration"], 1);
    assert!(v["explorer"]["leapfrog_steps"].is_null());
    let acceptance = number(&v, "explorer_acceptance");
    assert!((acceptance - 0.574).abs() < 0.05, "{acceptance}");
    for f in [
        "summary.json",
        "lambda.csv",
        "lambda.png",
        "lambda.svg",
        "grid.csv",
        "rounds.csv",
    ] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    // λ̂(β) against the closed form, away from the ends.
    let csv = std::fs::read_to_string(out.join("lambda.csv")).unwrap();
    for line in csv.lines().skip(1) {
        let c: Vec<f64> = line.split(',').map(|x| x.parse().unwrap()).collect();
        if (0.1..=0.9).contains(&c[0]) {
            assert!(
                (c[1] / c[2] - 1.0).abs() < 0.05,
                "λ̂({}) = {} vs {}",
                c[0],
                c[1],
                c[2]
            );
        }
    }
    // Deterministic by seed.
    let again = json_of(&nrpt(args));
    assert_eq!(again["lambda"], v["lambda"]);
    assert_eq!(again["log_z"], v["log_z"]);
}

#[test]
fn auto_chains_follow_the_stated_rule() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g");
    let v = json_of(&nrpt(&[
        "run",
        "--target",
        "gaussian-path",
        "--reference",
        "fixed",
        "--dim",
        "16",
        "--chains",
        "auto",
        "-n",
        "4000",
        "-e",
        "2",
        "--json",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ]));
    // The cost-optimal rule: P − 1 ∈ {⌊2Λ⌋, ⌈2Λ⌉}, whichever maximizes round trips per
    // chain-iteration (P − 1)... here 2Λ = 7.23 for the closed-form Λ = 3.6175: P = 8.
    let lambda = closed_form_lambda(16);
    let cost = |n: f64| (n + 1.0) * (1.0 + n * lambda / (n - lambda));
    let (lo, hi) = ((2.0 * lambda).floor(), (2.0 * lambda).ceil());
    let want = 1 + if cost(hi) < cost(lo) { hi } else { lo } as usize;
    assert_eq!(want, 8);
    let chosen = v["chains"].as_u64().unwrap() as usize;
    assert!(
        chosen.abs_diff(want) <= 1,
        "chose {chosen}, the rule gives {want}: {v}"
    );
    let pilot = &v["pilot"];
    assert_eq!(pilot["chains"], 16);
    // One pilot (16 chains reject about 0.24 each at Λ = 3.6), with every field.
    assert_eq!(v["pilots"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(&v["pilots"][0], pilot);
    let rejection = number(pilot, "mean_rejection");
    assert!(
        (rejection - number(pilot, "lambda") / 15.0).abs() < 1e-12 && rejection < 0.5,
        "{pilot}"
    );
    assert!(number(pilot, "barrier_gaussian_corrected") >= number(pilot, "lambda"));
    assert!(number(pilot, "seconds") >= 0.0);
    assert!(
        (number(pilot, "lambda") / lambda - 1.0).abs() < 0.05,
        "{pilot}"
    );
    assert!(v["chains_rule"].as_str().unwrap().contains("2Λ"));
    // The rule's own P (rejections near 0.5 by design) gives no warning.
    assert_eq!(v["warnings"], serde_json::json!([]), "{v}");
    // With SGD targets `auto` is refused, naming the flag.
    let o = nrpt(&["run", "--chains", "auto", "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--chains"));
}

/// Where 16 chains are too few (D = 100, Λ = 9.16: the first pilot's pairs reject more
/// than half their swaps), `--chains auto` runs a larger pilot and takes P from it; the
/// text output lists both pilots.
#[test]
fn auto_chains_enlarge_a_pilot_whose_pairs_reject_too_often() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g");
    let mut args = vec![
        "run",
        "--target",
        "gaussian-path",
        "--reference",
        "fixed",
        "--dim",
        "100",
        "--chains",
        "auto",
        "-n",
        "800",
        "-e",
        "1",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ];
    let text = nrpt(&args);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("pilot 1/2: 16 chains") && text.contains("a larger pilot follows"),
        "{text}"
    );
    args.push("--json");
    let v = json_of(&nrpt(&args));
    let pilots = v["pilots"].as_array().unwrap();
    assert_eq!(pilots.len(), 2, "{v}");
    assert_eq!(pilots[0]["chains"], 16);
    assert!(number(&pilots[0], "mean_rejection") > 0.5, "{v}");
    assert!(number(&pilots[1], "mean_rejection") <= 0.5, "{v}");
    // 1 + ⌈Λ̃/0.4⌉ chains for the first pilot's correction Λ̃.
    let corrected = number(&pilots[0], "barrier_gaussian_corrected");
    assert_eq!(
        pilots[1]["chains"].as_u64().unwrap(),
        1 + (corrected / 0.4).ceil() as u64
    );
    assert_eq!(&v["pilot"], &pilots[1]);
    // P from the last pilot's Λ̂ (P − 1 ≈ 2Λ̂): 18 to 20 for Λ = 9.16.
    let chains = v["chains"].as_u64().unwrap();
    let twice = 2.0 * number(&pilots[1], "lambda");
    assert!(
        (chains as f64 - 1.0 - twice).abs() <= 1.0,
        "{chains} vs {twice}"
    );
}

#[test]
fn scale_measures_the_exact_sampler_beside_lemma_1_and_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s");
    let v = json_of(&nrpt(&[
        "scale",
        "--target",
        "gaussian-path",
        "-p",
        "4,8,16",
        "-w",
        "1",
        "--max-iterations",
        "4000",
        "-e",
        "4",
        "--json",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ]));
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 3);
    let lambda = closed_form_lambda(2);
    for p in points {
        let l = number(p, "lambda");
        assert!((l / lambda - 1.0).abs() < 0.06, "{p}");
        let et = number(p, "expected_round_trip");
        let limit = number(p, "limit_expected_round_trip");
        let chains = number(p, "chains");
        assert!((limit - chains * (2.0 + 2.0 * l)).abs() < 1e-9 * limit);
        // E[T] is above the limit and near Lemma 1 (0-15 % above: MALA explores
        // imperfectly, more so with few chains far apart).
        assert!(et > limit, "{p}");
        let ratio = number(p, "ratio");
        assert!((1.0..1.15).contains(&ratio), "{p}");
    }
    assert!(out.join("et_vs_chains.png").exists());
}

/// Too few chains for the barrier: the run says which pairs reject, how many chains Λ̂
/// suggests and what to type; the stepping stones disagree; `--strict` makes it exit 1
/// after writing the outputs.
#[test]
fn too_few_chains_are_named_with_the_chains_to_use() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g");
    let mut args = vec![
        "run",
        "--target",
        "gaussian-path",
        "--reference",
        "fixed",
        "--dim",
        "100",
        "--chains",
        "4",
        "-n",
        "2000",
        "-e",
        "2",
        "--json",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ];
    let v = json_of(&nrpt(&args));
    let warnings: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    let chains = v["recommended_chains"]["cost_optimal"].as_u64().unwrap();
    let rejections = warnings
        .iter()
        .find(|w| w.contains("reject more than half"))
        .unwrap_or_else(|| panic!("{warnings:?}"));
    assert!(rejections.contains("--chains auto"), "{rejections}");
    // Σ r̂ saturates with 4 chains: the chains are a lower bound, said so.
    assert_eq!(v["recommended_chains"]["lower_bound"], true, "{v}");
    assert!(
        rejections.contains(&format!("at least {chains} chains"))
            && rejections.contains("only a lower bound"),
        "{rejections}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("stepping stones disagree")),
        "{warnings:?}"
    );
    // Σ r̂ saturates (3 pairs: Λ̂ < 3); the correction does not.
    let lambda = number(&v, "lambda");
    assert!(lambda < 3.0, "{v}");
    let corrected = v["barrier_gaussian_corrected"].as_f64();
    assert!(corrected.is_none_or(|c| c > 2.0 * lambda), "{v}");
    args.push("--strict");
    let o = nrpt(&args);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("reject more than half"),
        "{}",
        stderr(&o)
    );
    assert!(out.join("summary.json").exists());
    // On the stabilized ladder (the default) the fixed leg's 4 chains are as few, and
    // its warning says which leg it is about; the variational leg's are enough.
    let (i, _) = args
        .iter()
        .enumerate()
        .find(|(_, a)| **a == "fixed")
        .unwrap();
    args[i] = "stabilized";
    args.retain(|a| *a != "--strict");
    let stabilized = out.with_extension("stabilized");
    let o_arg = stabilized.to_str().unwrap();
    let last = args.len() - 1;
    args[last] = o_arg;
    let v = json_of(&nrpt(&args));
    let warnings: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("fixed leg of the stabilized ladder:")
                && w.contains("reject more than half")),
        "{warnings:?}"
    );
    assert!(number(&v, "lambda") < 1.0, "{v}");
}

/// `--explorer hmc`, `--explorer-steps` and `--leapfrog-steps` reach the run and its
/// summary (flags or TOML keys); where they do not apply they are refused with exit 2,
/// naming the flag.
#[test]
fn explorers_are_chosen_and_refused_where_they_do_not_apply() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g");
    let o = out.to_str().unwrap();
    let base = ["run", "--target", "gaussian-path", "--dim", "2", "-p", "6"];
    let quick = ["-n", "400", "-e", "1", "--json", "--quiet", "-o", o];
    let with = |extra: &[&str]| -> Vec<String> {
        base.iter()
            .chain(extra)
            .chain(&quick)
            .map(|s| s.to_string())
            .collect()
    };
    let run = |args: Vec<String>| nrpt(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let v = json_of(&run(with(&[
        "--explorer",
        "hmc",
        "--explorer-steps",
        "2",
        "--leapfrog-steps",
        "5",
    ])));
    assert_eq!(v["explorer"]["name"], "hmc");
    assert_eq!(v["explorer"]["steps_per_iteration"], 2);
    assert_eq!(v["explorer"]["leapfrog_steps"], 5);
    assert_eq!(number(&v["explorer"], "target_acceptance"), 0.65);
    let range = &v["explorer"]["step_size_range"];
    assert!(range[0].as_f64().unwrap() > 0.0 && range[0].as_f64() <= range[1].as_f64());
    // The same from a configuration file, and MALA with more steps changes the run.
    let toml = dir.path().join("c.toml");
    std::fs::write(
        &toml,
        "target = \"gaussian-path\"\nexplorer = \"hmc\"\nexplorer_steps = 2\nleapfrog_steps = 5\n",
    )
    .unwrap();
    let from_file = json_of(&run(with(&["-c", toml.to_str().unwrap()])));
    assert_eq!(from_file["lambda"], v["lambda"]);
    let mala = json_of(&run(with(&["--explorer-steps", "3"])));
    assert_eq!(mala["explorer"]["name"], "mala");
    assert_eq!(mala["explorer"]["steps_per_iteration"], 3);
    assert_ne!(mala["lambda"], v["lambda"]);
    // Refusals: exit 2 and the flag named.
    let refused = |args: Vec<String>, flag: &str| {
        let r = run(args.clone());
        assert_eq!(r.status.code(), Some(2), "{args:?}: {}", stderr(&r));
        assert!(stderr(&r).contains(flag), "{args:?}: {}", stderr(&r));
    };
    refused(with(&["--leapfrog-steps", "5"]), "--leapfrog-steps");
    refused(with(&["--explorer", "sgld"]), "--explorer");
    refused(with(&["--explorer-steps", "0"]), "--explorer-steps");
    refused(with(&["--explorer-steps", "1001"]), "--explorer-steps");
    refused(
        with(&["--explorer", "hmc", "--leapfrog-steps", "1025"]),
        "--leapfrog-steps",
    );
    let sgd = |extra: &[&str]| -> Vec<String> {
        ["run", "-n", "100"]
            .iter()
            .chain(extra)
            .chain(&["-q", "-o", o])
            .map(|s| s.to_string())
            .collect()
    };
    refused(sgd(&["--explorer", "mala"]), "--explorer");
    refused(sgd(&["--explorer", "hmc"]), "--explorer");
    refused(sgd(&["--explorer-steps", "2"]), "--explorer-steps");
    refused(sgd(&["--leapfrog-steps", "2"]), "--leapfrog-steps");
    refused(sgd(&["--reference", "variational"]), "--reference");
}

/// `--reference variational` anneals from a Gaussian fitted to the target level: on the
/// Gaussian path (D = 10) the fit is the target, so Λ̂ falls from about 2.8 to below 0.1,
/// and log Z stays the closed form's within 3 standard errors; the summary names the
/// reference, and `config` holds it only when it is not the default.
#[test]
fn a_variational_reference_shortens_the_gaussian_path() {
    let dir = tempfile::tempdir().unwrap();
    let run = |reference: &str| {
        let out = dir.path().join(reference);
        json_of(&nrpt(&[
            "run",
            "--target",
            "gaussian-path",
            "--dim",
            "10",
            "-p",
            "8",
            "-n",
            "6000",
            "-e",
            "2",
            "--reference",
            reference,
            "--json",
            "--quiet",
            "-o",
            out.to_str().unwrap(),
        ]))
    };
    let (fixed, variational) = (run("fixed"), run("variational"));
    assert_eq!(fixed["reference"], "fixed");
    assert_eq!(variational["reference"], "variational");
    assert_eq!(fixed["config"]["reference"], "fixed");
    assert_eq!(variational["config"]["reference"], "variational");
    assert!(fixed.get("fixed_leg").is_none() && variational.get("fixed_leg").is_none());
    let (lf, lv) = (number(&fixed, "lambda"), number(&variational, "lambda"));
    assert!(lf > 2.5, "fixed Λ̂ {lf}");
    assert!(lv < 0.1, "variational Λ̂ {lv}");
    let closed = number(&variational["closed_form"], "log_z");
    let (z, se) = (
        number(&variational, "log_z"),
        number(&variational, "log_z_se"),
    );
    assert!(
        (z - closed).abs() < 3.0 * se.max(1e-3),
        "log Z {z} ± {se} vs {closed}"
    );
    assert!(
        number(&variational, "round_trips_per_1000") > 3.0 * number(&fixed, "round_trips_per_1000")
    );
    // The default, the stabilized ladder: the variational leg's estimates, and the
    // fixed leg's beside them, with its own barrier (the fixed run's) and log Z.
    let stabilized = run("stabilized");
    assert_eq!(stabilized["reference"], "stabilized");
    assert!(
        stabilized["config"].get("reference").is_none(),
        "the default"
    );
    assert!(number(&stabilized, "lambda") < 0.1, "{stabilized}");
    let leg = &stabilized["fixed_leg"];
    assert_eq!(leg["chains"], 8);
    assert!((number(leg, "lambda") / lf - 1.0).abs() < 0.1, "{leg}");
    let (zf, sef) = (number(leg, "log_z"), number(leg, "log_z_se"));
    assert!(
        (zf - closed).abs() < 3.0 * sef,
        "fixed leg: log Z {zf} ± {sef} vs {closed}"
    );
    // Iterations of the main run, exchanged at every even one (vanilla DEO), per ensemble.
    let n = stabilized["iterations_run"].as_u64().unwrap();
    assert_eq!(leg["exchanges"].as_u64(), Some(2 * n.div_ceil(2)));
    let both = number(leg, "round_trips_per_1000_both_legs");
    assert!(
        (both - number(leg, "round_trips_per_1000") - number(&stabilized, "round_trips_per_1000"))
            .abs()
            < 1e-9
    );
    for file in [
        "lambda.csv",
        "fixed-leg-grid.csv",
        "fixed-leg-rounds.csv",
        "lambda.svg",
    ] {
        assert!(dir.path().join("stabilized").join(file).is_file(), "{file}");
    }
    let lambda = std::fs::read_to_string(dir.path().join("stabilized/lambda.csv")).unwrap();
    assert!(
        lambda.lines().next().unwrap().contains("lambda_fixed_leg"),
        "{lambda}"
    );
}

//! The spellings of the previous release that the command still reads, for one release,
//! each with a one-line note: `--model` of `bench` and `scale` (now `--target`), the
//! values `sampler` and `mlp` of `bench` (now `modes2d` and `classifier`), `--seeds`
//! (now `--ensembles`) and `--shard` of `scale` (now `--part`).
//!
//! They are rewritten into today's spellings before clap parses the arguments, so that
//! `--help`, the reference pages and the error messages know today's only, and an old
//! command line runs exactly as its new spelling does.

use std::ffi::OsString;

/// One old spelling: a flag of some commands renamed, or one of its values.
#[derive(Clone, Copy, Debug)]
pub struct OldSpelling {
    /// The commands that read it.
    pub commands: &'static [&'static str],
    /// The flag as it was (`--model`).
    pub flag: &'static str,
    /// The flag now (`--target`; the same flag when only a value changed).
    pub now: &'static str,
    /// A value renamed: as it was and as it is now (`sampler`, `modes2d`).
    pub value: Option<(&'static str, &'static str)>,
    /// What the note adds, when the new name alone does not say enough.
    pub why: &'static str,
}

/// Every old spelling still read.
pub const OLD_SPELLINGS: &[OldSpelling] = &[
    OldSpelling {
        commands: &["bench", "scale"],
        flag: "--model",
        now: "--target",
        value: None,
        why: "",
    },
    OldSpelling {
        commands: &["bench"],
        flag: "--target",
        now: "--target",
        value: Some(("sampler", "modes2d")),
        why: "",
    },
    OldSpelling {
        commands: &["bench"],
        flag: "--target",
        now: "--target",
        value: Some(("mlp", "classifier")),
        why: "",
    },
    OldSpelling {
        commands: &["run", "reproduce", "deep", "bench", "scale"],
        flag: "--seeds",
        now: "--ensembles",
        value: None,
        why: "",
    },
    OldSpelling {
        commands: &["scale"],
        flag: "--shard",
        now: "--part",
        value: None,
        why: " (the points i, i + n, …; `--shard` of reproduce and deep runs a block of \
              ensembles)",
    },
];

/// The global flags that take a value (their value is not the command's name).
const GLOBAL_WITH_VALUE: &[&str] = &["--max-memory"];

/// `args` (the program's name first) in today's spellings, and a note for each old
/// spelling met: "`--model sampler` is now `--target modes2d`; the old spelling goes
/// in the next release". Arguments after `--`, and arguments that are not UTF-8, are
/// left as they are.
pub fn modernize(args: Vec<OsString>) -> (Vec<OsString>, Vec<String>) {
    let text: Vec<Option<String>> = args.iter().map(|a| a.to_str().map(String::from)).collect();
    // The command: the first argument after the program's name that is neither a flag
    // nor the value of a global flag.
    let mut i = 1;
    let command = loop {
        match text.get(i) {
            None => return (args, Vec::new()),
            Some(Some(a)) if GLOBAL_WITH_VALUE.contains(&a.as_str()) => i += 2,
            Some(Some(a)) if a.starts_with('-') => i += 1,
            Some(Some(a)) => break a.clone(),
            Some(None) => return (args, Vec::new()),
        }
    };
    let spellings: Vec<&OldSpelling> = OLD_SPELLINGS
        .iter()
        .filter(|s| s.commands.contains(&command.as_str()))
        .collect();
    let mut out: Vec<OsString> = args[..=i].to_vec();
    let mut notes = Vec::new();
    let mut k = i + 1;
    while k < args.len() {
        let Some(arg) = &text[k] else {
            out.push(args[k].clone());
            k += 1;
            continue;
        };
        if arg == "--" {
            out.extend(args[k..].iter().cloned());
            break;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let renamed = spellings
            .iter()
            .find(|s| s.value.is_none() && s.flag == flag && s.flag != s.now);
        let now = renamed.map_or(flag.as_str(), |s| s.now);
        // The value, inline or the next argument, when a value of this flag was renamed.
        let value_spelling = |v: &str| {
            spellings
                .iter()
                .find(|s| s.now == now && s.value.is_some_and(|(old, _)| old == v))
        };
        let (value, separate) = match &inline {
            Some(v) => (Some(v.clone()), false),
            None if spellings.iter().any(|s| s.now == now && s.value.is_some()) => {
                (text.get(k + 1).cloned().flatten(), true)
            }
            None => (None, false),
        };
        let new_value = value.as_deref().and_then(value_spelling);
        if renamed.is_some() || new_value.is_some() {
            let old = match &value {
                Some(v) if new_value.is_some() => format!("{flag} {v}"),
                _ => flag.clone(),
            };
            let (new, why) = match new_value {
                Some(s) => (format!("{now} {}", s.value.map_or("", |(_, n)| n)), s.why),
                None => (now.to_string(), renamed.map_or("", |s| s.why)),
            };
            notes.push(format!(
                "note: `{old}` is now `{new}`{why}; the old spelling goes in the next release"
            ));
        }
        let written_value = match (new_value, &value) {
            (Some(s), _) => s.value.map(|(_, n)| n.to_string()),
            (None, v) => v.clone(),
        };
        match (inline.is_some(), separate && value.is_some()) {
            (true, _) => out.push(format!("{now}={}", written_value.unwrap_or_default()).into()),
            (false, true) => {
                out.push(now.into());
                out.push(written_value.unwrap_or_default().into());
                k += 1;
            }
            (false, false) if renamed.is_some() => out.push(now.into()),
            (false, false) => out.push(args[k].clone()),
        }
        k += 1;
    }
    (out, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> (Vec<String>, Vec<String>) {
        let (out, notes) = modernize(args.iter().map(OsString::from).collect());
        let out = out.into_iter().map(|a| a.into_string().unwrap()).collect();
        (out, notes)
    }

    #[test]
    fn old_flags_and_values_become_todays_with_a_note() {
        let (out, notes) = run(&["nrpt", "bench", "--model", "sampler", "-n", "10"]);
        assert_eq!(out, ["nrpt", "bench", "--target", "modes2d", "-n", "10"]);
        assert_eq!(
            notes,
            [
                "note: `--model sampler` is now `--target modes2d`; the old spelling goes in \
              the next release"
            ]
        );
        let (out, notes) = run(&["nrpt", "--json", "bench", "--model=mlp"]);
        assert_eq!(out, ["nrpt", "--json", "bench", "--target=classifier"]);
        assert!(notes[0].contains("`--model mlp` is now `--target classifier`"));
        let (out, notes) = run(&["nrpt", "bench", "--target", "mlp"]);
        assert_eq!(out, ["nrpt", "bench", "--target", "classifier"]);
        assert!(notes[0].contains("`--target mlp` is now `--target classifier`"));
        let (out, notes) = run(&["nrpt", "bench", "--model", "bernoulli"]);
        assert_eq!(out, ["nrpt", "bench", "--target", "bernoulli"]);
        assert!(notes[0].contains("`--model` is now `--target`"));
        let (out, notes) = run(&[
            "nrpt",
            "--max-memory",
            "1G",
            "scale",
            "--seeds=4",
            "--shard",
            "1/2",
        ]);
        assert_eq!(
            out,
            [
                "nrpt",
                "--max-memory",
                "1G",
                "scale",
                "--ensembles=4",
                "--part",
                "1/2"
            ]
        );
        assert_eq!(notes.len(), 2);
        assert!(notes[1].contains("`--shard` is now `--part` (the points i, i + n"));
    }

    #[test]
    fn todays_spellings_and_other_commands_are_left_alone() {
        for args in [
            &["nrpt", "bench", "--target", "modes2d", "--seed", "3"][..],
            &["nrpt", "reproduce", "--shard", "0/2"],
            &["nrpt", "run", "--target", "sampler"],
            &["nrpt", "deep", "merge", "a", "--", "--seeds"],
            &["nrpt", "--json"],
            &["nrpt"],
        ] {
            let (out, notes) = run(args);
            assert_eq!(out, args, "{args:?}");
            assert!(notes.is_empty(), "{args:?}: {notes:?}");
        }
    }
}

//! Precompiled kernels: the PTX that NVRTC makes of the kernels, written ahead of time
//! (`gpu_bench --emit-ptx DIR`, run by `scripts/gpu-build.sh`) and loaded instead of
//! compiling at run time when the environment variable [`PTX_DIR_ENV`]
//! (`NRPT_CUDA_PTX_DIR`) names that folder. A GPU machine then needs no NVRTC at all.
//!
//! Each program is a pair of files: `STEM.ptx`, NVRTC's output as it came, and
//! `STEM.ptx.manifest`, which records the SHA-256 of the source and options it was
//! compiled from and of the PTX itself. [`load`] recomputes both from this binary's own
//! source and options and refuses, with an error that says what differs, PTX built from
//! another kernel source, with other options (another architecture or math mode), or
//! altered since: what runs is exactly what NVRTC would compile at run time.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::CudaError;

/// `true` when libnvrtc can be loaded (without loading the rest of cudarc's NVRTC).
pub fn nvrtc_present() -> bool {
    // SAFETY: only tries to dlopen the library by its usual names.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// The environment variable that names the folder of precompiled PTX.
pub const PTX_DIR_ENV: &str = "NRPT_CUDA_PTX_DIR";

/// The first line of every manifest (and its format version).
const MAGIC: &str = "# nrpt-cuda precompiled PTX, format 1";

/// The folder named by [`PTX_DIR_ENV`], if the variable is set and not empty.
pub fn dir_from_env() -> Option<PathBuf> {
    std::env::var_os(PTX_DIR_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The version (major, minor) of the NVRTC library on the library path, if it loads.
pub fn nvrtc_version() -> Option<(i32, i32)> {
    if !nvrtc_present() {
        return None;
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library is present (checked above); nvrtcVersion writes two ints.
    let r = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    (r == cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS).then_some((major, minor))
}

/// Where the kernels of this process come from, in words: the precompiled PTX of
/// [`PTX_DIR_ENV`], or NVRTC (with its version) at run time.
pub fn kernel_origin() -> String {
    match dir_from_env() {
        Some(dir) => format!("precompiled PTX from {} ({PTX_DIR_ENV})", dir.display()),
        None => match nvrtc_version() {
            Some((major, minor)) => format!("NVRTC {major}.{minor} at run time"),
            None => "NVRTC at run time (libnvrtc not found)".to_string(),
        },
    }
}

/// Compiles `source` to PTX with NVRTC under `options` (`name` is the program's file
/// name in NVRTC's messages). Never reads [`PTX_DIR_ENV`] and caches nothing.
pub fn nvrtc_compile(name: &str, source: &str, options: &[String]) -> Result<String, CudaError> {
    if !nvrtc_present() {
        return Err(CudaError::NoNvrtc {
            reason: format!(
                "libnvrtc.so not found on the library path (set LD_LIBRARY_PATH, or \
                 `source scripts/nvrtc-env.sh`; or set {PTX_DIR_ENV} to a folder of \
                 precompiled PTX from scripts/gpu-build.sh)"
            ),
        });
    }
    let opts = cudarc::nvrtc::CompileOptions {
        options: options.to_vec(),
        name: Some(name.to_string()),
        ..Default::default()
    };
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(source, opts).map_err(|e| {
        let log = match &e {
            cudarc::nvrtc::CompileError::CompileError { log, .. } => {
                log.to_string_lossy().into_owned()
            }
            other => format!("{other:?}"),
        };
        CudaError::Compile {
            options: options.to_vec(),
            log,
        }
    })?;
    Ok(ptx.to_src())
}

/// SHA-256 (hex) of a program: its source and its options, each length-prefixed so
/// that no two different (source, options) pairs hash the same bytes.
pub fn fingerprint(source: &str, options: &[String]) -> String {
    let mut h = Sha256::new();
    h.update(b"nrpt-cuda ptx v1\0");
    h.update((source.len() as u64).to_le_bytes());
    h.update(source.as_bytes());
    h.update((options.len() as u64).to_le_bytes());
    for o in options {
        h.update((o.len() as u64).to_le_bytes());
        h.update(o.as_bytes());
    }
    hex(&h.finalize())
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(2 * bytes.len());
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn ptx_path(dir: &Path, stem: &str) -> PathBuf {
    dir.join(format!("{stem}.ptx"))
}

fn manifest_path(dir: &Path, stem: &str) -> PathBuf {
    dir.join(format!("{stem}.ptx.manifest"))
}

/// Writes `ptx`, compiled by `compiler` (e.g. "NVRTC 13.0") from `source` under
/// `options`, as `DIR/STEM.ptx` with its manifest. Returns the PTX file's path.
pub fn write(
    dir: &Path,
    stem: &str,
    source: &str,
    options: &[String],
    ptx: &str,
    compiler: &str,
) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = ptx_path(dir, stem);
    std::fs::write(&path, ptx)?;
    let manifest = format!(
        "{MAGIC}\n\
         # Checked by nrpt_cuda::ptx_cache::load before the PTX is used; written by\n\
         # `gpu_bench --emit-ptx` (scripts/gpu-build.sh). Do not edit.\n\
         source+options sha256: {}\n\
         ptx sha256: {}\n\
         ptx bytes: {}\n\
         compiler: {compiler}\n\
         options: {}\n",
        fingerprint(source, options),
        sha256_hex(ptx.as_bytes()),
        ptx.len(),
        options.join(" "),
    );
    std::fs::write(manifest_path(dir, stem), manifest)?;
    Ok(path)
}

/// The error of a refused or missing precompiled program.
fn refused(reason: String) -> CudaError {
    CudaError::Ptx { reason }
}

/// The stems of the precompiled programs in `dir` (sorted), for error messages.
pub fn available(dir: &Path) -> Vec<String> {
    let mut stems: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.strip_suffix(".ptx.manifest").map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default();
    stems.sort();
    stems
}

/// Reads `DIR/STEM.ptx` and checks it against this binary's `source` and `options`
/// (and against its own recorded hash). Any mismatch is an error that says what
/// differs and how to rebuild; nothing is compiled.
pub fn load(dir: &Path, stem: &str, source: &str, options: &[String]) -> Result<String, CudaError> {
    let rebuild = "rebuild them with scripts/gpu-build.sh (or unset NRPT_CUDA_PTX_DIR to \
                   compile with NVRTC at run time)";
    if !dir.is_dir() {
        return Err(refused(format!(
            "{PTX_DIR_ENV}={} is not a folder; {rebuild}",
            dir.display()
        )));
    }
    let (ptx_file, manifest_file) = (ptx_path(dir, stem), manifest_path(dir, stem));
    let manifest = match std::fs::read_to_string(&manifest_file) {
        Ok(m) => m,
        Err(e) => {
            let have = available(dir);
            return Err(refused(format!(
                "no precompiled program {stem} in {} ({}: {e}); the folder holds {}; {rebuild}",
                dir.display(),
                manifest_file.display(),
                if have.is_empty() {
                    "none".to_string()
                } else {
                    have.join(", ")
                }
            )));
        }
    };
    let ptx = std::fs::read_to_string(&ptx_file).map_err(|e| {
        refused(format!(
            "{} (beside its manifest) cannot be read: {e}; {rebuild}",
            ptx_file.display()
        ))
    })?;
    let field = |key: &str| {
        manifest.lines().find_map(|l| {
            l.strip_prefix(key)
                .and_then(|rest| rest.strip_prefix(':'))
                .map(|v| v.trim().to_string())
        })
    };
    if manifest.lines().next() != Some(MAGIC) {
        return Err(refused(format!(
            "{} is not a manifest of this version of nrpt-cuda (first line {:?}, expected \
             {MAGIC:?}); {rebuild}",
            manifest_file.display(),
            manifest.lines().next().unwrap_or("")
        )));
    }
    let (Some(want_key), Some(want_ptx)) = (field("source+options sha256"), field("ptx sha256"))
    else {
        return Err(refused(format!(
            "{} lacks its hashes; {rebuild}",
            manifest_file.display()
        )));
    };
    let key = fingerprint(source, options);
    if key != want_key {
        let built_with = field("options").unwrap_or_default();
        let ours = options.join(" ");
        let what = if built_with != ours {
            format!("it was compiled with the options `{built_with}`, this binary uses `{ours}`")
        } else {
            "it was compiled from another kernel source than the one built into this binary \
             (kernels/ changed since)"
                .to_string()
        };
        return Err(refused(format!(
            "refusing stale PTX {}: {what} (sha256 of source+options: {}… in the manifest, \
             {}… here); {rebuild}",
            ptx_file.display(),
            &want_key[..want_key.len().min(12)],
            &key[..12]
        )));
    }
    let got = sha256_hex(ptx.as_bytes());
    if got != want_ptx {
        return Err(refused(format!(
            "refusing {}: its content changed after it was written (sha256 {}… now, {}… in \
             the manifest; {} bytes now); {rebuild}",
            ptx_file.display(),
            &got[..12],
            &want_ptx[..want_ptx.len().min(12)],
            ptx.len()
        )));
    }
    Ok(ptx)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("nrpt-ptx-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn opts(arch: &str) -> Vec<String> {
        vec![format!("--gpu-architecture={arch}"), "--fmad=false".into()]
    }

    const SRC: &str = "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }\n";
    const PTX: &str = "//\n.version 9.0\n.target sm_90\n.visible .entry k(\n)\n{\n ret;\n}\n";

    #[test]
    fn written_ptx_loads_back_unchanged() {
        let dir = temp_dir("roundtrip");
        write(
            &dir,
            "p.compute_90",
            SRC,
            &opts("compute_90"),
            PTX,
            "NVRTC 13.0",
        )
        .unwrap();
        let got = load(&dir, "p.compute_90", SRC, &opts("compute_90")).unwrap();
        assert_eq!(got, PTX);
        assert_eq!(available(&dir), vec!["p.compute_90".to_string()]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn stale_or_altered_or_missing_ptx_is_refused_with_the_reason() {
        let dir = temp_dir("stale");
        write(&dir, "p", SRC, &opts("compute_90"), PTX, "NVRTC 13.0").unwrap();
        // Another source.
        let e = load(
            &dir,
            "p",
            &format!("{SRC}// changed\n"),
            &opts("compute_90"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("refusing stale PTX"), "{e}");
        assert!(e.contains("another kernel source"), "{e}");
        assert!(e.contains("scripts/gpu-build.sh"), "{e}");
        // Other options (another architecture): both option lists are named.
        let e = load(&dir, "p", SRC, &opts("compute_80"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("refusing stale PTX"), "{e}");
        assert!(e.contains("--gpu-architecture=compute_90"), "{e}");
        assert!(e.contains("--gpu-architecture=compute_80"), "{e}");
        // The PTX altered after it was written.
        std::fs::write(dir.join("p.ptx"), format!("{PTX}// edited\n")).unwrap();
        let e = load(&dir, "p", SRC, &opts("compute_90"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("content changed"), "{e}");
        // A program that is not there: the error lists what is.
        let e = load(&dir, "q", SRC, &opts("compute_90"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no precompiled program q"), "{e}");
        assert!(e.contains("holds p"), "{e}");
        // A manifest of another format.
        std::fs::write(dir.join("p.ptx.manifest"), "something else\n").unwrap();
        let e = load(&dir, "p", SRC, &opts("compute_90"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a manifest"), "{e}");
        // No folder at all.
        let _ = std::fs::remove_dir_all(&dir);
        let e = load(&dir, "p", SRC, &opts("compute_90"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a folder"), "{e}");
    }

    #[test]
    fn fingerprints_separate_source_from_options() {
        let a = fingerprint("ab", &["c".to_string()]);
        assert_eq!(a.len(), 64);
        assert_ne!(a, fingerprint("a", &["bc".to_string()]));
        assert_ne!(a, fingerprint("abc", &[]));
        assert_eq!(a, fingerprint("ab", &["c".to_string()]));
    }
}

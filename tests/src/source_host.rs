//! The kernels' generic step for a target with its own CUDA source
//! (`nrpt_cuda::source`), compiled for the host: the target's code and
//! `kernels/source_step.cuh` built by the system's C++ compiler (`$CXX`, else `c++`)
//! under the kernels' floating-point contract (`-ffp-contract=off`), into a small
//! program that steps one replica per request on its standard input. Its code is the
//! text NVRTC compiles for the GPU ([`TargetSource::host_program`]); on the host the
//! library functions (exp, log) are the host's libm, which Rust calls too, so a source
//! written in the operation order of its Rust potential steps to the CPU engine's bits.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use nrpt_cuda::TargetSource;
use nrpt_cuda::host_math::StepInput;
use nrpt_cuda::params::GpuParams;

/// The request loop: the parameter block once (hex bytes), then per line a replica's
/// step input and state (hex bits); answers the energy and the new state.
const HARNESS: &str = r#"
#include <stdio.h>
#include <string.h>

int main() {
    NrptGpuParams p;
    unsigned char* bytes = (unsigned char*)&p;
    unsigned int size = 0;
    if (scanf("%u", &size) != 1 || size != sizeof(NrptGpuParams)) {
        fprintf(stderr, "parameter block of %u bytes, expected %u\n", size,
                (unsigned)sizeof(NrptGpuParams));
        return 2;
    }
    for (unsigned int i = 0; i < size; ++i) {
        unsigned int b;
        if (scanf("%2x", &b) != 1) return 2;
        bytes[i] = (unsigned char)b;
    }
    const nrpt_u32 d = p.core.dim;
    if (d == 0u || d > NRPT_SOURCE_MAX_DIM) return 2;
    float x[NRPT_SOURCE_MAX_DIM], v[NRPT_SOURCE_MAX_DIM];
    NrptChainCfg cfg = nrpt_chain_cfg(&p);
    for (;;) {
        unsigned int key, replica;
        unsigned long long k, eta_bits, temp_bits;
        if (scanf("%x %llx %x %llx %llx", &key, &k, &replica, &eta_bits, &temp_bits) != 5) break;
        for (nrpt_u32 j = 0; j < d; ++j) {
            unsigned int w;
            if (scanf("%x", &w) != 1) return 2;
            x[j] = nrpt_f32_from_bits(w);
        }
        for (nrpt_u32 j = 0; j < d; ++j) {
            unsigned int w;
            if (scanf("%x", &w) != 1) return 2;
            v[j] = nrpt_f32_from_bits(w);
        }
        double eta, temp;
        memcpy(&eta, &eta_bits, 8);
        memcpy(&temp, &temp_bits, 8);
        NrptLevelCoeffs l = nrpt_level_coeffs(&cfg, eta, temp);
        NrptStream s = nrpt_stream(p.core.seed, key, k, replica, NRPT_STREAM_STEP);
        float u = nrpt_chain_step_source(&cfg, &l, s, x, cfg.momentum ? v : x);
        printf("%x", nrpt_f32_to_bits(u));
        for (nrpt_u32 j = 0; j < d; ++j) printf(" %x", nrpt_f32_to_bits(x[j]));
        for (nrpt_u32 j = 0; j < d; ++j) printf(" %x", nrpt_f32_to_bits(v[j]));
        printf("\n");
        fflush(stdout);
    }
    return 0;
}
"#;

/// A running host build of a source target's step.
pub struct SourceHost {
    child: Child,
    input: BufWriter<ChildStdin>,
    output: BufReader<ChildStdout>,
    dim: usize,
    _dir: tempfile::TempDir,
}

impl SourceHost {
    /// Compiles `source`'s step for the host and starts it with the parameter block
    /// `params`. Errors name the compiler and its output.
    pub fn start(source: &TargetSource, params: &GpuParams) -> Result<SourceHost, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("a temporary folder: {e}"))?;
        let src = dir.path().join("source_step.cpp");
        let exe = dir.path().join("source_step");
        std::fs::write(&src, format!("{}\n{HARNESS}", source.host_program()))
            .map_err(|e| format!("writing {}: {e}", src.display()))?;
        let cxx = std::env::var_os("CXX").map_or_else(|| PathBuf::from("c++"), PathBuf::from);
        let out = Command::new(&cxx)
            .args([
                "-O2",
                "-ffp-contract=off",
                "-fno-fast-math",
                "-std=c++17",
                "-o",
            ])
            .arg(&exe)
            .arg(&src)
            .output()
            .map_err(|e| format!("running the C++ compiler {}: {e}", cxx.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} could not compile target {}'s source:\n{}",
                cxx.display(),
                source.name,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let mut child = Command::new(&exe)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting {}: {e}", exe.display()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("the step program's pipes".into());
        };
        let mut host = SourceHost {
            child,
            input: BufWriter::new(stdin),
            output: BufReader::new(stdout),
            dim: params.core.dim as usize,
            _dir: dir,
        };
        let bytes = bytemuck::bytes_of(params);
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        writeln!(host.input, "{} {hex}", bytes.len()).map_err(|e| e.to_string())?;
        Ok(host)
    }

    /// One replica's iteration: steps `x` (and `v`, empty without momentum) in place
    /// and returns its stochastic energy.
    ///
    /// Panics when the program fails (a test helper).
    pub fn step(&mut self, input: &StepInput, x: &mut [f32], v: &mut [f32]) -> f32 {
        let d = self.dim;
        assert_eq!(x.len(), d, "a state of D coordinates");
        let mut line = format!(
            "{:x} {:x} {:x} {:x} {:x}",
            input.ensemble_key,
            input.iteration,
            input.replica,
            input.eta.to_bits(),
            input.temperature.to_bits()
        );
        for value in x.iter() {
            line.push_str(&format!(" {:x}", value.to_bits()));
        }
        for j in 0..d {
            line.push_str(&format!(" {:x}", v.get(j).map_or(0, |v| v.to_bits())));
        }
        writeln!(self.input, "{line}").expect("the step program reads");
        self.input.flush().expect("the step program reads");
        let mut answer = String::new();
        self.output
            .read_line(&mut answer)
            .expect("the step program answers");
        let words: Vec<u32> = answer
            .split_whitespace()
            .map(|w| u32::from_str_radix(w, 16).expect("hex words"))
            .collect();
        assert_eq!(
            words.len(),
            1 + 2 * d,
            "the step program's answer: {answer:?}"
        );
        for (j, value) in x.iter_mut().enumerate() {
            *value = f32::from_bits(words[1 + j]);
        }
        for (j, value) in v.iter_mut().enumerate() {
            *value = f32::from_bits(words[1 + d + j]);
        }
        f32::from_bits(words[0])
    }
}

impl Drop for SourceHost {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

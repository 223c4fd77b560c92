//! Helpers shared by the integration tests: isolated git repositories and fake `nvidia-smi` scripts.
#![allow(dead_code)]
// Helpers outside #[test] functions panic on failure too; clippy.toml's test allowance covers only the tests.
#![allow(clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use provenance::gpu_monitor::{BackendChoice, GpuSelection, MonitorConfig};

/// Runs git in `dir` with no user or system configuration, so the test does not depend on (or touch) the
/// machine's: its own HOME, no system config, identity and branch name given on the command line.
pub fn git(home: &Path, dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.invalid",
            "-c",
            "init.defaultBranch=main",
        ])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args)
        .current_dir(dir)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", home.join("gitconfig"))
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Output of a git command, trimmed.
pub fn git_out(home: &Path, dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", home.join("gitconfig"))
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A repository with one commit of `a.txt` and `b.txt`, in `root/repo`; `root/home` is git's HOME.
pub fn repo(root: &Path) -> (PathBuf, PathBuf) {
    let home = root.join("home");
    let dir = root.join("repo");
    fs::create_dir_all(&home).expect("home");
    fs::create_dir_all(&dir).expect("repo dir");
    git(&home, &dir, &["init", "-q"]);
    fs::write(dir.join("a.txt"), "alpha\n").expect("write");
    fs::write(dir.join("b.txt"), "beta\n").expect("write");
    git(&home, &dir, &["add", "a.txt", "b.txt"]);
    git(&home, &dir, &["commit", "-q", "-m", "first"]);
    (home, dir)
}

/// One GPU reading line in the order gpu-monitor's nvidia-smi backend queries
/// (index, uuid, pstate, clocks.sm, clocks.mem, temperature.gpu, power.draw, utilization.gpu, memory.used,
/// clocks_throttle_reasons.active).
pub const BUSY_POWER_CAPPED: &str =
    "0, GPU-test-0000, P0, 1980, 2619, 61, 650.5, 97, 70123, 0x0000000000000004";
/// An idle GPU: low clocks, no utilisation, only the `gpu_idle` reason.
pub const IDLE: &str = "0, GPU-test-0000, P8, 345, 405, 38, 75.25, 0, 512, 0x0000000000000001";

/// Writes an executable fake `nvidia-smi` into `dir` that answers the three invocations gpu-monitor makes
/// (banner, identity query, reading query, the last also streamed with `-lms`) with `line` as every reading.
pub fn fake_nvidia_smi(dir: &Path, name: &str, line: &str) -> PathBuf {
    let script = format!(
        r#"#!/bin/sh
query=""; lms=""
for a in "$@"; do
  case "$a" in
    --query-gpu=*) query="${{a#--query-gpu=}}" ;;
    -lms=*) lms="${{a#-lms=}}" ;;
  esac
done
if [ $# -eq 0 ]; then
  echo "| NVIDIA-SMI 550.54.15      Driver Version: 550.54.15      CUDA Version: 12.4     |"
  exit 0
fi
case "$query" in
  index,uuid,name,*)
    echo "0, GPU-test-0000, NVIDIA H200, 00000000:19:00.0, 550.54.15, 96.00.99.00.01, 700.00, Enabled"
    exit 0 ;;
esac
if [ -z "$lms" ]; then
  echo "{line}"
  exit 0
fi
while :; do
  echo "{line}"
  sleep 0.05
done
"#
    );
    let path = dir.join(name);
    fs::write(&path, script).expect("write fake nvidia-smi");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    path
}

/// A monitor configuration that uses only the given `nvidia-smi` (never NVML, which a GPU machine would have),
/// on every GPU it lists, at 50 ms.
pub fn smi_config(nvidia_smi: PathBuf) -> MonitorConfig {
    MonitorConfig {
        interval_ms: 50,
        backend: BackendChoice::NvidiaSmi,
        gpus: GpuSelection::All,
        nvidia_smi: Some(nvidia_smi),
        read_processes: true,
        ..MonitorConfig::default()
    }
}

#[path = "../../../child-run/tests/support/signals.rs"]
mod signals;
// Not every test file that includes `common` uses these.
#[allow(unused_imports)]
pub use signals::{sigint_ignored, with_default_signals, with_sigint_ignored};

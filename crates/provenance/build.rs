//! Captures the toolchain this crate was compiled with, so a record can name it without running `rustc` at run
//! time (the machine that runs a benchmark often has no toolchain at all).

use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let version = Command::new(&rustc)
        .arg("-V")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    println!("cargo:rustc-env=PROVENANCE_RUSTC_VERSION={version}");
    for (name, var) in [
        ("PROVENANCE_TARGET", "TARGET"),
        ("PROVENANCE_PROFILE", "PROFILE"),
        ("PROVENANCE_OPT_LEVEL", "OPT_LEVEL"),
    ] {
        println!(
            "cargo:rustc-env={name}={}",
            std::env::var(var).unwrap_or_default()
        );
    }
    println!("cargo:rerun-if-env-changed=RUSTC");
    println!("cargo:rerun-if-changed=build.rs");
}

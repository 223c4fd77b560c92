//! Where the benchmark ran: bare metal, a VM, a container or WSL, and the signals that decided it.
//!
//! Each class changes what a number means: a VM's vCPUs share cores with other tenants, a container's load
//! average is the host's, WSL's GPU goes through the Windows driver. No single signal is reliable, so all of
//! them are kept in the record and the class is derived from them by a fixed precedence.

use serde::Serialize;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::cmd;

/// The kind of machine a run happened on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EnvClass {
    /// Windows Subsystem for Linux (a VM with the Windows GPU driver passed through).
    Wsl,
    /// A container (Docker, Podman, Kubernetes, LXC, …); it may itself be in a VM, see `indicated`.
    Container,
    /// A virtual machine.
    Vm,
    /// No sign of virtualisation where a sign would have shown.
    BareMetal,
    /// Nothing that could tell was readable.
    Unknown,
}

/// One observation and the class it points to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Signal {
    /// Where it was observed: a file, an environment variable, a command.
    pub source: String,
    /// What was seen there.
    pub observed: String,
    /// The class it points to; `bare_metal` for a check that could have shown virtualisation and did not.
    pub indicates: EnvClass,
}

/// The environment class with its evidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Environment {
    /// The most specific class indicated, by precedence WSL > container > VM > bare metal.
    pub class: EnvClass,
    /// Every class some signal pointed to, most specific first (a container in a VM lists both).
    pub indicated: Vec<EnvClass>,
    /// The signals, in the order they were read.
    pub signals: Vec<Signal>,
}

/// Raw observations, gathered from a filesystem root and the environment so that tests can fake them.
#[derive(Debug, Default, Clone)]
pub(crate) struct Observations {
    pub proc_version: Option<String>,
    pub wsl_env: Option<String>,
    pub dockerenv: bool,
    pub containerenv: bool,
    pub pid1_cgroup: Option<String>,
    pub container_env: Option<String>,
    pub kubernetes_env: bool,
    pub dmi_product: Option<String>,
    pub dmi_vendor: Option<String>,
    pub cpuinfo_flags: Option<String>,
    pub sys_hypervisor: Option<String>,
    pub detect_virt_container: Option<String>,
    pub detect_virt_vm: Option<String>,
}

/// Detects the environment of this process.
///
/// ```
/// let e = provenance::detect_environment();
/// assert!(e.indicated.contains(&e.class) || e.class == provenance::EnvClass::Unknown);
/// ```
pub fn detect_environment() -> Environment {
    classify(&observe(Path::new("/"), &|k| std::env::var(k).ok(), true))
}

pub(crate) fn observe(
    root: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    run_detect_virt: bool,
) -> Observations {
    let read = |p: &str| {
        fs::read_to_string(root.join(p))
            .ok()
            .map(|s| s.trim().to_owned())
    };
    let exists = |p: &str| root.join(p).exists();
    let cpuinfo_flags = read("proc/cpuinfo").and_then(|t| {
        t.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "flags").then(|| v.trim().to_owned())
        })
    });
    let detect = |arg: &str| -> Option<String> {
        if !run_detect_virt {
            return None;
        }
        let prog = cmd::which("systemd-detect-virt")?;
        let mut c = Command::new(prog);
        c.arg(arg);
        // It prints "none" and exits 1 when it finds nothing; both outcomes are answers.
        match cmd::run(c, Duration::from_secs(5)) {
            Ok(o) => Some(o.text()),
            Err(f) if f.code == Some(1) => Some("none".to_owned()),
            Err(_) => None,
        }
    };
    Observations {
        proc_version: read("proc/version"),
        wsl_env: env("WSL_DISTRO_NAME")
            .or_else(|| env("WSL_INTEROP").map(|_| "WSL_INTEROP set".to_owned())),
        dockerenv: exists(".dockerenv"),
        containerenv: exists("run/.containerenv"),
        pid1_cgroup: read("proc/1/cgroup"),
        container_env: env("container"),
        kubernetes_env: env("KUBERNETES_SERVICE_HOST").is_some(),
        dmi_product: read("sys/class/dmi/id/product_name"),
        dmi_vendor: read("sys/class/dmi/id/sys_vendor"),
        cpuinfo_flags,
        sys_hypervisor: read("sys/hypervisor/type").filter(|s| !s.is_empty()),
        detect_virt_container: detect("--container"),
        detect_virt_vm: detect("--vm"),
    }
}

const CGROUP_MARKERS: [&str; 7] = [
    "docker",
    "kubepods",
    "containerd",
    "libpod",
    "crio",
    "lxc",
    "garden",
];

/// DMI strings of common hypervisors and clouds (vendor or product).
const DMI_VM_MARKERS: [&str; 14] = [
    "kvm",
    "qemu",
    "virtualbox",
    "vmware",
    "virtual machine",
    "xen",
    "hvm domu",
    "google compute engine",
    "openstack",
    "bochs",
    "parallels",
    "bhyve",
    "cloud hypervisor",
    "firecracker",
];

pub(crate) fn classify(o: &Observations) -> Environment {
    let mut signals = Vec::new();
    let mut sig = |source: &str, observed: String, indicates: EnvClass| {
        signals.push(Signal {
            source: source.to_owned(),
            observed,
            indicates,
        });
    };

    if let Some(v) = &o.proc_version {
        let l = v.to_lowercase();
        if l.contains("microsoft") || l.contains("wsl") {
            sig("/proc/version", v.clone(), EnvClass::Wsl);
        }
    }
    if let Some(v) = &o.wsl_env {
        sig("env WSL_DISTRO_NAME/WSL_INTEROP", v.clone(), EnvClass::Wsl);
    }

    if o.dockerenv {
        sig("/.dockerenv", "exists".to_owned(), EnvClass::Container);
    }
    if o.containerenv {
        sig(
            "/run/.containerenv",
            "exists".to_owned(),
            EnvClass::Container,
        );
    }
    if let Some(cg) = &o.pid1_cgroup
        && let Some(line) = cg
            .lines()
            .find(|l| CGROUP_MARKERS.iter().any(|m| l.contains(m)))
    {
        sig("/proc/1/cgroup", line.to_owned(), EnvClass::Container);
    }
    if let Some(c) = &o.container_env {
        sig("env container", c.clone(), EnvClass::Container);
    }
    if o.kubernetes_env {
        sig(
            "env KUBERNETES_SERVICE_HOST",
            "set".to_owned(),
            EnvClass::Container,
        );
    }
    match o.detect_virt_container.as_deref() {
        Some("none") | None => {}
        Some(v) => sig(
            "systemd-detect-virt --container",
            v.to_owned(),
            EnvClass::Container,
        ),
    }

    // Virtualisation: positive signals, and the negative ones that allow "bare metal".
    let mut vm_checked = false;
    match o.detect_virt_vm.as_deref() {
        None => {}
        Some("none") => {
            vm_checked = true;
            sig(
                "systemd-detect-virt --vm",
                "none".to_owned(),
                EnvClass::BareMetal,
            );
        }
        Some(v) => sig("systemd-detect-virt --vm", v.to_owned(), EnvClass::Vm),
    }
    if let Some(flags) = &o.cpuinfo_flags {
        if flags.split_whitespace().any(|f| f == "hypervisor") {
            sig("/proc/cpuinfo flags", "hypervisor".to_owned(), EnvClass::Vm);
        } else {
            // x86 kernels set the flag under every hypervisor that announces itself; its absence is evidence.
            vm_checked = true;
            sig(
                "/proc/cpuinfo flags",
                "no hypervisor flag".to_owned(),
                EnvClass::BareMetal,
            );
        }
    }
    if let Some(h) = &o.sys_hypervisor {
        sig("/sys/hypervisor/type", h.clone(), EnvClass::Vm);
    }
    let dmi = [
        ("/sys/class/dmi/id/sys_vendor", &o.dmi_vendor),
        ("/sys/class/dmi/id/product_name", &o.dmi_product),
    ];
    let mut dmi_vm = false;
    for (source, value) in dmi {
        if let Some(v) = value {
            let l = v.to_lowercase();
            if DMI_VM_MARKERS.iter().any(|m| l.contains(m)) {
                dmi_vm = true;
                sig(source, v.clone(), EnvClass::Vm);
            }
        }
    }
    // EC2 names every instance "Amazon EC2"; only the `.metal` sizes are bare metal.
    if let (Some(vendor), Some(product)) = (&o.dmi_vendor, &o.dmi_product)
        && vendor.contains("Amazon EC2")
    {
        dmi_vm = true;
        let metal = product.ends_with(".metal");
        vm_checked |= metal;
        let class = if metal {
            EnvClass::BareMetal
        } else {
            EnvClass::Vm
        };
        sig(
            "/sys/class/dmi/id/product_name",
            format!("{vendor} {product}"),
            class,
        );
    }
    if !dmi_vm && (o.dmi_vendor.is_some() || o.dmi_product.is_some()) {
        vm_checked = true;
        let seen = [o.dmi_vendor.as_deref(), o.dmi_product.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>();
        sig("/sys/class/dmi/id", seen.join(" / "), EnvClass::BareMetal);
    }

    let mut indicated: Vec<EnvClass> = signals
        .iter()
        .map(|s| s.indicates)
        .filter(|c| *c != EnvClass::BareMetal)
        .collect();
    indicated.sort();
    indicated.dedup();
    let class = match indicated.first() {
        Some(c) => *c,
        None if vm_checked => EnvClass::BareMetal,
        None => EnvClass::Unknown,
    };
    if class == EnvClass::BareMetal {
        indicated.push(EnvClass::BareMetal);
    }
    Environment {
        class,
        indicated,
        signals,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_inside_a_vm_is_a_container_that_also_indicates_vm() {
        let o = Observations {
            dockerenv: true,
            cpuinfo_flags: Some("fpu vme hypervisor sse".to_owned()),
            detect_virt_container: Some("docker".to_owned()),
            detect_virt_vm: Some("kvm".to_owned()),
            ..Default::default()
        };
        let e = classify(&o);
        assert_eq!(e.class, EnvClass::Container);
        assert_eq!(e.indicated, vec![EnvClass::Container, EnvClass::Vm]);
        assert!(e.signals.iter().any(|s| s.source == "/.dockerenv"));
        assert!(
            e.signals
                .iter()
                .any(|s| s.source == "systemd-detect-virt --vm" && s.observed == "kvm")
        );
    }

    #[test]
    fn wsl_wins_over_everything() {
        let o = Observations {
            proc_version: Some("Linux version 5.15.153.1-microsoft-standard-WSL2".to_owned()),
            cpuinfo_flags: Some("fpu hypervisor".to_owned()),
            ..Default::default()
        };
        assert_eq!(classify(&o).class, EnvClass::Wsl);
    }

    #[test]
    fn bare_metal_needs_a_negative_check() {
        let o = Observations {
            cpuinfo_flags: Some("fpu vme sse avx512f".to_owned()),
            dmi_vendor: Some("Supermicro".to_owned()),
            ..Default::default()
        };
        let e = classify(&o);
        assert_eq!(e.class, EnvClass::BareMetal);
        assert_eq!(e.indicated, vec![EnvClass::BareMetal]);
        // Nothing readable at all: unknown, not bare metal.
        assert_eq!(classify(&Observations::default()).class, EnvClass::Unknown);
    }

    #[test]
    fn vm_from_dmi_and_ec2_metal_is_bare_metal() {
        let vm = Observations {
            dmi_product: Some("KVM".to_owned()),
            ..Default::default()
        };
        assert_eq!(classify(&vm).class, EnvClass::Vm);
        let metal = Observations {
            dmi_vendor: Some("Amazon EC2".to_owned()),
            dmi_product: Some("p5.metal".to_owned()),
            ..Default::default()
        };
        assert_eq!(classify(&metal).class, EnvClass::BareMetal);
        let ec2 = Observations {
            dmi_vendor: Some("Amazon EC2".to_owned()),
            dmi_product: Some("p5.48xlarge".to_owned()),
            ..Default::default()
        };
        assert_eq!(classify(&ec2).class, EnvClass::Vm);
    }

    #[test]
    fn observations_are_read_from_a_root() -> std::io::Result<()> {
        let d = tempfile::tempdir()?;
        let r = d.path();
        fs::create_dir_all(r.join("proc/1"))?;
        fs::write(r.join(".dockerenv"), "")?;
        fs::write(
            r.join("proc/1/cgroup"),
            "0::/system.slice/docker-abc.scope\n",
        )?;
        fs::write(r.join("proc/cpuinfo"), "processor : 0\nflags : fpu sse\n")?;
        fs::write(r.join("proc/version"), "Linux version 6.1.0 (gcc)\n")?;
        let o = observe(
            r,
            &|k| (k == "KUBERNETES_SERVICE_HOST").then(|| "10.0.0.1".to_owned()),
            false,
        );
        let e = classify(&o);
        assert_eq!(e.class, EnvClass::Container);
        let sources: Vec<&str> = e.signals.iter().map(|s| s.source.as_str()).collect();
        assert_eq!(
            sources,
            [
                "/.dockerenv",
                "/proc/1/cgroup",
                "env KUBERNETES_SERVICE_HOST",
                "/proc/cpuinfo flags"
            ]
        );
        Ok(())
    }
}

//! The machine: identity (CPU, OS, kernel, hostname) once, and load and CPU frequency before and after.

use serde::Serialize;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::Probe;
use crate::cmd;

/// What the machine is. Read once, at start.
#[derive(Debug, Clone, Serialize)]
pub struct HostInfo {
    /// The host name (`uname -n`); in a container, the container's.
    pub hostname: Probe<String>,
    /// The distribution's name (`PRETTY_NAME` of `/etc/os-release`), else the kernel's OS name.
    pub os: Probe<String>,
    /// The kernel release (`uname -r`).
    pub kernel: Probe<String>,
    /// The machine architecture (`uname -m`).
    pub arch: Probe<String>,
    /// The CPU model: `model name` of `/proc/cpuinfo`, or on Arm the core named from its implementer and part.
    pub cpu_model: Probe<String>,
    /// Logical CPUs online (the machine's, which is also what the load average counts against).
    pub cpu_count: Probe<usize>,
    /// Logical CPUs this process may run on (affinity and cgroup quota), when the standard library can tell.
    pub cpus_available: Probe<usize>,
}

/// Reads the host's identity.
///
/// ```
/// let h = provenance::host_info();
/// assert!(h.cpu_count.value().is_some_and(|&n| n >= 1));
/// ```
///
/// Linux files where they say more (`/etc/os-release`, `/proc/cpuinfo` on Arm), `uname` on Unix, and `sysinfo`
/// where neither answers (macOS's product name and CPU brand, Windows), so the record says what it can
/// anywhere.
pub fn host_info() -> HostInfo {
    let uts = uname();
    let os = os_release()
        .or_else(|r| sysinfo::System::long_os_version().map_err(|e| format!("{r}; sysinfo: {e}")))
        .or_else(|r| match &uts {
            Ok(u) => Ok(u.sysname.clone()),
            Err(_) => Err(r),
        });
    let from_uts =
        |f: fn(&Uname) -> String, other: fn() -> Result<String, String>| -> Probe<String> {
            match &uts {
                Ok(u) => Probe::Value(f(u)),
                Err(r) => other().map_err(|e| format!("{r}; sysinfo: {e}")).into(),
            }
        };
    HostInfo {
        hostname: from_uts(
            |u| u.nodename.clone(),
            || sysinfo::System::host_name().map_err(|e| e.to_string()),
        ),
        os: os.into(),
        kernel: from_uts(
            |u| u.release.clone(),
            || sysinfo::System::kernel_version().map_err(|e| e.to_string()),
        ),
        arch: from_uts(|u| u.machine.clone(), || Ok(sysinfo::System::cpu_arch())),
        cpu_model: cpu_model(Path::new("/proc/cpuinfo"))
            .or_else(|r| sysinfo_cpu_brand().map_err(|e| format!("{r}; sysinfo: {e}")))
            .into(),
        cpu_count: online_cpus().into(),
        cpus_available: std::thread::available_parallelism()
            .map(|n| n.get())
            .map_err(|e| format!("available_parallelism: {e}"))
            .into(),
    }
}

/// The CPU brand string as sysinfo reads it (`machdep.cpu.brand_string` on macOS, the registry on Windows).
fn sysinfo_cpu_brand() -> Result<String, String> {
    let kind = sysinfo::RefreshKind::nothing().with_cpu(sysinfo::CpuRefreshKind::nothing());
    let s = sysinfo::System::new_with_specifics(kind).map_err(|e| e.to_string())?;
    s.cpus()
        .first()
        .map(|c| c.brand().trim().to_owned())
        .filter(|b| !b.is_empty())
        .ok_or_else(|| "no CPU brand".to_owned())
}

struct Uname {
    sysname: String,
    nodename: String,
    release: String,
    machine: String,
}

#[cfg(unix)]
fn uname() -> Result<Uname, String> {
    // SAFETY: `utsname` is plain old data, so all-zero is a valid value, and `uname` only writes into it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable `utsname`.
    if unsafe { libc::uname(&mut u) } != 0 {
        return Err(format!("uname failed: {}", std::io::Error::last_os_error()));
    }
    fn field(f: &[libc::c_char]) -> String {
        // The fields are NUL-terminated within their arrays; reading stops at the first NUL or the end.
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
    Ok(Uname {
        sysname: field(&u.sysname),
        nodename: field(&u.nodename),
        release: field(&u.release),
        machine: field(&u.machine),
    })
}

#[cfg(not(unix))]
fn uname() -> Result<Uname, String> {
    Err("uname is not available on this OS".to_owned())
}

#[cfg(unix)]
fn online_cpus() -> Result<usize, String> {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| "sysconf(_SC_NPROCESSORS_ONLN) failed".to_owned())
}

#[cfg(not(unix))]
fn online_cpus() -> Result<usize, String> {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .map_err(|e| e.to_string())
}

fn os_release() -> Result<String, String> {
    let text =
        fs::read_to_string("/etc/os-release").map_err(|e| format!("/etc/os-release: {e}"))?;
    parse_os_release(&text).ok_or_else(|| "/etc/os-release has no PRETTY_NAME or NAME".to_owned())
}

fn parse_os_release(text: &str) -> Option<String> {
    let get = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .map(|v| v.trim().trim_matches('"').to_owned())
    };
    get("PRETTY_NAME")
        .or_else(|| get("NAME"))
        .filter(|s| !s.is_empty())
}

pub(crate) fn cpu_model(cpuinfo: &Path) -> Result<String, String> {
    let text = fs::read_to_string(cpuinfo).map_err(|e| format!("{}: {e}", cpuinfo.display()))?;
    parse_cpu_model(&text).ok_or_else(|| format!("{} names no CPU model", cpuinfo.display()))
}

fn cpuinfo_field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim())
    })
}

fn parse_cpu_model(text: &str) -> Option<String> {
    if let Some(m) = cpuinfo_field(text, "model name").filter(|m| !m.is_empty()) {
        return Some(m.to_owned());
    }
    // Arm kernels print no model name, only the implementer and part numbers; name the cores a GPU host is
    // likely to have (Grace is Neoverse V2) and fall back to the raw numbers.
    let implementer = cpuinfo_field(text, "CPU implementer")?;
    let part = cpuinfo_field(text, "CPU part")?;
    let known = match (implementer, part) {
        ("0x41", "0xd0c") => Some("Arm Neoverse-N1"),
        ("0x41", "0xd40") => Some("Arm Neoverse-V1"),
        ("0x41", "0xd49") => Some("Arm Neoverse-N2"),
        ("0x41", "0xd4f") => Some("Arm Neoverse-V2"),
        ("0x41", "0xd8e") => Some("Arm Neoverse-N3"),
        ("0x41", "0xd84") => Some("Arm Neoverse-V3"),
        _ => None,
    };
    Some(match known {
        Some(name) => name.to_owned(),
        None => format!("CPU implementer {implementer} part {part}"),
    })
}

/// The kernel's load averages (runnable plus uninterruptible tasks, exponentially averaged).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LoadAvg {
    /// Over about one minute.
    #[serde(rename = "1m")]
    pub one: f64,
    /// Over about five minutes.
    #[serde(rename = "5m")]
    pub five: f64,
    /// Over about fifteen minutes.
    #[serde(rename = "15m")]
    pub fifteen: f64,
    /// Tasks runnable at the instant of reading (Linux's `/proc/loadavg` only).
    pub runnable_now: Option<u32>,
}

/// Reads `/proc/loadavg`, else asks sysinfo (macOS, the BSDs). On WSL it sees only the Linux VM, not Windows
/// programs. Windows has no load average: unavailable there.
///
/// ```
/// if let Some(l) = provenance::loadavg().value() {
///     assert!(l.one >= 0.0);
/// }
/// ```
pub fn loadavg() -> Probe<LoadAvg> {
    match loadavg_from(Path::new("/proc/loadavg")) {
        Probe::Value(l) => Probe::Value(l),
        Probe::Unavailable(why) if cfg!(any(target_os = "linux", windows)) => {
            Probe::Unavailable(why)
        }
        Probe::Unavailable(why) => match sysinfo::System::load_average() {
            Ok(l)
                if [l.one, l.five, l.fifteen]
                    .iter()
                    .all(|v| v.is_finite() && *v >= 0.0) =>
            {
                Probe::Value(LoadAvg {
                    one: l.one,
                    five: l.five,
                    fifteen: l.fifteen,
                    runnable_now: None,
                })
            }
            Ok(_) => Probe::unavailable(format!("{why}; sysinfo: not a load average")),
            Err(e) => Probe::unavailable(format!("{why}; sysinfo: {e}")),
        },
    }
}

pub(crate) fn loadavg_from(path: &Path) -> Probe<LoadAvg> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return Probe::unavailable(format!("{}: {e}", path.display())),
    };
    parse_loadavg(&text)
        .ok_or_else(|| format!("{}: unexpected content {:?}", path.display(), text.trim()))
        .into()
}

fn parse_loadavg(text: &str) -> Option<LoadAvg> {
    let mut it = text.split_whitespace();
    // `str::parse::<f64>` accepts "nan" and "inf"; a record must not.
    let mut num = || {
        it.next()?
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    let (one, five, fifteen) = (num()?, num()?, num()?);
    let runnable_now = text
        .split_whitespace()
        .nth(3)?
        .split_once('/')?
        .0
        .parse()
        .ok()?;
    Some(LoadAvg {
        one,
        five,
        fifteen,
        runnable_now: Some(runnable_now),
    })
}

/// CPU clock over the logical CPUs at one instant, in MHz.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuFreq {
    /// Lowest.
    pub min_mhz: f64,
    /// Mean.
    pub mean_mhz: f64,
    /// Highest.
    pub max_mhz: f64,
    /// CPUs read.
    pub cpus: usize,
    /// Where the numbers came from: `cpufreq` (the governor's current frequency) or `cpuinfo` (`cpu MHz`, which
    /// on many VMs is the nominal clock and never moves).
    pub source: String,
}

/// Reads the CPU frequency from cpufreq in sysfs, else from `/proc/cpuinfo`.
///
/// ```
/// if let Some(f) = provenance::cpu_freq().value() {
///     assert!(f.min_mhz <= f.mean_mhz && f.mean_mhz <= f.max_mhz);
/// }
/// ```
pub fn cpu_freq() -> Probe<CpuFreq> {
    cpu_freq_from(
        Path::new("/sys/devices/system/cpu"),
        Path::new("/proc/cpuinfo"),
    )
}

pub(crate) fn cpu_freq_from(sys_cpu: &Path, cpuinfo: &Path) -> Probe<CpuFreq> {
    let mut khz = Vec::new();
    if let Ok(dir) = fs::read_dir(sys_cpu) {
        for entry in dir.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !name
                .strip_prefix("cpu")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            {
                continue;
            }
            let f = entry.path().join("cpufreq/scaling_cur_freq");
            if let Some(v) = fs::read_to_string(f)
                .ok()
                .and_then(|t| t.trim().parse::<f64>().ok())
            {
                khz.push(v / 1000.0);
            }
        }
    }
    if let Some(f) = stats(&khz, "cpufreq") {
        return Probe::Value(f);
    }
    let text = match fs::read_to_string(cpuinfo) {
        Ok(t) => t,
        Err(e) => {
            return Probe::unavailable(format!(
                "no cpufreq under {} and {}: {e}",
                sys_cpu.display(),
                cpuinfo.display()
            ));
        }
    };
    let mhz: Vec<f64> = text
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "cpu MHz")
                .then(|| v.trim().parse::<f64>().ok())
                .flatten()
        })
        .collect();
    stats(&mhz, "cpuinfo")
        .ok_or_else(|| {
            format!(
                "no cpufreq under {} and no `cpu MHz` in {}",
                sys_cpu.display(),
                cpuinfo.display()
            )
        })
        .into()
}

fn stats(mhz: &[f64], source: &str) -> Option<CpuFreq> {
    let v: Vec<f64> = mhz
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    if v.is_empty() {
        return None;
    }
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    Some(CpuFreq {
        // All three to 0.1 MHz: a mean rounded alone could land above an unrounded max (2596.05 → 2596.1).
        min_mhz: round1(min),
        mean_mhz: round1(mean),
        max_mhz: round1(max),
        cpus: v.len(),
        source: source.to_owned(),
    })
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// Windows' CPU load in percent, read through `powershell.exe` from inside WSL.
///
/// WSL's load average sees only the Linux VM; Windows programs competing for the cores show up only here. The
/// read costs about two seconds of CPU, so it is taken before and after the timed region, never during it.
///
/// ```
/// assert!(provenance::windows_cpu_percent(false).reason().is_some()); // not WSL: not read
/// ```
pub fn windows_cpu_percent(is_wsl: bool) -> Probe<f64> {
    if !is_wsl {
        return Probe::unavailable("not WSL");
    }
    let Some(ps) = cmd::which("powershell.exe") else {
        return Probe::unavailable("powershell.exe not on PATH (WSL interop disabled?)");
    };
    let mut c = Command::new(ps);
    c.args([
        "-NoProfile",
        "-NonInteractive",
        "-Command",
        "(Get-CimInstance Win32_Processor | Measure-Object -Property LoadPercentage -Average).Average",
    ]);
    match cmd::run(c, Duration::from_secs(20)) {
        Ok(o) => {
            let t = o.text();
            t.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| format!("powershell.exe printed {t:?}, not a number"))
                .into()
        }
        Err(f) => Probe::unavailable(f.reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loadavg_parses_and_refuses_nan() {
        let l = parse_loadavg("0.50 1.25 2.00 3/91 4704\n");
        assert_eq!(
            l,
            Some(LoadAvg {
                one: 0.5,
                five: 1.25,
                fifteen: 2.0,
                runnable_now: Some(3)
            })
        );
        assert_eq!(parse_loadavg("nan 1 1 1/1 1"), None);
        assert_eq!(parse_loadavg("garbage"), None);
    }

    #[test]
    fn cpu_model_from_x86_and_arm() {
        assert_eq!(
            parse_cpu_model("processor\t: 0\nmodel name\t: AMD EPYC 9654\n").as_deref(),
            Some("AMD EPYC 9654")
        );
        let grace =
            "processor\t: 0\nBogoMIPS\t: 2000.00\nCPU implementer\t: 0x41\nCPU part\t: 0xd4f\n";
        assert_eq!(parse_cpu_model(grace).as_deref(), Some("Arm Neoverse-V2"));
        let other = "CPU implementer\t: 0x61\nCPU part\t: 0x022\n";
        assert_eq!(
            parse_cpu_model(other).as_deref(),
            Some("CPU implementer 0x61 part 0x022")
        );
        assert_eq!(parse_cpu_model("processor : 0\n"), None);
    }

    #[test]
    fn os_release_prefers_pretty_name() {
        let t = "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n";
        assert_eq!(
            parse_os_release(t).as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        assert_eq!(parse_os_release("NAME=Alpine\n").as_deref(), Some("Alpine"));
    }

    #[test]
    fn cpu_freq_prefers_cpufreq_then_cpuinfo() -> std::io::Result<()> {
        let d = tempfile::tempdir()?;
        let sys = d.path().join("cpu");
        for (cpu, khz) in [("cpu0", "1000000"), ("cpu1", "3000000")] {
            fs::create_dir_all(sys.join(cpu).join("cpufreq"))?;
            fs::write(sys.join(cpu).join("cpufreq/scaling_cur_freq"), khz)?;
        }
        fs::create_dir_all(sys.join("cpufreq"))?; // not a CPU: must be skipped
        let info = d.path().join("cpuinfo");
        fs::write(&info, "cpu MHz\t\t: 2596.1\ncpu MHz\t\t: 2600.0\n")?;
        let f = cpu_freq_from(&sys, &info).into_value().expect("cpufreq");
        assert_eq!(
            (f.min_mhz, f.mean_mhz, f.max_mhz, f.cpus),
            (1000.0, 2000.0, 3000.0, 2)
        );
        assert_eq!(f.source, "cpufreq");
        let f = cpu_freq_from(&d.path().join("none"), &info)
            .into_value()
            .expect("cpuinfo");
        assert_eq!(
            (f.min_mhz, f.max_mhz, f.source.as_str()),
            (2596.1, 2600.0, "cpuinfo")
        );
        let p = cpu_freq_from(&d.path().join("none"), &d.path().join("none"));
        assert!(p.reason().is_some_and(|r| r.contains("no cpufreq")));
        Ok(())
    }

    #[test]
    fn windows_load_is_not_read_outside_wsl() {
        assert_eq!(windows_cpu_percent(false).reason(), Some("not WSL"));
    }

    #[test]
    fn cpu_freq_mean_never_exceeds_its_max() {
        // 2596.05 rounds to 2596.1 (ties away from zero in f64: 25960.5 → 25961); min and max must round too.
        let f = stats(&[2596.05, 2596.05], "cpuinfo").expect("values");
        assert!(f.min_mhz <= f.mean_mhz && f.mean_mhz <= f.max_mhz, "{f:?}");
    }
}

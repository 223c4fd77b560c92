//! The clock-event ("throttle") reason mask, as NVML and `nvidia-smi` report it.

/// Every bit NVML defines for `nvmlDeviceGetCurrentClocksEventReasons` (formerly `…ThrottleReasons`), in bit
/// order, with the names the seed tool used. `nvidia-smi`'s `clocks_throttle_reasons.active` prints the same mask.
pub const THROTTLE_BITS: [(u64, &str); 9] = [
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
];

/// The union of the known bits; anything outside it is reported, not dropped.
pub const KNOWN_MASK: u64 = 0x1ff;

/// Names of the reasons set in `mask`, in bit order; bits NVML did not define when this was written come last
/// as one `unknown_0x…` entry (lower-case hex of the unknown bits only), so a newer driver's reason is visible
/// rather than silently lost.
pub fn decode_throttle(mask: u64) -> Vec<String> {
    let mut names: Vec<String> = THROTTLE_BITS
        .iter()
        .filter(|(bit, _)| mask & bit != 0)
        .map(|(_, name)| (*name).to_owned())
        .collect();
    let unknown = mask & !KNOWN_MASK;
    if unknown != 0 {
        names.push(format!("unknown_0x{unknown:x}"));
    }
    names
}

/// Parses the mask as `nvidia-smi` prints it (`0x0000000000000004`), also accepting it without the prefix.
pub fn parse_mask(text: &str) -> Option<u64> {
    let t = text.trim();
    let hex = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    if hex.is_empty() {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bit_decodes_to_its_own_name() {
        for (bit, name) in THROTTLE_BITS {
            assert_eq!(decode_throttle(bit), vec![name.to_owned()], "bit 0x{bit:x}");
        }
        assert_eq!(THROTTLE_BITS.iter().fold(0, |m, (b, _)| m | b), KNOWN_MASK);
    }

    #[test]
    fn unknown_bits_are_named_not_dropped() {
        assert_eq!(
            decode_throttle(0x4 | 0x200 | 0x1000),
            vec!["sw_power_cap", "unknown_0x1200"]
        );
        assert_eq!(decode_throttle(0), Vec::<String>::new());
        assert_eq!(decode_throttle(u64::MAX).len(), 10);
    }

    #[test]
    fn parses_nvidia_smi_hex() {
        assert_eq!(parse_mask("0x0000000000000004"), Some(4));
        assert_eq!(parse_mask(" 0x100 "), Some(0x100));
        assert_eq!(parse_mask("1ff"), Some(0x1ff));
        assert_eq!(parse_mask("0x"), None);
        assert_eq!(parse_mask("[N/A]"), None);
    }
}

//! The GPU table: the built-in figures and labels, worked by hand from `specs/gpus.toml`; tables that must be
//! rejected, each with an error that names the field at fault.
#![allow(clippy::expect_used)] // test helpers outside #[test] functions

use model_shapes::{BUILTIN_GPUS_TOML, BandwidthLabel, GpuTable};

#[test]
fn gpu_table_figures_and_labels() {
    let table = GpuTable::builtin();
    let gb10 = table.get("GB10").expect("listed");
    assert_eq!(gb10.spec_bandwidth_gbps, 273.0);
    let ds4 = gb10.read_bandwidth("ds4-read").expect("listed");
    assert_eq!(
        (ds4.label, ds4.low_gbps, ds4.high_gbps),
        (BandwidthLabel::Measured, 231.0, 234.0)
    );
    let claim = gb10.read_bandwidth("seed-source-read").expect("listed");
    assert_eq!(
        (claim.label, claim.low_gbps, claim.high_gbps),
        (BandwidthLabel::Claim, 240.0, 240.0)
    );
    for (name, gbps) in [
        ("H100 SXM", 3350.0),
        ("H200", 4800.0),
        ("B200", 8000.0),
        ("RTX 5090", 1792.0),
    ] {
        assert_eq!(
            table.get(name).map(|g| g.spec_bandwidth_gbps),
            Some(gbps),
            "{name}"
        );
    }
}

#[test]
fn a_device_is_refused_not_read() {
    // /dev/zero would grow without bound if read; it is refused as not a regular file.
    let e = GpuTable::from_file(std::path::Path::new("/dev/zero")).expect_err("a device");
    assert!(e.to_string().contains("/dev/zero"), "{e}");
}

fn gpu_field(text: &str) -> String {
    match GpuTable::from_toml_str(text, "test table") {
        Ok(_) => panic!("accepted a bad GPU table"),
        Err(e) => e
            .field()
            .unwrap_or_else(|| panic!("no field in {e}"))
            .to_string(),
    }
}

#[test]
fn bad_gpu_tables() {
    let base = BUILTIN_GPUS_TOML;
    assert!(GpuTable::from_toml_str(base, "test table").is_ok());
    assert_eq!(
        gpu_field(&base.replace("low_gbps = 231.0", "low_gbps = 236.0")),
        "gpu[GB10].read_bandwidth[0].high_gbps",
        "low above high"
    );
    assert_eq!(
        gpu_field(&base.replace("low_gbps = 218.0", "low_gbps = -218.0")),
        "gpu[GB10].read_bandwidth[1].low_gbps"
    );
    assert_eq!(
        gpu_field(&base.replace("value = 273.0", "value = 0.0")),
        "gpu[GB10].spec_bandwidth_gbps"
    );
    assert_eq!(
        gpu_field(&base.replace("id = \"guide-copy\"", "id = \"ds4-read\"")),
        "gpu[GB10].read_bandwidth[1].id"
    );
    assert_eq!(
        gpu_field(&base.replace("source = \"ds4-773\"", "source = \"ds4-999\"")),
        "gpu[GB10].read_bandwidth[0]"
    );
    assert_eq!(
        gpu_field(&base.replace("name = \"H200\"", "name = \"GB10\"")),
        "gpu[GB10].name"
    );
    // A label other than MEASURED or CLAIM.
    let e = GpuTable::from_toml_str(
        &base.replacen("label = \"CLAIM\"", "label = \"GUESS\"", 1),
        "t",
    )
    .expect_err("unknown label");
    assert_eq!(e.field(), Some("gpu[GB10].read_bandwidth[3].label"), "{e}");
    assert!(e.to_string().contains("GUESS"), "{e}");
    assert_eq!(
        gpu_field(&base.replacen("note = ", "nota = ", 1)),
        "gpu[GB10].read_bandwidth[0].nota"
    );
    assert_eq!(gpu_field("[references]\n"), "gpu");
}

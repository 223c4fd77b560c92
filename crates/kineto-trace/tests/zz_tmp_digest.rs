// THROWAWAY (not committed): digests of the Chrome reader's results over variant files.
use kineto_trace::{Options, Parsed, Result, parse_file, parse_raw};
use std::path::PathBuf;

fn describe(r: &Result<Parsed>) -> String {
    match r {
        Ok(p) => {
            use sha2::Digest;
            let s = format!(
                "ok {:?} {} {} {:?}\n{:?}",
                p.sha256, p.gzip, p.json_bytes, p.trace.header, p.trace
            );
            let d = sha2::Sha256::digest(s.as_bytes());
            format!("ok {}", kineto_trace::hex(&d))
        }
        Err(e) => format!("error {e}"),
    }
}

#[test]
#[ignore]
fn digest_variants() {
    let dir = PathBuf::from(std::env::var("VAR_DIR").unwrap());
    let out = std::env::var("DIGEST_OUT").unwrap();
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let mut lines = String::new();
    for p in &names {
        for salvage in [false, true] {
            let opts = Options {
                salvage,
                ..Options::default()
            };
            let r = parse_file(p, &opts);
            lines += &format!("{} file {salvage} {}\n", p.display(), describe(&r));
            let raw = parse_raw(p, std::fs::File::open(p).unwrap(), &opts);
            lines += &format!("{} raw {salvage} {}\n", p.display(), describe(&raw));
        }
    }
    std::fs::write(out, lines).unwrap();
}

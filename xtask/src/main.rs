//! Project chores, run as `cargo xtask <task>`.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(task) = args.first() else {
        eprintln!("usage: cargo xtask <task>; tasks: (none yet)");
        std::process::exit(2);
    };
    eprintln!("unknown task {task}");
    std::process::exit(2);
}

//! Which processes are "ours": this process and everything it started, for telling our GPU contexts from others'.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// Parent pid of every visible process, from `/proc/<pid>/stat`.
fn parents(proc_root: &Path) -> BTreeMap<u32, u32> {
    child_run::proc_pids(proc_root)
        .into_iter()
        .filter_map(|(pid, dir)| {
            let ppid = parse_ppid(&fs::read_to_string(dir.join("stat")).ok()?)?;
            Some((pid, ppid))
        })
        .collect()
}

/// `pid (comm) state ppid …` ([`child_run::proc_stat_fields`]: comm may hold spaces and parentheses).
fn parse_ppid(stat: &str) -> Option<u32> {
    child_run::proc_stat_fields(stat)?.1.nth(1)?.parse().ok()
}

/// `roots` and all their visible descendants.
pub(crate) fn tree_of(roots: &BTreeSet<u32>, proc_root: &Path) -> BTreeSet<u32> {
    let parents = parents(proc_root);
    let mut ours = roots.clone();
    // Repeated passes rather than a child index: process tables are small, and this stays obviously right.
    loop {
        let before = ours.len();
        for (pid, ppid) in &parents {
            if ours.contains(ppid) {
                ours.insert(*pid);
            }
        }
        if ours.len() == before {
            return ours;
        }
    }
}

/// Whether `pid` is visible in this pid namespace.
pub(crate) fn visible(pid: u32, proc_root: &Path) -> bool {
    proc_root.join(pid.to_string()).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ppid_survives_odd_command_names() {
        assert_eq!(parse_ppid("42 (my (odd) prog) S 7 42 42 0"), Some(7));
        assert_eq!(parse_ppid("garbage"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_child_is_in_our_tree() -> std::io::Result<()> {
        let mut child = std::process::Command::new("sleep").arg("30").spawn()?;
        let me = BTreeSet::from([std::process::id()]);
        let tree = tree_of(&me, Path::new("/proc"));
        let found = tree.contains(&child.id());
        child.kill()?;
        child.wait()?;
        assert!(found, "child {} not in {tree:?}", child.id());
        assert!(!tree.contains(&1) || std::process::id() == 1);
        Ok(())
    }
}

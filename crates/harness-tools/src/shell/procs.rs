//! The command's processes: its group, the descendants that left it, and the guard that
//! kills them all when a call ends early.
//!
//! [`kill_tree`] stops (`SIGSTOP`) the group, then walks `/proc`: the members of the group
//! and, by parent link, all their descendants, in whatever group or session. Each process
//! found is stopped before the next walk, so a child it forked in the meantime hangs from
//! a stopped parent and the next walk finds it; when a walk finds nothing new (at most
//! [`ROUNDS`] walks) the group and everything found get `SIGKILL`. An orphan that left the
//! group before the walk is out of reach: its parent link now points at init or a
//! subreaper. `shell_tool`'s documentation says what this means for a command, and why the
//! host is not made a subreaper.

use std::collections::{BTreeSet, HashMap};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// At most this many walks of `/proc` before the final kill.
pub(super) const ROUNDS: usize = 8;

/// A process as `/proc/<pid>/stat` describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stat {
    pub(super) pid: i32,
    pub(super) ppid: i32,
    pub(super) pgrp: i32,
}

/// Parses `/proc/<pid>/stat`: `pid (comm) state ppid pgrp ...`. The command name may hold
/// spaces and parentheses, so the fields are read after the last `)`.
pub(super) fn parse_stat(stat: &str) -> Option<Stat> {
    let name_start = stat.find('(')?;
    let name_end = stat.rfind(')')?;
    let pid = stat.get(..name_start)?.trim().parse().ok()?;
    let mut fields = stat.get(name_end + 1..)?.split_whitespace();
    let _state = fields.next()?;
    let parent = fields.next()?.parse().ok()?;
    let group = fields.next()?.parse().ok()?;
    Some(Stat {
        pid,
        ppid: parent,
        pgrp: group,
    })
}

/// Every process `/proc` lists now; one that exits while it is read is skipped.
fn processes() -> Vec<Stat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| {
            let entry = entry.ok()?;
            entry.file_name().to_str()?.parse::<u32>().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            parse_stat(&stat)
        })
        .collect()
}

/// The members of `group` and all their descendants, plus all descendants of `known`.
pub(super) fn tree(processes: &[Stat], group: i32, known: &BTreeSet<i32>) -> BTreeSet<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for process in processes {
        children.entry(process.ppid).or_default().push(process.pid);
    }
    let mut found: BTreeSet<i32> = known.clone();
    found.extend(
        processes
            .iter()
            .filter(|process| process.pgrp == group)
            .map(|process| process.pid),
    );
    let mut stack: Vec<i32> = found.iter().copied().collect();
    while let Some(pid) = stack.pop() {
        for &child in children.get(&pid).map_or(&[][..], Vec::as_slice) {
            if found.insert(child) {
                stack.push(child);
            }
        }
    }
    found
}

/// Kills the process group `group` and every descendant of its members, as the module
/// documentation describes. Never signals this process, its parent, or init.
pub(super) fn kill_tree(group: Pid) {
    let spared = [
        0,
        1,
        std::process::id().try_into().unwrap_or(0),
        nix::unistd::getppid().as_raw(),
    ];
    let mut found = BTreeSet::new();
    let _ = killpg(group, Signal::SIGSTOP);
    for _ in 0..ROUNDS {
        let now = tree(&processes(), group.as_raw(), &found);
        let fresh: Vec<i32> = now
            .difference(&found)
            .copied()
            .filter(|pid| !spared.contains(pid))
            .collect();
        if fresh.is_empty() {
            break;
        }
        for &pid in &fresh {
            let _ = kill(Pid::from_raw(pid), Signal::SIGSTOP);
        }
        found.extend(fresh);
    }
    let _ = killpg(group, Signal::SIGKILL);
    for &pid in &found {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

/// The running command. Dropped before [`Running::finished`] (the call's future dropped,
/// a timeout, the output held open), it kills the command's process tree with
/// [`kill_tree`]; the `Child`, spawned with `kill_on_drop`, is then reaped by the runtime.
pub(super) struct Running {
    pub(super) child: tokio::process::Child,
    group: Option<Pid>,
    armed: bool,
}

impl Running {
    pub(super) fn new(child: tokio::process::Child) -> Self {
        let group = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw);
        Self {
            child,
            group,
            armed: true,
        }
    }

    /// Kills the command's process tree now.
    pub(super) fn kill(&mut self) {
        if self.armed {
            self.armed = false;
            if let Some(group) = self.group {
                kill_tree(group);
            }
            let _ = self.child.start_kill();
        }
    }

    /// The command ended by itself and its output closed: nothing to kill on drop.
    pub(super) fn finished(&mut self) {
        self.armed = false;
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::{Stat, parse_stat, tree};

    #[test]
    fn a_stat_line_is_read_after_the_last_parenthesis() {
        assert_eq!(
            parse_stat("42 (sleep) S 7 40 40 0 -1 4194304 100"),
            Some(Stat {
                pid: 42,
                ppid: 7,
                pgrp: 40
            })
        );
        assert_eq!(
            parse_stat("43 (a) b (c) R) Z 1 43 43"),
            Some(Stat {
                pid: 43,
                ppid: 1,
                pgrp: 43
            })
        );
        assert_eq!(parse_stat("44 (x"), None);
        assert_eq!(parse_stat(""), None);
    }

    #[test]
    fn the_tree_is_the_group_and_its_descendants_in_any_group() {
        let stat = |pid, ppid, pgrp| Stat { pid, ppid, pgrp };
        let processes = [
            stat(1, 0, 1),
            stat(10, 5, 10),  // sh, the group leader
            stat(11, 10, 10), // a background job
            stat(12, 11, 12), // its child, moved to a group of its own
            stat(13, 12, 13), // and a grandchild there, in a new session
            stat(20, 1, 10),  // a job whose parent exited, still in the group
            stat(21, 20, 21), // its escaped child
            stat(30, 1, 30),  // an orphan that left the group: not reached
            stat(31, 30, 30), // nor its child
            stat(40, 5, 40),  // a sibling of sh: not reached
        ];
        let found = tree(&processes, 10, &BTreeSet::new());
        assert_eq!(found, BTreeSet::from([10, 11, 12, 13, 20, 21]));
        // What an earlier walk found stays, and its new children are found.
        let later = [stat(13, 1, 13), stat(14, 13, 13)];
        assert_eq!(tree(&later, 10, &found).len(), 7);
        assert!(tree(&later, 10, &found).contains(&14));
    }
}

//! One cgroup per call, made under the cgroup lwirc itself runs in, for the `pids` and
//! `memory` controllers (cgroup v1, where each has its own hierarchy, or v2).
//!
//! Under lwirc's own cgroup, so that whatever bounds lwirc (a container, a service) bounds
//! its sandboxes too. Its processes join it between `fork` and `exec` of bubblewrap, so
//! bubblewrap and everything it starts are members from their first instruction. The
//! counters the kernel keeps there (`pids.events` `max`, the memory OOM kills) tell the
//! report which limit was reached; the group is removed when the call ends.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::sys;

/// The prefix of every cgroup the sandbox makes: `lwir-sandbox-<pid namespace>-<pid>-<n>`,
/// with the pid namespace and the pid of the lwirc that made it.
const PREFIX: &str = "lwir-sandbox-";

/// `<pid namespace>-<pid>` of this process, for the names of its cgroups: whose they are,
/// whether they are stale.
fn owner() -> &'static str {
    static OWNER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    OWNER.get_or_init(|| format!("{}-{}", pid_namespace(), std::process::id()))
}

/// The inode number of this process's pid namespace (0 if it cannot be read).
fn pid_namespace() -> u64 {
    fs::read_link("/proc/self/ns/pid")
        .ok()
        .and_then(|link| {
            let link = link.to_string_lossy().into_owned();
            link.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()
        })
        .unwrap_or(0)
}

/// A cgroup hierarchy's version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Version {
    /// cgroup v1: one hierarchy per controller.
    V1,
    /// cgroup v2: one unified hierarchy.
    V2,
}

/// Where the per-call cgroups of one controller are made: the directory of lwirc's own
/// cgroup in the hierarchy that has the controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    pub(crate) version: Version,
    pub(crate) parent: PathBuf,
}

/// Finds where per-call cgroups with `controller` (`pids`, `memory`) can be made, or says
/// why there is no such place.
pub(crate) fn place(controller: &str) -> Result<Place, String> {
    let own = fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
    let mounts = fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    let found = v1_place(controller, &own, &mounts).or_else(|| v2_place(controller, &own, &mounts));
    let Some(place) = found else {
        return Err(format!(
            "no cgroup hierarchy here has the `{controller}` controller"
        ));
    };
    if place.version == Version::V2 {
        let delegated =
            fs::read_to_string(place.parent.join("cgroup.subtree_control")).unwrap_or_default();
        if !delegated.split_whitespace().any(|c| c == controller) {
            return Err(format!(
                "lwirc's cgroup `{}` does not delegate `{controller}` to the cgroups below \
                 it (its cgroup.subtree_control)",
                place.parent.display()
            ));
        }
    }
    // Made and removed once, to know that it can be done here.
    let probe = place.parent.join(format!("{PREFIX}{}-probe", owner()));
    fs::create_dir(&probe)
        .map_err(|e| format!("cannot make a cgroup in `{}`: {e}", place.parent.display()))?;
    let _ = fs::remove_dir(&probe);
    remove_stale(&place.parent);
    Ok(place)
}

/// The v1 hierarchy mounted with `controller`, and lwirc's cgroup in it.
fn v1_place(controller: &str, own: &str, mounts: &str) -> Option<Place> {
    let path = own.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_id, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        controllers
            .split(',')
            .any(|c| c == controller)
            .then_some(path)
    })?;
    let (root, mount_point) = mount_of(mounts, |fstype, options| {
        fstype == "cgroup" && options.split(',').any(|o| o == controller)
    })?;
    Some(Place {
        version: Version::V1,
        parent: join_cgroup(&mount_point, &root, path)?,
    })
}

/// The v2 hierarchy and lwirc's cgroup in it, when the hierarchy has `controller`.
fn v2_place(controller: &str, own: &str, mounts: &str) -> Option<Place> {
    let path = own.lines().find_map(|line| line.strip_prefix("0::"))?;
    let (root, mount_point) = mount_of(mounts, |fstype, _| fstype == "cgroup2")?;
    let parent = join_cgroup(&mount_point, &root, path)?;
    let controllers = fs::read_to_string(parent.join("cgroup.controllers")).ok()?;
    controllers
        .split_whitespace()
        .any(|c| c == controller)
        .then_some(Place {
            version: Version::V2,
            parent,
        })
}

/// The root and mount point of the first mount in `mountinfo` whose file system type and
/// super options satisfy `wanted`.
fn mount_of(mountinfo: &str, wanted: impl Fn(&str, &str) -> bool) -> Option<(String, PathBuf)> {
    mountinfo.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        let fields: Vec<&str> = before.split(' ').collect();
        let mut after = after.split(' ');
        let (fstype, _source, options) = (after.next()?, after.next()?, after.next()?);
        (fields.len() >= 5 && wanted(fstype, options))
            .then(|| (unescape(fields[3]), PathBuf::from(unescape(fields[4]))))
    })
}

/// A mountinfo field with its octal escapes (`\040` for a space) decoded.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match octal {
            Some(d) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The directory of cgroup `path` in a hierarchy whose `root` is mounted at `mount_point`
/// (in a cgroup namespace or a container, the mount shows only part of the hierarchy).
fn join_cgroup(mount_point: &Path, root: &str, path: &str) -> Option<PathBuf> {
    let relative = if root == "/" {
        path
    } else {
        path.strip_prefix(root)?
    };
    let relative = relative.trim_start_matches('/');
    if relative.split('/').any(|c| c == "..") {
        return None;
    }
    if relative.is_empty() {
        return Some(mount_point.to_owned());
    }
    Some(mount_point.join(relative))
}

/// Removes the cgroups that an earlier lwirc, killed before it could, left in `parent`
/// (their names carry this pid namespace and the pid of a process that no longer exists),
/// first killing what is still in them: a sandbox whose lwirc died while bubblewrap was
/// setting it up, before its init's `--die-with-parent` was armed, outlives it.
fn remove_stale(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)) else {
            continue;
        };
        let mut fields = rest.split('-');
        let namespace = fields.next().and_then(|n| n.parse::<u64>().ok());
        let pid = fields.next().and_then(|p| p.parse::<libc::pid_t>().ok());
        if namespace == Some(pid_namespace()) && pid.is_some_and(|pid| !sys::process_exists(pid)) {
            let dir = entry.path();
            empty(std::slice::from_ref(&dir), Duration::from_secs(1));
            let _ = fs::remove_dir(dir);
        }
    }
}

/// Kills whatever is a member of the cgroups `dirs` and waits, up to `timeout`, until no
/// process is; whether none is left.
fn empty(dirs: &[PathBuf], timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        let members: Vec<libc::pid_t> = dirs
            .iter()
            .filter_map(|dir| fs::read_to_string(dir.join("cgroup.procs")).ok())
            .flat_map(|text| {
                text.lines()
                    .filter_map(|l| l.trim().parse().ok())
                    .collect::<Vec<_>>()
            })
            .collect();
        if members.is_empty() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        for pid in members {
            sys::kill(pid);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The cgroup(s) of one call: one directory per hierarchy used.
#[derive(Debug)]
pub(crate) struct Group {
    /// The `pids` controller's directory, if the call's processes are limited by it.
    pids: Option<(Version, PathBuf)>,
    /// The `memory` controller's directory, if the call's memory is limited by it.
    memory: Option<(Version, PathBuf)>,
    /// Every directory made, to remove at the end.
    dirs: Vec<PathBuf>,
    /// Their `cgroup.procs` files, open for writing: the child joins each.
    procs: Vec<File>,
}

impl Group {
    /// Makes the call's cgroups: `pids` limited to `max_pids` tasks in `pids`, `memory`
    /// limited to `max_memory` bytes (and no swap) in `memory`.
    pub(crate) fn create(
        pids: Option<(&Place, u64)>,
        memory: Option<(&Place, u64)>,
    ) -> io::Result<Group> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "{PREFIX}{}-{}",
            owner(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut group = Group {
            pids: None,
            memory: None,
            dirs: Vec::new(),
            procs: Vec::new(),
        };
        if let Some((place, max)) = pids {
            let dir = group.dir(place, &name)?;
            fs::write(dir.join("pids.max"), max.to_string())?;
            group.pids = Some((place.version, dir));
        }
        if let Some((place, max)) = memory {
            let dir = group.dir(place, &name)?;
            match place.version {
                Version::V1 => {
                    fs::write(dir.join("memory.limit_in_bytes"), max.to_string())?;
                    // With swap accounting, memory and swap together get the same bound.
                    let memsw = dir.join("memory.memsw.limit_in_bytes");
                    if memsw.exists() {
                        fs::write(memsw, max.to_string())?;
                    }
                }
                Version::V2 => {
                    fs::write(dir.join("memory.max"), max.to_string())?;
                    let swap = dir.join("memory.swap.max");
                    if swap.exists() {
                        fs::write(swap, "0")?;
                    }
                }
            }
            group.memory = Some((place.version, dir));
        }
        Ok(group)
    }

    /// The directory named `name` under `place`, made once per hierarchy.
    fn dir(&mut self, place: &Place, name: &str) -> io::Result<PathBuf> {
        let dir = place.parent.join(name);
        if !self.dirs.contains(&dir) {
            fs::create_dir(&dir)?;
            self.dirs.push(dir.clone());
            self.procs.push(
                OpenOptions::new()
                    .write(true)
                    .open(dir.join("cgroup.procs"))?,
            );
        }
        Ok(dir)
    }

    /// The open `cgroup.procs` files the child writes `0` to.
    pub(crate) fn procs_fds(&self) -> Vec<RawFd> {
        self.procs.iter().map(AsRawFd::as_raw_fd).collect()
    }

    /// Whether a fork was refused because the call had `pids.max` tasks.
    pub(crate) fn process_limit_reached(&self) -> bool {
        self.pids
            .as_ref()
            .is_some_and(|(_, dir)| counter(&dir.join("pids.events"), "max") > 0)
    }

    /// Whether the kernel killed a process of the call for want of memory.
    pub(crate) fn memory_limit_reached(&self) -> bool {
        self.memory.as_ref().is_some_and(|(version, dir)| {
            let file = match version {
                Version::V1 => "memory.oom_control",
                Version::V2 => "memory.events",
            };
            counter(&dir.join(file), "oom_kill") > 0
        })
    }

    /// Kills whatever is still a member and waits, up to `timeout`, until no process is;
    /// whether none is left.
    pub(crate) fn empty(&self, timeout: Duration) -> bool {
        empty(&self.dirs, timeout)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.procs.clear();
        for dir in &self.dirs {
            // A cgroup whose last process has just exited may still be busy for a moment.
            for _ in 0..100 {
                match fs::remove_dir(dir) {
                    Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    _ => break,
                }
            }
        }
    }
}

/// The number after `key` in a flat-keyed cgroup file (`max 3`, `oom_kill 1`), 0 if absent.
fn counter(file: &Path, key: &str) -> u64 {
    let mut text = String::new();
    if File::open(file)
        .and_then(|mut f| f.read_to_string(&mut text))
        .is_err()
    {
        return 0;
    }
    text.lines()
        .find_map(|line| {
            let (name, value) = line.split_once(' ')?;
            (name == key).then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
50 31 0:40 /docker/abc /sys/fs/cgroup/my\\040cpu rw - cgroup cgroup rw,cpu
";

    #[test]
    fn v1_places_follow_proc_self_cgroup_and_mountinfo() {
        let own = "8:pids:/\n4:memory:/process_api/e6\n0::/\n";
        assert_eq!(
            v1_place("pids", own, MOUNTINFO).unwrap().parent,
            Path::new("/sys/fs/cgroup/pids")
        );
        assert_eq!(
            v1_place("memory", own, MOUNTINFO).unwrap().parent,
            Path::new("/sys/fs/cgroup/memory/process_api/e6")
        );
        assert!(v1_place("blkio", own, MOUNTINFO).is_none());
    }

    #[test]
    fn a_mount_of_part_of_a_hierarchy_is_joined_from_its_root() {
        let own = "3:cpu:/docker/abc/inner\n";
        assert_eq!(
            v1_place("cpu", own, MOUNTINFO).unwrap().parent,
            Path::new("/sys/fs/cgroup/my cpu/inner")
        );
        assert!(join_cgroup(Path::new("/m"), "/docker", "/other").is_none());
    }

    #[test]
    fn counters_are_read_by_key() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("memory.oom_control");
        fs::write(&file, "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n").unwrap();
        assert_eq!(counter(&file, "oom_kill"), 2);
        assert_eq!(counter(&file, "max"), 0);
        assert_eq!(counter(&dir.path().join("absent"), "max"), 0);
    }
}

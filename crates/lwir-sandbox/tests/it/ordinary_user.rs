//! The whole suite again as an ordinary user, where the sandbox cannot make cgroups and
//! bounds processes with `RLIMIT_NPROC` in its user namespace and memory with `RLIMIT_AS`.
//! Only when the tests run as root (as in CI), which can become `nobody` for it.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// The uid and gid the suite runs as: `nobody`, `nogroup`.
const NOBODY: u32 = 65534;

#[test]
fn the_suite_passes_as_an_ordinary_user() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    // A copy of this binary that `nobody` may run wherever the build is (a checkout under
    // /root would not do).
    let copy = tempfile::Builder::new()
        .prefix("lwir-sandbox-it")
        .tempdir()
        .unwrap();
    let binary = copy.path().join("it");
    std::fs::copy(std::env::current_exe().unwrap(), &binary).unwrap();
    let open = |path: &std::path::Path, mode| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    open(copy.path(), 0o755);
    open(&binary, 0o755);
    let mut command = Command::new(&binary);
    command
        .args(["--skip", "ordinary_user"])
        .env_clear()
        .envs(
            ["PATH", "LANG", "LWIRC_REQUIRE_ENGINES", "RUST_BACKTRACE"]
                .into_iter()
                .filter_map(|k| Some((k, std::env::var_os(k)?))),
        )
        .env("HOME", "/tmp")
        .env("TMPDIR", "/tmp")
        .current_dir("/tmp");
    // SAFETY: setgroups, setgid and setuid are system calls, allowed after fork.
    unsafe {
        command.pre_exec(|| {
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setgid(NOBODY) != 0
                || libc::setuid(NOBODY) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    // The copy was open for writing in this process while other tests forked: a child
    // that has not reached exec yet still holds that descriptor, and exec of the copy
    // fails with ETXTBSY until it lets go. That lasts microseconds; wait it out.
    let mut tries = 0;
    let output = loop {
        match command.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            other => break other.unwrap(),
        }
    };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "as uid {NOBODY}:\n{text}");
    assert!(text.contains("test result: ok"), "{text}");
    if let Some(note) = text
        .lines()
        .find(|l| l.starts_with("skipped the sandbox tests"))
    {
        use std::io::Write;
        let _ = writeln!(std::io::stderr().lock(), "as uid {NOBODY}: {note}");
    }
}

//! Failing closed: without bubblewrap there is no sandbox, so nothing can run.

use std::ffi::OsStr;

use lwir_sandbox::{ProcessLimit, Sandbox, Unavailable};

use crate::support::sandbox_or_skip;

#[test]
fn with_bubblewrap_hidden_from_path_the_probe_fails_naming_the_package() {
    // The same PATH as the tests', less any directory that holds `bwrap`.
    let path = std::env::var_os("PATH").unwrap_or_default();
    let hidden = std::env::join_paths(
        std::env::split_paths(&path).filter(|dir| !dir.join("bwrap").exists()),
    )
    .unwrap();
    let error = Sandbox::probe_on(&hidden).unwrap_err();
    assert!(matches!(error, Unavailable::Missing { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("bubblewrap"), "{message}");
    assert!(message.contains("apt-get install bubblewrap"), "{message}");
    // There is no sandbox value to run anything with: `run` takes a probed `Sandbox`.

    let error = Sandbox::probe_on(OsStr::new("")).unwrap_err();
    assert!(matches!(error, Unavailable::Missing { .. }), "{error:?}");
}

#[test]
fn as_root_the_process_limit_is_a_cgroup() {
    let sandbox = sandbox_or_skip!();
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        assert!(
            matches!(sandbox.process_limit(), ProcessLimit::Cgroup { .. }),
            "{:?}",
            sandbox.process_limit()
        );
    }
    assert!(sandbox.version().starts_with("0.") || sandbox.version().starts_with('1'));
}

//! No host secret and none of the caller's environment reaches the command.
//!
//! The caller's environment must hold the secrets from its start, so the check runs in a
//! copy of this test binary started with `OPENAI_API_KEY` and `LWIR_REGISTRY_PASSWORD` set
//! to markers (setting them here, while other tests run threads, would not be sound).

use std::process::Command;

use crate::support::{bash, both, run, sandbox_or_skip};

const KEY: &str = "marker-openai-key-7f3a9c";
const PASSWORD: &str = "marker-registry-password-41d2e8";

/// Set in the copy of the binary that runs [`in_a_process_that_holds_secrets`].
const CHILD: &str = "LWIR_SANDBOX_TEST_SECRETS_CHILD";

#[test]
fn no_host_secret_or_environment_reaches_the_sandbox() {
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "secrets::in_a_process_that_holds_secrets",
            "--exact",
            "--nocapture",
        ])
        .env("OPENAI_API_KEY", KEY)
        .env("LWIR_REGISTRY_PASSWORD", PASSWORD)
        .env(CHILD, "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{text}");
    assert!(text.contains("1 passed"), "{text}");
}

#[test]
fn in_a_process_that_holds_secrets() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    assert_eq!(std::env::var("OPENAI_API_KEY").as_deref(), Ok(KEY));
    // A descriptor this process holds open without close-on-exec, as a library might: it
    // must not reach the command.
    // SAFETY: open with a NUL-terminated path; the descriptor stays open for the test.
    let inherited = unsafe { libc::open(c"/etc/hostname".as_ptr(), libc::O_RDONLY) };
    assert!(inherited >= 0);
    let sandbox = sandbox_or_skip!();
    let outcome = run(
        sandbox,
        &bash(
            "cat /etc/shadow; ls /root; ls /home; echo '--- environ'; \
             tr '\\0' '\\n' < /proc/1/environ; echo '--- env'; env; \
             echo '--- cmdline'; tr '\\0' ' ' < /proc/1/cmdline; echo; \
             echo '--- every process'; cat /proc/[0-9]*/environ | tr '\\0' '\\n'; \
             echo '--- passwd'; cat /etc/passwd; echo '--- etc'; ls /etc; \
             echo '--- descriptors'; ls /proc/$$/fd; exit 0",
        ),
    );
    let text = both(&outcome);
    let stdout = outcome.stdout_text();
    for secret in [
        KEY,
        PASSWORD,
        "OPENAI_API_KEY",
        "LWIR_REGISTRY_PASSWORD",
        CHILD,
    ] {
        assert!(
            !text.contains(secret),
            "`{secret}` reached the sandbox:\n{text}"
        );
    }
    assert!(
        text.contains("/etc/shadow: No such file or directory"),
        "{text}"
    );
    assert!(text.contains("/root': No such file or directory"), "{text}");
    assert!(text.contains("/home': No such file or directory"), "{text}");
    // The environment is the job's, for the command and for bubblewrap's pid 1 alike.
    let section = |name: &str| {
        let start = stdout.find(&format!("--- {name}\n")).unwrap() + name.len() + 5;
        let end = stdout[start..]
            .find("--- ")
            .map_or(stdout.len(), |e| start + e);
        let mut lines: Vec<&str> = stdout[start..end]
            .lines()
            .filter(|l| !l.is_empty())
            .collect();
        lines.sort_unstable();
        lines
    };
    let mut expected = [
        "HOME=/tmp",
        "LANG=C.UTF-8",
        "PATH=/usr/local/bin:/usr/bin:/bin",
    ]
    .to_vec();
    assert_eq!(section("environ"), expected, "{text}");
    expected.extend(["PWD=/tmp", "SHLVL=1", "_=/usr/bin/env"]);
    expected.sort_unstable();
    assert_eq!(section("env"), expected, "{text}");
    // No host path in bubblewrap's command line: its options came on a descriptor, and
    // only the command follows them.
    let cmdline = section("cmdline").join(" ");
    assert!(
        cmdline.contains("bwrap --args ") && cmdline.contains(" bash -c cat "),
        "{cmdline}"
    );
    assert!(!cmdline.contains("--ro-bind"), "{cmdline}");
    // Only the sandbox's own users.
    let passwd = section("passwd");
    assert!(
        passwd.iter().any(|l| l.starts_with("sandbox:x:1000:")),
        "{passwd:?}"
    );
    assert_eq!(passwd.len(), 3, "{passwd:?}");
    let etc = section("etc");
    assert!(!etc.contains(&"shadow"), "{etc:?}");
    assert_eq!(
        etc,
        [
            "alternatives",
            "group",
            "hosts",
            "ld.so.cache",
            "localtime",
            "nsswitch.conf",
            "passwd"
        ]
    );
    // Nothing of lwirc's descriptors, nor bubblewrap's (its options, its status pipe, the
    // mounts' sources): the shell has the three streams only. (`exit 0` keeps bash from
    // replacing itself with the last `ls`, which would list its own directory's.)
    assert_eq!(section("descriptors"), ["0", "1", "2"], "{text}");
    println!("checked the secrets in the sandbox");
}

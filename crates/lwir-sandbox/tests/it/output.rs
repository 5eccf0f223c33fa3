//! What a call answers: its streams exactly, its status, its JSON form.

use serde_json::json;

use crate::support::{bash, run, sandbox_or_skip};

#[test]
fn the_answer_is_the_bash_tools_json_object() {
    let sandbox = sandbox_or_skip!();
    let outcome = run(sandbox, &bash("echo out; echo err >&2; exit 3"));
    assert_eq!(
        serde_json::to_value(&outcome).unwrap(),
        json!({
            "exit_status": 3,
            "signal": null,
            "limit": null,
            "stdout": "out\n",
            "stderr": "err\n",
            "stdout_truncated": false,
            "stderr_truncated": false,
        })
    );
    let text = serde_json::to_string(&outcome).unwrap();
    assert!(text.starts_with(r#"{"exit_status":3,"signal":null,"limit":null,"stdout":"#));
}

#[test]
fn escape_sequences_come_back_exactly() {
    let sandbox = sandbox_or_skip!();
    // CSI colour, an OSC title ended by BEL, a carriage return, a C1 CSI (U+009B), a
    // cursor-up, an invalid byte.
    let outcome = run(
        sandbox,
        &bash(r"printf '\033[31mred\033]0;title\007\r\n\302\233A\033[1A\377'"),
    );
    assert_eq!(
        outcome.stdout,
        b"\x1b[31mred\x1b]0;title\x07\r\n\xc2\x9bA\x1b[1A\xff".to_vec()
    );
    let answer = serde_json::to_value(&outcome).unwrap();
    assert_eq!(
        answer["stdout"],
        "\u{1b}[31mred\u{1b}]0;title\u{7}\r\n\u{9b}A\u{1b}[1A\u{fffd}"
    );
}

#[test]
fn standard_input_is_the_callers_bytes_and_need_not_be_read() {
    let sandbox = sandbox_or_skip!();
    let input: Vec<u8> = (0..3 << 20).map(|i| (i % 251) as u8).collect();
    let mut job = bash("cksum");
    job.stdin = input.clone();
    let expected = std::process::Command::new("cksum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(&input)?;
            child.wait_with_output()
        })
        .unwrap();
    let outcome = run(sandbox, &job);
    assert!(outcome.success(), "{outcome:?}");
    assert_eq!(outcome.stdout, expected.stdout);

    // Three megabytes a command never reads do not hold the call up.
    let mut job = bash("exit 0");
    job.stdin = input;
    assert!(run(sandbox, &job).success());
}

#[test]
fn a_command_ended_by_a_signal_reports_the_signal() {
    let sandbox = sandbox_or_skip!();
    let outcome = run(sandbox, &bash("kill -SEGV $$"));
    assert_eq!(outcome.exit_status, None);
    assert_eq!(outcome.signal_name().as_deref(), Some("SIGSEGV"));
    assert_eq!(outcome.limit, None);
    let answer = serde_json::to_value(&outcome).unwrap();
    assert_eq!(answer["signal"], "SIGSEGV");
    assert_eq!(answer["exit_status"], serde_json::Value::Null);
}

#[test]
fn the_interpreters_run_inside() {
    let sandbox = sandbox_or_skip!();
    let programs: [(&str, &[&str]); 3] = [
        ("bash", &["-c", "echo x > /tmp/f && cat /tmp/f"]),
        (
            "python3",
            &[
                "-c",
                "open('/tmp/f', 'w').write('x\\n'); print(open('/tmp/f').read(), end='')",
            ],
        ),
        (
            "node",
            &[
                "-e",
                "const fs = require('fs'); fs.writeFileSync('/tmp/f', 'x\\n'); \
                 process.stdout.write(fs.readFileSync('/tmp/f', 'utf8'))",
            ],
        ),
    ];
    for (name, args) in programs {
        if !std::path::Path::new("/usr/bin").join(name).exists() {
            continue;
        }
        let mut job = bash("");
        job.argv = std::iter::once(name)
            .chain(args.iter().copied())
            .map(Into::into)
            .collect();
        job.limits.memory = lwir_sandbox::Limits::default().memory;
        if !crate::support::cgroup_memory(sandbox) && name == "node" {
            // V8 reserves about a gigabyte of address space before it runs anything.
            job.limits.memory = 2 << 30;
        }
        let outcome = run(sandbox, &job);
        assert_eq!(outcome.stdout_text(), "x\n", "{name}: {outcome:?}");
        assert!(outcome.success(), "{name}: {outcome:?}");
    }
}

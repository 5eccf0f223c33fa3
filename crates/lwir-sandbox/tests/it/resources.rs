//! Memory, file size and output: each stops at its limit, and the host does not pay.

use std::time::Duration;

use lwir_sandbox::{Limit, Mount};

use crate::support::{bash, cgroup_memory, python, run, sandbox_or_skip};

#[test]
fn allocating_50_gb_is_stopped_by_the_memory_limit() {
    let sandbox = sandbox_or_skip!();
    // 50 GiB in 1 MiB pieces, each written (so the pages are really used, not only
    // reserved, which the kernel's overcommit check alone could refuse).
    let job = python(
        "chunks = []\n\
         for _ in range(50 * 1024):\n    \
             chunks.append(bytearray(1 << 20))\n\
         print('allocated 50 GiB')\n",
    );
    let outcome = run(sandbox, &job);
    assert!(!outcome.stdout_text().contains("allocated"), "{outcome:?}");
    if cgroup_memory(sandbox) {
        // The kernel killed it at the cgroup's limit.
        assert_eq!(outcome.limit, Some(Limit::Memory), "{outcome:?}");
        assert_eq!(outcome.signal_name().as_deref(), Some("SIGKILL"));
    } else {
        // RLIMIT_AS: the allocation failed in the process.
        assert_eq!(outcome.exit_status, Some(1), "{outcome:?}");
        assert!(outcome.stderr_text().contains("MemoryError"), "{outcome:?}");
    }
}

#[test]
fn writing_a_20_gb_file_stops_at_the_file_size_limit() {
    let sandbox = sandbox_or_skip!();
    let out = tempfile::tempdir().unwrap();
    for path in ["/mnt/out/big", "/tmp/big"] {
        let mut job = bash(&format!("head -c 20G /dev/zero > {path}"));
        job.mounts.push(Mount::read_write(out.path(), "/mnt/out"));
        let outcome = run(sandbox, &job);
        assert_eq!(outcome.limit, Some(Limit::FileSize), "{path}: {outcome:?}");
        assert_eq!(outcome.signal_name().as_deref(), Some("SIGXFSZ"));
    }
    // On the host disk, the file in the writable mount stopped at the limit; the one in
    // /tmp was in the call's own memory and is gone with it.
    let written = std::fs::metadata(out.path().join("big")).unwrap().len();
    assert_eq!(written, 16 << 20);
}

#[test]
fn printing_1_gb_is_cut_at_the_cap_and_the_call_is_not_stuck() {
    let sandbox = sandbox_or_skip!();
    // Past the total a stream may write, the call is stopped.
    let outcome = run(sandbox, &bash("head -c 1G /dev/zero | tr '\\0' x >&2"));
    assert_eq!(outcome.limit, Some(Limit::Output), "{:?}", outcome.limit);
    assert_eq!(outcome.stderr, vec![b'x'; 64 << 10]);
    assert!(outcome.stderr_truncated);
    assert!(!outcome.stdout_truncated);

    // With no total, all of it is read and all but the cap discarded.
    let mut job = bash("head -c 1G /dev/zero; echo done >&2");
    job.limits.output_total = u64::MAX;
    job.limits.wall = Duration::from_secs(60);
    let outcome = run(sandbox, &job);
    assert!(
        outcome.success(),
        "{:?}",
        (outcome.limit, outcome.exit_status)
    );
    assert_eq!(outcome.stdout.len(), 64 << 10);
    assert!(outcome.stdout_truncated);
    assert_eq!(outcome.stderr_text(), "done\n");
}

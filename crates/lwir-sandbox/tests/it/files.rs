//! The file system: read-only where it should be, writes that persist only in writable
//! mounts, symbolic links that lead nowhere outside, the `bash` tool's mount layout.

use std::fs;

use lwir_sandbox::{Error, Mount};

use crate::support::{bash, both, run, sandbox_or_skip};

#[test]
fn read_only_mounts_and_the_system_refuse_writes_a_writable_mount_keeps_them() {
    let sandbox = sandbox_or_skip!();
    let ro = tempfile::tempdir().unwrap();
    let rw = tempfile::tempdir().unwrap();
    fs::write(ro.path().join("existing"), "before\n").unwrap();
    let mut job = bash(
        "for target in /mnt/ro/new /mnt/ro/existing /usr/lwir-sandbox-test /etc/x /x \
                       /proc/sys/kernel/core_pattern; do \
             echo hostile >> $target 2>/dev/null && echo \"wrote $target\"; \
         done; \
         rm -f /mnt/ro/existing 2>/dev/null && echo removed; \
         mkdir /usr/lib/lwir 2>/dev/null && echo made; \
         echo kept > /mnt/rw/kept && echo 'wrote rw'",
    );
    job.mounts = vec![
        Mount::read_only(ro.path(), "/mnt/ro"),
        Mount::read_write(rw.path(), "/mnt/rw"),
    ];
    let outcome = run(sandbox, &job);
    assert_eq!(outcome.stdout_text(), "wrote rw\n", "{}", both(&outcome));
    assert_eq!(
        fs::read_to_string(ro.path().join("existing")).unwrap(),
        "before\n"
    );
    assert!(!ro.path().join("new").exists());
    assert!(!std::path::Path::new("/usr/lwir-sandbox-test").exists());
    assert!(!std::path::Path::new("/usr/lib/lwir").exists());
    assert_eq!(
        fs::read_to_string(rw.path().join("kept")).unwrap(),
        "kept\n"
    );
}

#[test]
fn symlinks_planted_in_a_writable_mount_reach_nothing_outside() {
    let sandbox = sandbox_or_skip!();
    let rw = tempfile::tempdir().unwrap();
    let mut job = bash(
        "cd /mnt/rw && ln -s / root && ln -s /etc/shadow x && ln -s /root home && \
         cat x; cat root/etc/shadow; ls home/; ls root/",
    );
    job.mounts = vec![Mount::read_write(rw.path(), "/mnt/rw")];
    let outcome = run(sandbox, &job);
    let text = both(&outcome);
    // The links resolve inside the sandbox, where there is no /etc/shadow and no /root…
    assert!(text.contains("x: No such file or directory"), "{text}");
    assert!(
        text.contains("'home/': No such file or directory"),
        "{text}"
    );
    // …and its root is its own: the system, its mounts and nothing of the host's.
    let stdout = outcome.stdout_text();
    let listing: Vec<&str> = stdout.lines().collect();
    for entry in ["usr", "proc", "tmp", "mnt"] {
        assert!(listing.contains(&entry), "{listing:?}");
    }
    for entry in ["root", "home", "work", "var", "srv"] {
        assert!(!listing.contains(&entry), "{listing:?}");
    }
    if let Ok(shadow) = fs::read_to_string("/etc/shadow") {
        let first = shadow.lines().next().unwrap_or_default();
        assert!(first.is_empty() || !text.contains(first), "{text}");
    }

    // The links persist on the host; a later call that mounts one of them is refused
    // rather than given what it points to.
    for planted in ["root", "x"] {
        let mut job = bash("ls /mnt/planted");
        job.mounts = vec![Mount::read_only(rw.path().join(planted), "/mnt/planted")];
        match sandbox.run(&job) {
            Err(Error::Job(why)) => assert!(why.contains("symbolic link"), "{why}"),
            other => panic!("mounting {planted}: {other:?}"),
        }
    }
}

#[test]
fn the_bash_tools_layout_scratch_read_write_skills_read_only_inside_it() {
    let sandbox = sandbox_or_skip!();
    let scratch = tempfile::tempdir().unwrap();
    let skills = tempfile::tempdir().unwrap();
    let memory = tempfile::tempdir().unwrap();
    fs::write(skills.path().join("SKILL.md"), "# demo\n").unwrap();
    let mut job = bash(
        "pwd; cat .agents/skills/demo/SKILL.md; \
         echo x > .agents/skills/demo/new 2>/dev/null || echo 'skills read-only'; \
         echo note > /mnt/memory/org/note 2>/dev/null || echo 'org read-only'; \
         echo draft > work.txt && echo 'scratch written'",
    );
    job.cwd = "/mnt/scratch/own".into();
    job.mounts = vec![
        // Nested mounts in any order: the parent is made first.
        Mount::read_only(skills.path(), "/mnt/scratch/own/.agents/skills/demo"),
        Mount::read_write(scratch.path(), "/mnt/scratch/own"),
        Mount::read_only(memory.path(), "/mnt/memory/org"),
    ];
    let outcome = run(sandbox, &job);
    assert_eq!(
        outcome.stdout_text(),
        "/mnt/scratch/own\n# demo\nskills read-only\norg read-only\nscratch written\n",
        "{}",
        both(&outcome)
    );
    assert_eq!(
        fs::read_to_string(scratch.path().join("work.txt")).unwrap(),
        "draft\n"
    );
    assert!(!skills.path().join("new").exists());
}

#[test]
fn no_setuid_or_setgid_file_can_be_made_in_a_writable_mount() {
    use std::os::unix::fs::PermissionsExt;
    let sandbox = sandbox_or_skip!();
    let rw = tempfile::tempdir().unwrap();
    // As root, such a file would belong to root on the host: whoever ran it, root.
    let mut job = bash(
        "cd /mnt/rw; cp /usr/bin/id a; chmod 4755 a; chmod g+s a; chmod u=rwxs a; \
         install -m 6755 /usr/bin/id b; \
         python3 -c 'import os; os.close(os.open(\"c\", os.O_CREAT | os.O_WRONLY, 0o4755))'; \
         python3 -c 'import os; os.mknod(\"d\", 0o104755)'; \
         mkdir e; chmod 2775 e; ls -l",
    );
    job.mounts = vec![Mount::read_write(rw.path(), "/mnt/rw")];
    let outcome = run(sandbox, &job);
    let text = both(&outcome);
    assert!(text.contains("Operation not permitted"), "{text}");
    for entry in fs::read_dir(rw.path()).unwrap() {
        let entry = entry.unwrap();
        let mode = entry.metadata().unwrap().permissions().mode();
        assert_eq!(
            mode & 0o6000,
            0,
            "{:?} has mode {mode:o}:\n{text}",
            entry.path()
        );
    }
    // Ordinary modes still work.
    let mut job = bash("cd /mnt/rw && touch f && chmod 0750 f && stat -c %a f");
    job.mounts = vec![Mount::read_write(rw.path(), "/mnt/rw")];
    assert_eq!(run(sandbox, &job).stdout_text(), "750\n");
}

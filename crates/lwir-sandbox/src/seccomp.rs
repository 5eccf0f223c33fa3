//! The seccomp filter bubblewrap installs for the command (`--seccomp FD`): a classic BPF
//! program, written here so that no library is needed for a dozen rules.
//!
//! It refuses what the namespaces leave open:
//! - **setuid and setgid files.** With lwirc as root the command is uid 0 outside its user
//!   namespace, so a file it makes in a writable mount belongs to root on the host, and it
//!   may set that file's setuid bit (measured: `chmod 4755` and `open(O_CREAT, 04755)`
//!   both worked). Any host user who ran it would be root. Every call that can set
//!   S_ISUID or S_ISGID — `chmod`, `fchmod`, `fchmodat`, `fchmodat2`, `open`, `openat`,
//!   `creat`, `mknod`, `mknodat` with those bits in the mode — fails with EPERM, and
//!   `openat2` (whose mode the filter cannot read) with ENOSYS, so callers fall back to
//!   `openat`.
//! - **io_uring**, which would perform such calls without passing the filter, and is
//!   much of the kernel's recent attack surface (ENOSYS: libuv and others fall back).
//! - **Keyrings** (`keyctl`, `add_key`, `request_key`): uid 0's keys are the host root's.
//! - `bpf`, `perf_event_open`, `userfaultfd`: kernel attack surface a command has no use
//!   for here.
//!
//! A system call of another ABI (32-bit x86 on x86_64, x32) kills the process: its
//! numbers are different, so the rules would not hold for it.

/// The filter's instructions, as bubblewrap reads them from its descriptor, or why this
/// architecture has none.
pub(crate) fn program() -> Result<Vec<u8>, &'static str> {
    let arch =
        arch::AUDIT_ARCH.ok_or("the sandbox's seccomp filter is written for x86_64 and aarch64")?;
    let mut filter = Filter::default();
    filter.load(ARCH);
    filter.jump(JEQ, arch, 1, 0);
    filter.ret(libc::SECCOMP_RET_KILL_PROCESS);
    filter.load(NR);
    if arch::X32 {
        filter.jump(JGE, X32_SYSCALL_BIT, 0, 1);
        filter.ret(libc::SECCOMP_RET_KILL_PROCESS);
    }
    for &(number, errno) in arch::REFUSED {
        filter.jump(JEQ, number as u32, 0, 1);
        filter.ret(libc::SECCOMP_RET_ERRNO | errno as u32);
    }
    for &(number, arg) in arch::MODE_CHECKED {
        filter.load(NR);
        filter.jump(JEQ, number as u32, 0, 4);
        // The low 32 bits of the argument (both architectures are little-endian).
        filter.load(ARGS + 8 * arg);
        filter.jump(JSET, SET_ID_BITS, 0, 1);
        filter.ret(libc::SECCOMP_RET_ERRNO | libc::EPERM as u32);
        filter.ret(libc::SECCOMP_RET_ALLOW);
    }
    filter.ret(libc::SECCOMP_RET_ALLOW);
    Ok(filter.bytes())
}

/// S_ISUID | S_ISGID.
const SET_ID_BITS: u32 = 0o6000;

/// Offsets in `struct seccomp_data`: the system call's number, its ABI, its arguments.
const NR: u32 = 0;
const ARCH: u32 = 4;
const ARGS: u32 = 16;

/// Classic BPF opcodes: load a word at an absolute offset; jumps; return.
const LD_W_ABS: u16 = 0x20;
const JEQ: u16 = 0x15;
const JGE: u16 = 0x35;
const JSET: u16 = 0x45;
const RET: u16 = 0x06;

/// x32 system calls on x86_64 carry this bit in their number.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// System calls refused outright, and the error each fails with: the same on x86_64 and
/// aarch64 (`libc` names them on both).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const REFUSED: &[(libc::c_long, i32)] = &[
    (libc::SYS_openat2, libc::ENOSYS),
    (libc::SYS_io_uring_setup, libc::ENOSYS),
    (libc::SYS_io_uring_enter, libc::ENOSYS),
    (libc::SYS_io_uring_register, libc::ENOSYS),
    (libc::SYS_keyctl, libc::ENOSYS),
    (libc::SYS_add_key, libc::ENOSYS),
    (libc::SYS_request_key, libc::ENOSYS),
    (libc::SYS_bpf, libc::EPERM),
    (libc::SYS_perf_event_open, libc::EPERM),
    (libc::SYS_userfaultfd, libc::EPERM),
];

#[cfg(target_arch = "x86_64")]
mod arch {
    pub(super) const AUDIT_ARCH: Option<u32> = Some(0xC000_003E);
    pub(super) const X32: bool = true;
    pub(super) const REFUSED: &[(libc::c_long, i32)] = super::REFUSED;
    /// System calls and the index of their mode argument.
    pub(super) const MODE_CHECKED: &[(libc::c_long, u32)] = &[
        (libc::SYS_chmod, 1),
        (libc::SYS_fchmod, 1),
        (libc::SYS_fchmodat, 2),
        (libc::SYS_fchmodat2, 2),
        (libc::SYS_open, 2),
        (libc::SYS_openat, 3),
        (libc::SYS_creat, 1),
        (libc::SYS_mknod, 1),
        (libc::SYS_mknodat, 2),
    ];
}

#[cfg(target_arch = "aarch64")]
mod arch {
    pub(super) const AUDIT_ARCH: Option<u32> = Some(0xC000_00B7);
    pub(super) const X32: bool = false;
    /// `fchmodat2` (Linux 6.6), not in `libc` for this architecture.
    const SYS_FCHMODAT2: libc::c_long = 452;
    pub(super) const REFUSED: &[(libc::c_long, i32)] = super::REFUSED;
    /// System calls and the index of their mode argument.
    pub(super) const MODE_CHECKED: &[(libc::c_long, u32)] = &[
        (libc::SYS_fchmod, 1),
        (libc::SYS_fchmodat, 2),
        (SYS_FCHMODAT2, 2),
        (libc::SYS_openat, 3),
        (libc::SYS_mknodat, 2),
    ];
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod arch {
    pub(super) const AUDIT_ARCH: Option<u32> = None;
    pub(super) const X32: bool = false;
    pub(super) const REFUSED: &[(libc::c_long, i32)] = &[];
    pub(super) const MODE_CHECKED: &[(libc::c_long, u32)] = &[];
}

#[derive(Default)]
struct Filter(Vec<libc::sock_filter>);

impl Filter {
    fn load(&mut self, offset: u32) {
        self.push(LD_W_ABS, offset, 0, 0);
    }

    fn jump(&mut self, code: u16, k: u32, jt: u8, jf: u8) {
        self.push(code, k, jt, jf);
    }

    fn ret(&mut self, value: u32) {
        self.push(RET, value, 0, 0);
    }

    fn push(&mut self, code: u16, k: u32, jt: u8, jf: u8) {
        self.0.push(libc::sock_filter { code, jt, jf, k });
    }

    /// The instructions as `struct sock_filter` lays them out in memory.
    fn bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.0.len() * 8);
        for i in &self.0 {
            bytes.extend_from_slice(&i.code.to_ne_bytes());
            bytes.push(i.jt);
            bytes.push(i.jf);
            bytes.extend_from_slice(&i.k.to_ne_bytes());
        }
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_is_whole_instructions_ending_in_allow() {
        let program = program().unwrap();
        assert_eq!(program.len() % 8, 0);
        assert!(program.len() / 8 < 4096);
        let last = &program[program.len() - 8..];
        assert_eq!(last[..2], RET.to_ne_bytes());
        assert_eq!(last[4..], libc::SECCOMP_RET_ALLOW.to_ne_bytes());
    }
}

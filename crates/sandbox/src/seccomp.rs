//! The seccomp filter: a short deny list, returning EPERM (never killing), so tools
//! fail with a message instead of dying mysteriously.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

/// System calls denied in every sandbox: kernel keyrings (they can hold the user's
/// secrets), bpf and perf (kernel attack surface), io_uring (it bypasses seccomp for
/// the operations it performs), and changes to the mount table (Landlock already forbids
/// them; this covers kernels without Landlock).
const ALWAYS_DENIED: &[i64] = &[
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_io_uring_setup,
    libc::SYS_kexec_load,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
];

/// Socket families denied when there is no network namespace to do it.
const NET_FAMILIES: &[i32] = &[libc::AF_INET, libc::AF_INET6, libc::AF_PACKET];

/// Compiles the filter; `deny_ip_sockets` when no network namespace isolates the run.
pub(crate) fn filter(deny_ip_sockets: bool) -> Result<BpfProgram, seccompiler::Error> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        ALWAYS_DENIED.iter().map(|&nr| (nr, Vec::new())).collect();
    if deny_ip_sockets {
        let mut socket_rules = Vec::new();
        for &family in NET_FAMILIES {
            socket_rules.push(SeccompRule::new(vec![SeccompCondition::new(
                0,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Eq,
                family as u64,
            )?])?);
        }
        rules.insert(libc::SYS_socket, socket_rules);
    }
    let arch = std::env::consts::ARCH.try_into()?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    filter.try_into().map_err(seccompiler::Error::Backend)
}

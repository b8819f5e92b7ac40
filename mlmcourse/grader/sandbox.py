"""The sandbox of a worker: resource limits, namespaces, a read-only root, no privileges.

Where the platform allows, a worker enters new mount, PID, network, IPC and UTS namespaces (a user
namespace too when not root), sees a read-only root made of the system folders, the Python
installation, the virtual environment and the ``mlmcourse`` package, plus small writable tmpfs
folders -- never the course directory, the gradebook, ``source/``, other students or the network
-- and drops to the ``nobody`` user (root) or to no capabilities (user namespace). Where
namespaces are refused it is a plain process with the same resource limits (see
:mod:`mlmcourse.grader.zygote`).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import resource
import signal
import sys
from pathlib import Path

from .limits import Limits

# ---------------------------------------------------------------------------------------------
# Resource limits.


def vm_data_bytes() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _setlimit(which: int, value: int) -> None:
    try:
        soft, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))
    except (ValueError, OSError):
        pass


def _limit_memory(memory_bytes: int) -> None:
    # Private writable memory beyond what this fork already holds (torch and friends).
    _setlimit(resource.RLIMIT_DATA, vm_data_bytes() + memory_bytes)
    _setlimit(resource.RLIMIT_CORE, 0)


def limit_trusted_kernel(limits: Limits) -> None:
    """Resource limits of a trusted kernel (this process): its memory, no core files."""
    _limit_memory(limits.trusted_kernel_memory_bytes)


def limit_worker(limits: Limits) -> None:
    """Resource limits of a worker (this process): memory, CPU time, file size, open files."""
    _limit_memory(limits.memory_bytes)
    _setlimit(resource.RLIMIT_CPU, limits.cpu_seconds)
    _setlimit(resource.RLIMIT_FSIZE, 64 * 1024 * 1024)
    _setlimit(resource.RLIMIT_NOFILE, 256)


# ---------------------------------------------------------------------------------------------
# The sandbox: namespaces, a read-only root, no privileges.

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 1, 38, 24
NOBODY = 65534
SANDBOX_HOME = "/home/student"
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "ppc64le": 203, "s390x": 217}.get(platform.machine())
_CAPSET = {"x86_64": 126, "aarch64": 91, "ppc64le": 184, "s390x": 185}.get(platform.machine())


class SandboxError(OSError):
    pass


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise SandboxError(code, f"{what}: {os.strerror(code)}")


def _mount(libc, source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    def enc(s):
        return (None if s is None else s.encode())
    _check(libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {source} on {target}")


def readonly_paths() -> list[str]:
    """Host paths the worker may read: system folders, Python, the venv, the mlmcourse package."""
    import mlmcourse

    paths = [p for p in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                         "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
                         "/etc/localtime", "/etc/alternatives", "/etc/fonts")
             if os.path.lexists(p)]
    package = str(Path(mlmcourse.__file__).resolve().parent)
    for prefix in {sys.base_prefix, sys.prefix, sys.exec_prefix}:
        paths.append(os.path.realpath(prefix))
        paths.append(os.path.abspath(prefix))
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        real = os.path.realpath(entry)
        if os.path.isdir(os.path.join(real, "mlmcourse")) and not real.endswith("site-packages"):
            continue  # a project root on sys.path: only its package is bound, below
        if "site-packages" in real or "dist-packages" in real:
            paths.append(real)
    paths.append(package)
    unique: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(path == kept or path.startswith(kept.rstrip("/") + "/") for kept in unique):
            unique.append(path)
    return unique


def _enter_sandbox(libc, root_dir: str, binds: list[str], as_root: bool, uid: int,
                   gid: int) -> None:
    """In a fresh PID namespace (we are its PID 1): build the root, pivot into it, drop rights."""
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
    _mount(libc, "tmpfs", root_dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=0755")
    # Writable scratch first, so that a bound path below one of them (a package in /tmp) shows.
    for folder, options in (("/tmp", "size=64m,mode=1777"), (SANDBOX_HOME, "size=64m,mode=1777"),
                            ("/dev/shm", "size=16m,mode=1777")):
        os.makedirs(root_dir + folder, exist_ok=True)
        _mount(libc, "tmpfs", root_dir + folder, "tmpfs", MS_NOSUID | MS_NODEV, options)
    for path in binds:
        target = root_dir + path
        if os.path.islink(path) and os.path.dirname(path) == "/":
            os.symlink(os.readlink(path), target)
            continue
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.isdir(path):
            os.makedirs(target, exist_ok=True)
        else:
            open(target, "a").close()
        _mount(libc, path, target, None, MS_BIND | MS_REC)
        _mount(libc, None, target, None,
               MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    for device in ("null", "zero", "full", "random", "urandom"):
        target = f"{root_dir}/dev/{device}"
        open(target, "a").close()
        _mount(libc, f"/dev/{device}", target, None, MS_BIND)
    os.makedirs(root_dir + "/proc", exist_ok=True)
    _mount(libc, "proc", root_dir + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    # The root itself becomes read-only once every mount point exists.
    _mount(libc, None, root_dir, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.chdir(root_dir)
    if _PIVOT_ROOT is not None:
        _check(libc.syscall(_PIVOT_ROOT, b".", b"."), "pivot_root")
        _check(libc.umount2(b".", MNT_DETACH), "umount old root")
    else:
        os.chroot(".")
    os.chdir(SANDBOX_HOME)
    if as_root:
        os.setgroups([])
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)  # from uid 0 to another uid: every capability goes
    else:
        for cap in range(64):
            libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
        if _CAPSET is not None:
            header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
            data = (ctypes.c_uint32 * 6)()
            _check(libc.syscall(_CAPSET, header, data), "capset")
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    if as_root and os.geteuid() != NOBODY:
        raise SandboxError(errno.EPERM, "could not drop to nobody")


def sandbox_child(root_dir: str, binds: list[str]) -> int:
    """Enter the sandbox. Returns 0 in the sandboxed process; in the intermediate process it
    waits for it and never returns. Raises SandboxError when the platform refuses."""
    libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    as_root = uid == 0
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    if not as_root:
        flags |= CLONE_NEWUSER
    _check(libc.unshare(flags), "unshare")
    if not as_root:
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
        Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
    pid = os.fork()
    if pid:
        # The intermediate process stays outside the new PID namespace: the zygote kills it,
        # and its death kills the sandboxed process (PR_SET_PDEATHSIG) and everything in it.
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except ChildProcessError:
                os._exit(1)
            except InterruptedError:
                continue
        if os.WIFSIGNALED(status):
            os._exit(128 + os.WTERMSIG(status))
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    # (getppid() is 0 here: the parent lives outside the new PID namespace.)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    _enter_sandbox(libc, root_dir, binds, as_root, uid, gid)
    return 0


def readable_by_others(path: str) -> bool:
    """True when a user without rights can read `path` (every folder above it is o+x)."""
    path = os.path.realpath(path)
    try:
        for folder in [path, *map(str, Path(path).parents)]:
            if not os.stat(folder).st_mode & 0o001:
                return False
    except OSError:
        return False
    return True


def plain_child_drop(home: str) -> None:
    """The fallback: no namespaces; a root grader still drops to nobody in a fresh folder (when
    Python, the venv and the package are readable by nobody)."""
    import mlmcourse

    needed = (sys.base_prefix, sys.prefix, os.path.dirname(mlmcourse.__file__))
    if os.getuid() == 0 and all(readable_by_others(p) for p in needed):
        os.chown(home, NOBODY, NOBODY)
        os.chdir(home)
        os.setgroups([])
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)
    else:
        os.chdir(home)
    try:
        _libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass



"""The course image: one container image every student's and staff member's server runs
(`make image`; the container hub and tests/test_hub_containers.py use it).

    python deploy/container/image.py            # build (or reuse) it and its archive; its tag
    python deploy/container/image.py --no-archive   # podman's storage only (what tests need)
    python deploy/container/image.py --key      # the cache key only

Built from Debian packages and the pinned environment alone, no base image pulled from a
registry: mmdebstrap makes a bookworm root file system with Debian's python3.11; a hook installs
the course's pinned environment (requirements/constraints.txt) into /opt/course/venv the way
this machine's pip does (torch's CPU build from the local wheel folders, bind-mounted read-only
during the build, never the CUDA build from the index), the course package `mlmcourse` (no
solutions), the hub's module, the roles' Jupyter configuration and the student release
(/opt/course/release); a user `jovyan` (uid 1000) owns /home/jovyan. podman imports the tree with
the image's settings; `make image` also saves it as an OCI archive in
build/image/mlmcourse-<key>.oci.tar (`--no-archive`, as `make test` builds it, does not).

The key is a hash of everything the image is made of (the recipe here: Debian packages,
install script, settings; the pins, the package, the roles, the release): a later run with the
same inputs loads the archive (or finds the image in podman's storage) instead of building again.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
BUILD = REPO / "build" / "image"
NAME = "localhost/mlmcourse"
CONTAINERS_CONF = HERE / "containers.conf"
SUITE = "bookworm"
# Debian's packages of the image: the libraries the course's Python links (ssl, sqlite, ffi,
# compression, readline...), a shell for JupyterLab's terminals, tini as the container's init
# (reaps the kernels' children), certificates.
PACKAGES = ["ca-certificates", "tini", "bash", "procps", "less", "libssl3", "libsqlite3-0",
            "libffi8", "libbz2-1.0", "liblzma5", "libreadline8", "zlib1g", "libuuid1",
            "libncursesw6", "libexpat1", "libnsl2", "libcrypt1",
            "bubblewrap"]  # the grader's sandbox: student code runs in bwrap
# The interpreter: the course environment's own (the one the .venv was made from, e.g. 3.11.7),
# copied without its site-packages to /opt/python. Debian bookworm's python3 is 3.11.2, and
# the pins need more (soupsieve 4.1.3 requires Python >= 3.11.5): with it the image could not
# hold the pinned environment.
PYTHON_HOME = "/opt/python"
PYTHON_VERSION = f"python{sys.version_info.major}.{sys.version_info.minor}"
# Where this machine's pip finds the CPU build of torch and the other local wheels (the host's
# pip configuration: find-links and extra index); bind-mounted read-only during the build.
WHEEL_FOLDERS = ["/opt/wheels", "/opt/pypi", "/opt/pypi-more"]
HOST_CA = "/etc/ssl/certs/ca-certificates.crt"
USER, UID = "jovyan", 1000
INPUTS = ["requirements/constraints.txt", "requirements/course.txt", "pyproject.toml", "mlmcourse",
          "deploy/hub/roles", "deploy/hub/mlmcourse_hub.py",
          "deploy/hub/formgrader_tab.py", "release"]


class ImageError(RuntimeError):
    """The image cannot be built here; the message says why and what to do."""


def podman_env() -> dict[str, str]:
    """The environment for podman: the course's containers.conf (runc, cgroupfs, ulimits)."""
    return dict(os.environ, CONTAINERS_CONF=str(CONTAINERS_CONF))


def podman(*args: str, check: bool = True, **options) -> subprocess.CompletedProcess:
    done = subprocess.run(["podman", *args], capture_output=True, text=True, env=podman_env(),
                          **options)
    if check and done.returncode != 0:
        raise ImageError(f"podman {' '.join(args[:3])} failed: {done.stderr.strip()[-2000:]}")
    return done


def input_files() -> list[Path]:
    files = []
    for name in INPUTS:
        path = REPO / name
        found = [path] if path.is_file() else sorted(
            p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        files.extend(found)
    return files


def key() -> str:
    """A hash of what the image is made of: the recipe (suite, Debian packages, the install
    script, the image's settings) and the input files (their paths and bytes)."""
    digest = hashlib.sha256("\0".join([SUITE, *PACKAGES, INSTALL, *SETTINGS, sys.version]).encode())
    for path in input_files():
        digest.update(str(path.relative_to(REPO)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def tag(image_key: str | None = None) -> str:
    return f"{NAME}:{image_key or key()}"


def archive(image_key: str) -> Path:
    return BUILD / f"mlmcourse-{image_key}.oci.tar"


def why_not_here() -> str | None:
    """Why the image cannot be built or run here (None when it can)."""
    for tool in ("podman", "mmdebstrap", "runc"):
        if shutil.which(tool) is None:
            return f"{tool} is missing: apt-get install podman runc mmdebstrap (.ci/run does)"
    if os.geteuid() != 0:
        return "the course image is built and run with rootful podman: run as root"
    done = podman("info", check=False)
    if done.returncode != 0:
        return f"podman cannot run here: {done.stderr.strip()[-500:]}"
    return None


# The image's settings (podman import --change): who runs, where, and what.
SETTINGS = [
    f"USER {USER}", f"WORKDIR /home/{USER}",
    "ENV PATH=/opt/course/venv/bin:/usr/local/bin:/usr/bin:/bin",
    f"ENV HOME=/home/{USER}", "ENV LANG=C.UTF-8", "ENV SHELL=/bin/bash",
    'ENTRYPOINT ["/usr/bin/tini", "--"]', 'CMD ["jupyterhub-singleuser"]', "EXPOSE 8888",
]

# The hook that runs inside the new root file system (chroot), after Debian's packages.
INSTALL = r"""
set -eu
export LD_LIBRARY_PATH={python_home}/lib
export PIP_FIND_LINKS=/opt/wheels PIP_DISABLE_PIP_VERSION_CHECK=1
# pip's downloads kept on this machine (build/image/pip-cache) for the next build; not kept
export PIP_CACHE_DIR=/tmp/pip-cache
export PIP_EXTRA_INDEX_URL="file:///opt/pypi/simple file:///opt/pypi-more/simple"
# this machine's certificate authorities (its proxy's among them) reach the index; not kept
export PIP_CERT=/tmp/host-ca.crt REQUESTS_CA_BUNDLE=/tmp/host-ca.crt SSL_CERT_FILE=/tmp/host-ca.crt
# the linker finds libpython in any process (the grader's fork server starts with a clean
# environment: LD_LIBRARY_PATH would not reach it)
echo {python_home}/lib > /etc/ld.so.conf.d/course-python.conf && /sbin/ldconfig
# the standard library's bytecode, compiled once here: users cannot write it next to the sources,
# and without it every process in a container compiled what it imported (a few files of
# deliberately broken syntax, test data, do not compile: that is no error here)
{python} -m compileall -q {python_home}/lib/{version} >/dev/null 2>&1 || true
{python} -m venv /opt/course/venv
pip=/opt/course/venv/bin/pip
# the course environment's pip (Debian's 23.0 resolves extras under constraints wrongly)
$pip install --quiet pip==23.2.1
# torch first, the CPU build: PyPI's torch==2.13.0 for Linux is the CUDA one (GBs). A local CPU
# wheel in /opt/wheels where the machine has one, else PyTorch's CPU index.
if ls /opt/wheels/torch-*+cpu-*.whl >/dev/null 2>&1; then
    $pip install --quiet -c /tmp/course/requirements/constraints.txt /opt/wheels/torch-*+cpu-*.whl
else
    $pip install --quiet -c /tmp/course/requirements/constraints.txt \
        --index-url https://download.pytorch.org/whl/cpu torch
fi
$pip install --quiet -c /tmp/course/requirements/constraints.txt \
    -r /tmp/course/requirements/course.txt /tmp/course
# Validate's settings for everyone who uses this environment (visible checks count everywhere)
/opt/course/venv/bin/python -m mlmcourse install-config
site=$(/opt/course/venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
cp /tmp/course/deploy/hub/mlmcourse_hub.py /tmp/course/deploy/hub/formgrader_tab.py "$site/"
cp -r /tmp/course/deploy/hub/roles /opt/course/roles
for role in /opt/course/roles/*; do : > "$role/migrated"; done
cp -r /tmp/course/release /opt/course/release
useradd --create-home --uid 1000 --shell /bin/bash jovyan
rm -rf /tmp/course /tmp/host-ca.crt /var/cache/apt/* /var/lib/apt/lists/* /root/.cache
""".replace("{python_home}", PYTHON_HOME).replace("{python}", f"{PYTHON_HOME}/bin/{PYTHON_VERSION}"
               ).replace("{version}", PYTHON_VERSION)


def customize_hook(source: Path) -> list[str]:
    """mmdebstrap's customize hooks (run on this machine with the root file system as $1): the
    wheel folders bind-mounted read-only, the course's sources copied, the install, unmounted."""
    cache = BUILD / "pip-cache"
    cache.mkdir(parents=True, exist_ok=True)
    mounts = " ".join(f'mkdir -p "$1{f}" && mount --bind -o ro {f} "$1{f}";'
                      for f in WHEEL_FOLDERS if Path(f).is_dir())
    mounts += f' mkdir -p "$1/tmp/pip-cache" && mount --bind {cache} "$1/tmp/pip-cache";'
    unmounts = " ".join(f'umount "$1{f}" 2>/dev/null; rmdir "$1{f}" 2>/dev/null;'
                        for f in [*WHEEL_FOLDERS, "/tmp/pip-cache"])
    # (`exec >&2`: a hook's output goes to the log, never into the tar mmdebstrap writes on stdout)
    return [
        f'exec >&2; {mounts} cp -r {source} "$1/tmp/course"'
        f' && cp -a {source}/python "$1{PYTHON_HOME}"'
        f' && cp /etc/resolv.conf "$1/etc/resolv.conf"'
        f' && cp {HOST_CA} "$1/tmp/host-ca.crt"',
        f'exec >&2; chroot "$1" /bin/sh -c {shlex.quote(INSTALL)}; status=$?; {unmounts}'
        ' exit $status',
    ]


def stage_python(target: Path) -> None:
    """The course environment's interpreter (sys.base_prefix): bin/, the shared libpython and
    the standard library, without site-packages, tests, IDLE and tkinter."""
    base = Path(sys.base_prefix)
    (target / "bin").mkdir(parents=True)
    for name in (PYTHON_VERSION, f"python{sys.version_info.major}"):
        if (base / "bin" / name).exists():
            shutil.copy2(os.path.realpath(base / "bin" / name), target / "bin" / name)
    (target / "lib").mkdir()
    for library in (base / "lib").glob("libpython*"):
        shutil.copy2(library, target / "lib" / library.name, follow_symlinks=False)
    shutil.copytree(base / "lib" / PYTHON_VERSION, target / "lib" / PYTHON_VERSION,
                    symlinks=True, ignore=shutil.ignore_patterns(
                        "site-packages", "test", "idlelib", "tkinter", "turtledemo",
                        "__pycache__", "_tkinter*"))
    (target / "lib" / PYTHON_VERSION / "site-packages").mkdir()


def staged_sources(folder: Path) -> Path:
    """The inputs the install needs, copied (no .venv, no build/, no solutions: source/ is not
    an input)."""
    shutil.rmtree(folder, ignore_errors=True)
    stage_python(folder / "python")
    for name in INPUTS:
        path = REPO / name
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            shutil.copytree(path, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, target)
    return folder


def build(image_key: str) -> float:
    """The root file system (mmdebstrap), streamed as a tar straight into `podman import`:
    no 1.5 GB tarball written to disk and read back; returns the seconds it took."""
    BUILD.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    source = staged_sources(BUILD / "sources")
    hooks = [arg for hook in customize_hook(source) for arg in ("--customize-hook", hook)]
    command = ["mmdebstrap", "--variant=apt", "--mode=root", "--format=tar",
               f"--include={','.join(PACKAGES)}", *hooks, SUITE, "-"]  # the tar on stdout
    settings = [*SETTINGS, f"LABEL org.opencontainers.image.source=mlmcourse key={image_key}"]
    changes = [arg for setting in settings for arg in ("--change", setting)]
    log = BUILD / "build.log"
    with log.open("w") as handle:
        bootstrap = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=handle,
                                     env=dict(os.environ, SOURCE_DATE_EPOCH="1700000000"))
        imported = subprocess.run(["podman", "import", *changes, "-", tag(image_key)],
                                  stdin=bootstrap.stdout, capture_output=True, text=True,
                                  env=podman_env(), timeout=3600)
        bootstrap.stdout.close()
        bootstrap.wait()
    shutil.rmtree(source, ignore_errors=True)
    if bootstrap.returncode != 0:
        podman("rmi", "--force", tag(image_key), check=False)  # what a cut tar left, if any
        errors = [line for line in log.read_text().splitlines() if "ERROR" in line or
                  line.startswith("E:")]
        also = f"\n(podman import: {imported.stderr.strip()[-500:]})" if imported.returncode else ""
        raise ImageError("mmdebstrap failed (all of it in {}):\n{}{}".format(
            log, "\n".join(errors[-20:]), also))
    if imported.returncode != 0:
        raise ImageError(f"podman import failed: {imported.stderr.strip()[-2000:]}")
    for old in [*BUILD.glob("mlmcourse-*.oci.tar"), *BUILD.glob("mlmcourse-*.json")]:
        if old.name.split(".")[0] != f"mlmcourse-{image_key}":
            old.unlink()  # of older inputs
    built = time.monotonic() - started
    size = int(podman("image", "inspect", "--format", "{{.Size}}", tag(image_key)).stdout)
    facts(image_key).write_text(json.dumps(
        {"seconds": round(built, 1), "image_bytes": size, "key": image_key}) + "\n")
    return built


def facts(image_key: str) -> Path:
    """The build's facts (seconds, bytes in podman's storage, the archive's bytes once saved)."""
    return BUILD / f"mlmcourse-{image_key}.json"


def save_archive(image_key: str) -> Path:
    """The image as an OCI archive: what another machine or a registry takes (skopeo), and
    what a later run loads if podman's storage was emptied."""
    partial = archive(image_key).with_suffix(".partial")
    podman("save", "--format", "oci-archive", "-o", str(partial), tag(image_key), timeout=1800)
    partial.rename(archive(image_key))
    if facts(image_key).is_file():
        known = json.loads(facts(image_key).read_text())
        known["archive_bytes"] = archive(image_key).stat().st_size
        facts(image_key).write_text(json.dumps(known) + "\n")
    return archive(image_key)


@contextlib.contextmanager
def _one_at_a_time():
    """One build at a time on this machine: `make test` builds the image in the background
    (at the lowest CPU priority) while the other tests run, and a container test that needs it
    waits here for that build, which then runs at the waiter's priority: it is all the waiter
    waits for. The lock's holder writes its process group into the lock file (`main` makes one
    of its own, in its caller's session, where the kernel's autogroup lets nice values count)."""
    BUILD.mkdir(parents=True, exist_ok=True)
    with open(BUILD / ".lock", "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip()
            with contextlib.suppress(ValueError, OSError):  # (an older holder wrote nothing)
                os.setpriority(os.PRIO_PGRP, int(holder), os.getpriority(os.PRIO_PROCESS, 0))
            fcntl.flock(lock, fcntl.LOCK_EX)
        lock.truncate(0)
        lock.write(f"{os.getpgrp()}\n")
        lock.flush()
        yield


def ensure(verbose: bool = False, with_archive: bool = False) -> str:
    """The image of the current inputs in podman's storage, tagged NAME:<key> and NAME:latest:
    found there, loaded from its archive, or built; with_archive also saves its OCI archive if
    there is none (`make image` does; the hubs and the tests need only podman's storage, and
    the save compresses 1.8 GB). Returns the tag."""
    reason = why_not_here()
    if reason:
        raise ImageError(reason)
    with _one_at_a_time():
        return _ensure(verbose, with_archive)


def _ensure(verbose: bool, with_archive: bool) -> str:
    image_key = key()
    wanted = tag(image_key)
    built_seconds = None
    if podman("image", "exists", wanted, check=False).returncode != 0:
        if archive(image_key).is_file():
            podman("load", "-i", str(archive(image_key)), timeout=1800)
            if verbose:
                print(f"loaded {archive(image_key)}")
        else:
            built_seconds = build(image_key)
            if verbose:
                print(f"built {wanted} in {built_seconds:.0f} s")
    if with_archive and not archive(image_key).is_file():
        saved = save_archive(image_key)
        if verbose:
            print(f"saved {saved} ({saved.stat().st_size / 1e9:.2f} GB)")
    podman("tag", wanted, f"{NAME}:latest")
    return wanted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key", action="store_true", help="print the inputs' key and stop")
    parser.add_argument("--no-archive", action="store_true",
                        help="leave the image in podman's storage only (the tests need no more)")
    args = parser.parse_args(argv)
    if args.key:
        print(key())
        return 0
    with contextlib.suppress(PermissionError):  # (a session's leader keeps its group)
        os.setpgid(0, 0)  # a process group of its own, in the caller's session: see the lock
    try:
        print(ensure(verbose=True, with_archive=not args.no_archive))
    except ImageError as err:
        print(f"image: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The course's hub with each user's server in a container of the course image (podman).

jupyterhub_config.py calls `configure` when course.json says `"spawner": "containers"` (set by
`hubctl.py setup --spawner containers`); everything else of the hub (PAM logins, the class as
hub groups, the roster while it runs, the proxy on 127.0.0.1) is the same configuration.

- Servers: DockerSpawner through podman's Docker API (`podman system service`, run by the hub as
  a managed service on a root-only socket), the image deploy/container/image.py built, one
  container per user (removed when the server stops), with memory and CPU limits per role.
- Network: each hub's containers sit on a bridge of their own, named after the hub's folder
  (`mlmcourse-<8 hex digits>`) with the first free subnet of 10.89.64.0/18 (both chosen once,
  at set-up, and kept in course.json), so two container hubs run side by side on one machine
  (two courses, or a test beside a running class); their containers are named after it too.
  On the bridge the host offers the hub's API and ngshare at the gateway address, and nothing
  else of the hub listens there. netavark removes the bridge, and its address, with the hub's
  last container: the address is also on the host's loopback (a /32), so the hub's API and
  ngshare stay reachable from the host (`make hub-stop`) whatever the bridge does. Browsers
  reach the servers through the proxy, on 127.0.0.1.
- Users: every container runs as `jovyan` with a user id no account of the host holds (chosen
  at set-up, kept in course.json as "container_uid", checked again at every start; the image's
  own 1000 is a real account on many machines), so no host account can read the course folder
  or a home. Each container gets a passwd and group file that name that id `jovyan`.
- Disk: each user's home is <hub>/homes/<user> (that id, mode 700); staff also get the course
  folder <hub>/course at ~/<course_id>. No folder is shared with a student.
- Exchange: ngshare (deploy/hub/ngshare_service.py) as a hub service with its own database in
  state/; the roster says who teaches and who takes the course (ngshare_roster.py).
- Grading: in the staff's containers, which may create the namespaces the grading sandbox
  needs (see README "Where grading runs"); students' containers may not.
"""

from __future__ import annotations

import contextlib
import grp
import hashlib
import json
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

DEPLOY = Path(__file__).resolve().parent
REPO = DEPLOY.parents[1]
sys.path.insert(0, str(REPO / "deploy" / "container"))
import image  # noqa: E402  (deploy/container/image.py: the course image and podman's settings)
import ngshare_roster  # noqa: E402  (the exchange's database and files, named once)
from user_limits import LIMITS  # noqa: E402  (memory and CPU per role, declared once)

SUBNETS = [f"10.89.{n}.0/24" for n in range(64, 128)]  # where the hubs' bridges are made
# The containers' user ids: the first from here that no account, group or subordinate id range
# (/etc/subuid, /etc/subgid: other users' namespaces) of the host holds.
FIRST_USER_ID = 200_000
HOME_IN_CONTAINER = f"/home/{image.USER}"
ROLES_IN_IMAGE = "/opt/course/roles"
# Per role: what one server may use (the staff's autograde runs the grader's workers there).
# What the grading sandbox needs in the staff's containers: podman's default seccomp profile lets
# it make its user, mount, PID and network namespaces, but the paths podman masks in /proc
# forbid mounting the sandbox's own /proc ("Operation not permitted"); unmasked, it works. No
# capability or privilege is added, and students' containers keep every default restriction.
STAFF_SECURITY = ["unmask=/proc/*"]


class ContainerError(RuntimeError):
    """The container hub cannot run here; the message says why."""


def socket_path(hub: Path) -> Path:
    return hub / "state" / "podman.sock"


def podman(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["podman", *args], capture_output=True, text=True,
                          env=image.podman_env())
    if check and done.returncode != 0:
        raise ContainerError(f"podman {' '.join(args[:3])}: {done.stderr.strip()[-1500:]}")
    return done


def network_name(hub: Path) -> str:
    """The hub's bridge (and its containers' prefix): named after its folder, so it is the
    same at every start and differs from any other hub's on the machine."""
    return "mlmcourse-" + hashlib.sha1(str(hub.resolve()).encode()).hexdigest()[:8]


def used_subnets() -> set[str]:
    """The /24 subnets podman's networks use, and those of the host's own addresses."""
    names = podman("network", "ls", "--format", "{{.Name}}", check=False).stdout.split()
    shown = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True)
    used = {field.split("/")[0].rsplit(".", 1)[0] + ".0/24"
            for line in shown.stdout.splitlines() for field in line.split()
            if "/" in field and field[0].isdigit()}
    for name in names:
        shown = podman("network", "inspect", "--format",
                       "{{range .Subnets}}{{.Subnet}} {{end}}", name, check=False)
        used.update(shown.stdout.split())
    return used


def choose_network(hub: Path, course: dict | None = None) -> dict:
    """The hub's bridge: kept from course.json, else its name and the first subnet no podman
    network of the machine uses (set-up writes it to course.json)."""
    if course and course.get("network"):
        return course["network"]
    name = network_name(hub)
    if podman("network", "exists", name, check=False).returncode == 0:
        subnet = podman("network", "inspect", "--format",
                        "{{range .Subnets}}{{.Subnet}}{{end}}", name).stdout.strip()
    else:
        free = [net for net in SUBNETS if net not in used_subnets()]
        if not free:
            raise ContainerError("every subnet of 10.89.64.0/18 is taken by a podman network")
        subnet = free[0]
    return {"name": name, "subnet": subnet,
            "gateway": subnet.rsplit(".", 1)[0] + ".1"}


def subordinate_ranges() -> list[tuple[str, str, int, int]]:
    """(owner, table, first id, first id past the range) of /etc/subuid and /etc/subgid."""
    ranges = []
    for table in ("/etc/subuid", "/etc/subgid"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines():
                owner, start, count = (line.split(":") + ["", "", ""])[:3]
                if start.isdigit() and count.isdigit():
                    ranges.append((owner, table, int(start), int(start) + int(count)))
    return ranges


def id_holders(uid: int, ranges: list | None = None) -> list[str]:
    """Who on the host holds this id: an account, a group, a subordinate id range."""
    holders = []
    with contextlib.suppress(KeyError):
        holders.append(f"the account {pwd.getpwuid(uid).pw_name}")
    with contextlib.suppress(KeyError):
        holders.append(f"the group {grp.getgrgid(uid).gr_name}")
    for owner, table, start, end in subordinate_ranges() if ranges is None else ranges:
        if start <= uid < end:
            holders.append(f"{owner}'s range in {table}")
    return holders


def choose_user_id(course: dict | None = None) -> int:
    """The containers' user id: kept from course.json, else the first free one (set-up). A
    subordinate range is skipped whole: rootless podman gives each user 65,536 ids."""
    if course and course.get("container_uid"):
        return int(course["container_uid"])
    ranges = subordinate_ranges()
    uid = FIRST_USER_ID
    while id_holders(uid, ranges):
        ends = [end for _, _, start, end in ranges if start <= uid < end]
        uid = max(ends) if ends else uid + 1
    return uid


def check_user_id(uid: int) -> None:
    """At set-up and every start: an account made since would read every home and the
    course folder (solutions, the gradebook) as the containers' user."""
    holders = id_holders(uid)
    if holders:
        raise ContainerError(
            f"the containers run their users as id {uid}, which {', '.join(holders)} holds "
            "on this machine: it could read the course folder and every home. Give that "
            "account another id, or choose another for the hub (course.json's container_uid, "
            "then chown -R the hub's homes/ and course/ to it)")


def user_files(hub: Path, uid: int) -> tuple[Path, Path]:
    """passwd and group for the containers (mounted read-only over the image's): `jovyan` is
    the chosen id, so a terminal, `whoami` and Python's pwd name the user as the image does."""
    folder = hub / "state" / "container-users"
    folder.mkdir(exist_ok=True)
    passwd, group = folder / "passwd", folder / "group"
    passwd.write_text("root:x:0:0:root:/root:/bin/bash\n"
                      f"{image.USER}:x:{uid}:{uid}::{HOME_IN_CONTAINER}:/bin/bash\n"
                      "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
    group.write_text(f"root:x:0:\n{image.USER}:x:{uid}:\nnogroup:x:65534:\n")
    for path in (folder, passwd, group):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return passwd, group


def ensure_network(network: dict) -> None:
    """The hub's bridge with the gateway address on the host before any container runs (the
    hub listens there); podman attaches the containers to this same bridge."""
    name, gateway = network["name"], network["gateway"]
    if podman("network", "exists", name, check=False).returncode != 0:
        podman("network", "create", "--subnet", network["subnet"], "--gateway", gateway, name)
    bridge = podman("network", "inspect", "--format", "{{.NetworkInterface}}",
                    name).stdout.strip()
    shown = subprocess.run(["ip", "-br", "addr", "show", "dev", bridge], capture_output=True,
                           text=True)
    if shown.returncode != 0:
        subprocess.run(["ip", "link", "add", bridge, "type", "bridge"], check=True)
        shown = subprocess.run(["ip", "-br", "addr", "show", "dev", bridge],
                               capture_output=True, text=True)
    if f"{gateway}/" not in shown.stdout:
        subprocess.run(["ip", "addr", "add", f"{gateway}/24", "dev", bridge], check=True)
    subprocess.run(["ip", "link", "set", bridge, "up"], check=True)
    # netavark deletes the bridge with the last container, and the gateway address with it:
    # on the loopback too, the hub's API outlives it (the host reaches it; containers come
    # through the bridge, which has the address whenever a container is there).
    on_loopback = subprocess.run(["ip", "-br", "addr", "show", "dev", "lo"],
                                 capture_output=True, text=True).stdout
    if f"{gateway}/32" not in on_loopback:
        subprocess.run(["ip", "addr", "add", f"{gateway}/32", "dev", "lo"], check=True)


def remove_network(network: dict) -> None:
    """The hub's bridge, when the hub is gone (tests): podman's network, the host's link
    that ensure_network gave the gateway address, and that address on the loopback."""
    bridge = podman("network", "inspect", "--format", "{{.NetworkInterface}}",
                    network["name"], check=False).stdout.strip()
    podman("network", "rm", "-f", network["name"], check=False)
    if bridge:
        subprocess.run(["ip", "link", "del", bridge], capture_output=True)
    subprocess.run(["ip", "addr", "del", f"{network['gateway']}/32", "dev", "lo"],
                   capture_output=True)


def container_name(network: dict, user: str) -> str:
    return f"{network['name']}-{user}"


def prepare(hub: Path) -> str:
    """Before the hub starts: the containers' user id (no account may hold it), the image of
    the course as it is now (built, or loaded from its cache; course.json names it for the
    servers), matplotlib's font list for it, the network. Returns the image's tag."""
    course = json.loads((hub / "course.json").read_text())
    uid = choose_user_id(course)
    check_user_id(uid)  # (first: no image is built for a hub that may not start)
    tag = image.ensure()
    network = choose_network(hub, course)
    if (course.get("image"), course.get("network"), course.get("container_uid")) != (
            tag, network, uid):
        course.update(image=tag, network=network, container_uid=uid)
        (hub / "course.json").write_text(json.dumps(course, indent=2) + "\n")
    font_cache(hub, tag, uid)
    homes = sorted((hub / "homes").iterdir()) if (hub / "homes").is_dir() else []
    for folder in (course_folder(hub), *homes):  # (a hub set up when it was uid 1000)
        if folder.is_dir() and folder.stat().st_uid != uid:
            own_for_containers(hub, folder)
    ensure_network(network)
    return tag


def font_cache(hub: Path, tag: str, uid: int) -> Path:
    """matplotlib's font list for this image, made once (one container run, a few seconds):
    every new home gets a copy, or a student's first plot would print "Matplotlib is building
    the font cache" on stderr, and Validate reports a cell that writes to stderr as failed."""
    folder = hub / "state" / f"matplotlib-{tag.rpartition(':')[2]}"
    if not folder.is_dir():
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        os.chown(partial, uid, uid)
        podman("run", "--rm", "--network", "none", "--user", f"{uid}:{uid}",
               "-v", f"{partial}:/cache",
               "-e", "MPLCONFIGDIR=/cache", tag, "python", "-c",
               "import matplotlib.font_manager")
        partial.rename(folder)
    return folder


def ensure_home(hub: Path, user: str, fonts: Path | None = None,
                student: bool = False) -> Path:
    """<hub>/homes/<user>, owned by the containers' user (a container sees it as its home), with
    matplotlib's font list in place and, for a student, the Assignment List as the first view."""
    home = hub / "homes" / user
    if not home.is_dir():
        home.mkdir(parents=True)
        os.chmod(home, 0o700)
        if fonts is not None and fonts.is_dir():
            shutil.copytree(fonts, home / ".cache" / "matplotlib")
        if student:
            open_on_the_assignment_list(home / ".jupyter" / "lab" / "workspaces")
        own_for_containers(hub, home)
    return home


ASSIGNMENT_LIST = "nbgrader-assignment-list:nbgrader-assignment-list"  # its restorer's key


def open_on_the_assignment_list(workspaces: Path) -> None:
    """JupyterLab's default workspace with nbgrader's Assignment List in the main area: the
    first lab a student sees (from a launch, a login) is where the assignment is fetched. Later
    layouts are the student's own (JupyterLab saves them over this one)."""
    from jupyterlab_server.workspaces_handler import WORKSPACE_EXTENSION, slugify

    layout = {"data": {"layout-restorer:data": {"main": {
        "dock": {"type": "tab-area", "currentIndex": 0, "widgets": [ASSIGNMENT_LIST]},
        "current": ASSIGNMENT_LIST}}, ASSIGNMENT_LIST: {"data": {}}},
        "metadata": {"id": "default"}}
    workspaces.mkdir(parents=True, exist_ok=True)
    (workspaces / f"{slugify('default')}{WORKSPACE_EXTENSION}").write_text(json.dumps(layout))


def course_folder(hub: Path) -> Path:
    return hub / "course"


def user_id(hub: Path) -> int:
    """The containers' user id of this hub (course.json; set-up and every start choose it)."""
    return int(json.loads((hub / "course.json").read_text())["container_uid"])


def own_for_containers(hub: Path, path: Path) -> None:
    """Files the hub wrote for the servers (course folder, homes) belong to the containers'
    user."""
    uid = user_id(hub)
    subprocess.run(["chown", "-R", f"{uid}:{uid}", str(path)], check=True)


def remove_containers(prefix: str) -> None:
    """Stop and remove the hub's user containers (tests; a hub's stop leaves them running):
    those whose name starts with `prefix` (container_name(network, "")), no other hub's."""
    names = podman("ps", "-a", "--format", "{{.Names}}", check=False).stdout.split()
    for name in names:
        if name.startswith(prefix):
            podman("rm", "-f", "-t", "2", name, check=False)


def configure(c, hub: Path, course: dict, role, ports: dict) -> None:
    """The spawner and the services of the container hub (c: the hub's traitlets config)."""
    course_id = course["course_id"]
    course_in_container = f"{HOME_IN_CONTAINER}/{course_id}"
    network = course["network"]  # (prepare, before every start, writes it to course.json)
    address = f"http://{network['gateway']}"
    # The hub's API where containers reach it; the proxy (on the host) uses the same address.
    c.JupyterHub.hub_bind_url = f"{address}:{ports['hub']}"
    ngshare_url = f"{address}:{ports['ngshare']}"
    ngshare_db, ngshare_files = ngshare_roster.locations(hub)
    c.JupyterHub.services += [
        {"name": "podman", "command": [
            "podman", "system", "service", "--time=0", f"unix://{socket_path(hub)}"],
         "environment": {"CONTAINERS_CONF": str(image.CONTAINERS_CONF),
                         "PATH": os.environ.get("PATH", "/usr/bin:/bin")}},
        {"name": "ngshare", "url": ngshare_url, "command": [
            sys.executable, str(DEPLOY / "ngshare_service.py"),
            "--database", ngshare_db, "--storage", ngshare_files, "--admins", "hubctl"]},
    ]
    c.JupyterHub.spawner_class = "dockerspawner.DockerSpawner"
    c.DockerSpawner.client_kwargs = {"base_url": f"unix://{socket_path(hub)}"}
    c.DockerSpawner.image = course["image"]
    c.DockerSpawner.pull_policy = "never"  # built here (deploy/container/image.py), never pulled
    c.DockerSpawner.network_name = network["name"]
    c.DockerSpawner.use_internal_ip = True
    c.DockerSpawner.remove = True  # the home folder stays; the container goes with the server
    c.DockerSpawner.notebook_dir = HOME_IN_CONTAINER
    uid = int(course["container_uid"])  # (no account of the host holds it: prepare checks)
    c.DockerSpawner.extra_create_kwargs = {"user": f"{uid}:{uid}"}
    passwd, group = user_files(hub, uid)
    # after the hub's bridge, so two hubs' containers of one user differ (Unix names are safe)
    c.DockerSpawner.name_template = container_name(network, "{raw_username}")
    c.Spawner.default_url = "/lab"
    # a class logging in at once on a small machine: ten containers start together
    c.Spawner.start_timeout = 300
    c.Spawner.http_timeout = 300

    def prepare_container(spawner) -> None:
        user = spawner.user.name
        staff = role(spawner) == "instructor"
        fonts = hub / "state" / f"matplotlib-{course['image'].rpartition(':')[2]}"
        volumes = {str(ensure_home(hub, user, fonts, student=not staff)): HOME_IN_CONTAINER}
        spawner.read_only_volumes = {str(passwd): "/etc/passwd", str(group): "/etc/group"}
        if staff:
            volumes[str(course_folder(hub))] = course_in_container
        spawner.volumes = volumes
        limits = LIMITS["instructor" if staff else "student"]
        spawner.mem_limit, spawner.cpu_limit = limits["mem"], limits["cpus"]
        spawner.extra_host_config = {"security_opt": STAFF_SECURITY} if staff else {}
        spawner.environment = {
            "HOME": HOME_IN_CONTAINER,  # (the image's passwd does not know the id it runs as)
            "OMP_NUM_THREADS": "1",  # one thread per kernel: many users share the cores
            "MLMCOURSE_COURSE_ID": course_id,
            "MLMCOURSE_COURSE_DIR": course_in_container,
            "MLMCOURSE_NGSHARE_URL": f"{ngshare_url}/services/ngshare/",
            "JUPYTER_CONFIG_DIR": f"{ROLES_IN_IMAGE}/{'instructor' if staff else 'student'}",
            "JUPYTERLAB_SETTINGS_DIR": f"{HOME_IN_CONTAINER}/.jupyter/lab/user-settings",
            "JUPYTERLAB_WORKSPACES_DIR": f"{HOME_IN_CONTAINER}/.jupyter/lab/workspaces",
        }

    c.Spawner.pre_spawn_hook = prepare_container


def why_not_here() -> str | None:
    """Why the container hub cannot run here (None when it can)."""
    reason = image.why_not_here()
    if reason:
        return reason
    if shutil.which("ip") is None:
        return "the `ip` command is missing (Debian package iproute2)"
    return None

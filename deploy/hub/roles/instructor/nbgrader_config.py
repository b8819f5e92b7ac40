"""nbgrader for the instructor (and TAs) on the course's hub.

The course directory is the instructor's ~/<course_id> (made by `hubctl.py setup`; the hub
names it in MLMCOURSE_COURSE_DIR, for TAs too); its own nbgrader_config.py
is the repository's, so the formgrader's Autograde button and `nbgrader autograde` grade
through the course's sandboxed engine and write the course's feedback, exactly as `make grade`.
"""

import os

c = get_config()  # noqa: F821  (provided by traitlets when nbgrader loads this file)

course = os.environ["MLMCOURSE_COURSE_DIR"]
load_subconfig(os.path.join(course, "nbgrader_config.py"))  # noqa: F821
c.CourseDirectory.root = course
c.CourseDirectory.course_id = os.environ["MLMCOURSE_COURSE_ID"]
# An absolute gradebook path: the formgrader runs in the home folder, not in the course.
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(course, "gradebook.db")
# The exchange: ngshare on a hub of containers (no shared disk; the hub sets its address), else
# the hub's shared folder.
if os.environ.get("MLMCOURSE_NGSHARE_URL"):
    from mlmcourse.exchange.ngshare import configure as use_ngshare

    use_ngshare(c)
else:
    c.Exchange.root = os.environ["MLMCOURSE_EXCHANGE"]
# TAs share the course folder through its group: nbgrader keeps what it writes there (release,
# submitted, autograded, feedback) group-writable.
c.CourseDirectory.groupshared = True

# Grading from a terminal (`nbgrader autograde`, `collect`, `generate_feedback`...) logs to the
# hub's logs/grading.log as well, which only staff can read; the formgrader's buttons log there
# through the server (roles/instructor/jupyter_server_config.py).
logs = os.environ.get("MLMCOURSE_HUB_LOGS")
if logs:
    user = os.environ.get("JUPYTERHUB_USER", "?")
    for app in ("AutogradeApp", "CollectApp", "ZipCollectApp", "GenerateAssignmentApp",
                "ReleaseAssignmentApp", "GenerateFeedbackApp", "ReleaseFeedbackApp", "ExportApp"):
        c[app].logfile = os.path.join(logs, "grading.log")
        # who ran it, and when (the same shape as the formgrader's lines there)
        c[app].log_format = f"[%(asctime)s {user} %(levelname)s] %(name)s: %(message)s"
        c[app].log_datefmt = "%Y-%m-%d %H:%M:%S%z"

"""nbgrader for a student on the course's hub: one course, the class's exchange."""

import os

c = get_config()  # noqa: F821  (provided by traitlets when nbgrader loads this file)

c.CourseDirectory.course_id = os.environ["MLMCOURSE_COURSE_ID"]
# The exchange: ngshare on a hub of containers (no shared disk; the hub sets its address), else
# the hub's shared folder.
if os.environ.get("MLMCOURSE_NGSHARE_URL"):
    from mlmcourse.exchange.ngshare import configure as use_ngshare

    use_ngshare(c)
else:
    c.Exchange.root = os.environ["MLMCOURSE_EXCHANGE"]
# Validate reports the visible checks too (the release's graded cells hold only a docstring),
# and a hung cell does not hold the student's Validate button forever.
c.Validator.validate_all = True
c.Execute.timeout = 120
c.Execute.interrupt_on_timeout = True
# nbgrader raises when a cell's output arrives later than iopub_timeout after its reply, and
# nbclient's default is 4 s: on a busy hub (or CI) Validate failed with "Timeout waiting for
# IOPub output" on a cell that had run fine. Wait for the output; `timeout` still bounds a cell.
c.Execute.iopub_timeout = 60

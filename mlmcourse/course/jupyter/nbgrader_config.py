"""nbgrader settings for everyone who uses the course's environment, wherever they work.

`python -m mlmcourse install-config` (run by `make lab`, `make test` and the course image) copies
this file to `{sys.prefix}/etc/jupyter/`, a folder nbgrader always reads. So Validate behaves
the same in a student's home on the hub, in the `make lab` kit and in a copy of the release
anywhere on the machine, with no course nbgrader_config.py beside the notebook. A course
folder's own nbgrader_config.py and a user's ~/.jupyter still win where they set the same thing.
"""

c = get_config()  # noqa: F821  (provided by traitlets when nbgrader loads this file)

# Validate reports the visible checks too: they are read-only cells, not graded ones, and the
# release's graded cells hold only their public part.
c.Validator.validate_all = True
# A hung cell must not hold the Validate button forever; a dead kernel is reported, not retried.
c.Execute.timeout = 120
c.Execute.interrupt_on_timeout = True
# nbgrader raises when a cell's output arrives later than iopub_timeout after its reply, and
# nbclient's default is 4 s: on a busy hub (or CI) Validate failed with "Timeout waiting for
# IOPub output" on a cell that had run fine. Wait for the output; `timeout` still bounds a cell.
c.Execute.iopub_timeout = 60
c.Execute.execute_retries = 0
# nbgrader cuts every line of a failed cell's error at this width with "..."; a PyTorch error
# (the student's own, raised in their backward) is often one line of 100-140 characters, and its
# cause sits at the end ("got Float for the destination and Double for the source").
c.Validator.width = 150

"""The school's LMS and back (LTI 1.3): the tool's keys, and grades back through LTI AGS."""

"""Runs inside bubblewrap as the student (uid 65534): the student process and its fork
server. Imports nothing of the trusted side."""

"""Grading: the sandboxed engine, nbgrader's autograde plugged into it, the class, feedback."""

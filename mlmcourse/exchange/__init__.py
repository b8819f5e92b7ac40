"""nbgrader's exchange without a shared disk: the course's classes for ngshare (see ngshare.py)."""

"""A whole class: the Dask coordinator, the TA's grading run, a new class folder."""

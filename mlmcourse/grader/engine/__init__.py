"""The grader's own process, one submission at a time: each notebook rebuilt from source/,
sliced to the cells a score depends on, and run in a trusted kernel."""

"""Starting and stopping processes: the sandbox (bubblewrap), the fork servers that start the
trusted kernels and the student processes."""

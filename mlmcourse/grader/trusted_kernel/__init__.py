"""The trusted kernel: the hidden tests run here and call the student's functions through
proxies that run them in the sandboxed student process."""

"""mtheap-bench: runs allocator workloads under several mallocs and reports the results."""

__version__ = "0.1.0"

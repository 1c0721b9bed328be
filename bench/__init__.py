"""lakegraph's benchmarks. The package ``pipelines`` is imported first: it sets Arrow's allocator
options, which must be in place before pyarrow loads (see its text)."""
import pipelines  # noqa: F401

"""Diagnose failed GPU/ML jobs on HPC clusters from their logs.

The version has one source, pyproject.toml; it is read from the installed
package's metadata only when asked for, since importlib.metadata is slow to
import and the command line starts on every job failure.
"""


def __getattr__(name):
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version
        try:
            return version("hpc-gpu-troubleshooter")
        except PackageNotFoundError:  # running from a source tree that was never installed
            return "0+unknown"
    raise AttributeError(name)

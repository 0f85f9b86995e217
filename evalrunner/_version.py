"""The installed package's version, for the files we write (manifests, baselines).

Its own module so that writers deep in the package need not import the top
package (which imports everything).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("evalrunner")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

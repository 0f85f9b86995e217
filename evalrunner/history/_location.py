"""Where a run history lives: a local path or any fsspec URL, opened, and its failures
(refused, read-only, no such bucket) as one ConfigError naming the location."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from evalrunner.errors import ConfigError, EvalrunnerError

__all__ = ["is_local", "open_root", "remote", "unusable"]


def open_root(root: str) -> tuple[Any, str]:
    """The fsspec filesystem and base path of a history location; a bad one is a ConfigError."""
    import fsspec

    try:
        fs, base = fsspec.core.url_to_fs(root)
    except (ValueError, ImportError) as exc:
        raise ConfigError(
            f"history location {root!r} cannot be used: {exc} (a path, or an fsspec URL whose package is installed, e.g. s3fs for s3://)"
        ) from None
    except Exception as exc:  # some protocols (ftp) connect as their filesystem is made
        raise unusable(root, "reached", exc) from None
    return fs, str(base)


def unusable(root: str, doing: str, exc: Exception) -> ConfigError:
    """The location's failure at ``doing`` as a ConfigError that offers another."""
    said = str(exc) or "its protocol does not support it"
    return ConfigError(
        f"history location {root!r} cannot be {doing}: {type(exc).__name__}: {said} "
        "(pass another --history, or --no-history)"
    )


def is_local(fs: Any) -> bool:
    """Whether an fsspec filesystem is the local disk."""
    protocols = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
    return "file" in protocols


@contextlib.contextmanager
def remote(root: str, doing: str) -> Iterator[None]:
    """A remote location's failure (refused, read-only, no such bucket) as one ConfigError.

    fsspec's backends raise what their libraries raise (OSError, NotImplementedError for
    a read-only protocol, a cloud SDK's own errors), so everything but our own errors is
    taken as the location's answer.
    """
    try:
        yield
    except EvalrunnerError:
        raise
    except Exception as exc:
        raise unusable(root, doing, exc) from None

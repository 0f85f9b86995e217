"""The process's heap: the cyclic garbage collector, the objects a process keeps for its whole
life, and where Arrow's buffers come from.

litellm and the SDKs it imports build about a million objects that live as long as
the process. Each full pass of the collector walks all of them again, so a process
that imports litellm pays for them three times over: while importing (the collector
runs many times during the import), in every full pass afterwards, and once more at
exit. Figures: ``/usr/bin/time python -c "import litellm"`` against the same with
the collector paused, and with ``gc.freeze()`` last; ``benchmarks/bench_pr.py`` and
``benchmarks/bench_runner.py`` for what that gives a PR check and a night.

- :func:`collector_paused`: around a big import (litellm, an agent's module); what a
  big one built is frozen afterwards.
- :func:`heap_frozen`: around work that keeps what it started with (a night, the
  rendering of a report).
- :func:`exit_without_collecting`: a process that made a big import leaves what it
  holds at exit to the operating system.
- :func:`arrow_on_malloc`: around reading a long history (the report), so freed Arrow
  buffers go back to the system instead of waiting in pyarrow's pool.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import sys
from collections.abc import Iterator

FREEZE_AT = 100_000
"""Objects a paused block may leave before they are frozen: about 30 ms of every full pass
of the collector (the openai SDK's import leaves 130,000, litellm's 580,000, a test module
a few thousand)."""
_frozen_by_imports = 0
"""How many objects :func:`collector_paused` froze (0: none). A freeze no bigger than that
is ours; a bigger one is the process's own (a forking server's), and is left alone."""


def _ours() -> bool:
    """Is whatever is frozen ours (or nothing)? (Frozen objects that die leave the count.)"""
    return gc.get_freeze_count() <= _frozen_by_imports


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection while a big package is imported, and what it built kept out of
    the collector's way afterwards.

    The import's objects nearly all live as long as the process, and every full pass the
    collector made during the import walked them again: about a quarter of litellm's import
    CPU (3.5 s with it, 2.9 s paused, exit included). Left to the collector once it runs
    again, the same objects were walked three more times in a PR check's first golden
    test (a young pass, a middle one, a full one: 0.5 s of CPU for litellm). So a block
    that left more than :data:`FREEZE_AT` objects freezes the heap until something gives
    it back (the end of a night, a pytest session's last collections:
    :func:`unfreeze_imports`); an object that turns into cyclic garbage meanwhile waits
    for that (litellm's import itself leaves about 2,000 such objects). A process that
    turned the collector off itself keeps it off. A process that made such an import exits
    without collecting (:func:`exit_without_collecting`).
    """
    global _frozen_by_imports
    exit_without_collecting()
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        # While the collector is off, the youngest generation's count is every object the
        # block allocated and kept: a measure of what a full pass would walk again.
        if gc.get_count()[0] >= FREEZE_AT and _ours():
            gc.freeze()
            _frozen_by_imports = gc.get_freeze_count()
        gc.enable()


def unfreeze_imports() -> None:
    """Give what a big import froze back to the collector (nothing if it froze nothing).

    For a pytest session before its last collections, which report exceptions raised in
    finalizers: an object alive when litellm was imported and garbage since is found
    there, as in a session that never froze."""
    global _frozen_by_imports
    if _frozen_by_imports and _ours():
        gc.unfreeze()
        _frozen_by_imports = 0


@contextlib.contextmanager
def heap_frozen() -> Iterator[None]:
    """What the process holds when the block starts kept out of the collector's way until
    it ends.

    For a night: its modules and their tables live all night, and each full collection
    walked them again. Unfrozen at the end, so what died in the meantime is collected as
    before (a big import's freeze with it: its objects go back to the collector); a
    process that froze its own heap (a forking server) is left as it is.
    """
    global _frozen_by_imports
    if not _ours():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
        _frozen_by_imports = 0


@functools.cache
def exit_without_collecting() -> None:
    """At exit, leave what the process still holds to the operating system.

    The interpreter's last collection walks every object still alive: a process that
    imported litellm (collector paused) took 2.9 s of CPU from start to exit, 1.6 s with
    ``gc.freeze()`` as its last statement. The freeze is registered when a command or the
    first big import starts, so every exit handler registered after that runs before it
    (last in, first out); pytest's own last collection, which reports exceptions raised in
    finalizers, is over before any exit handler runs. Python does not promise to finalize
    objects still alive at exit, so nothing a program may rely on is skipped.
    """
    atexit.register(gc.freeze)


@contextlib.contextmanager
def arrow_on_malloc() -> Iterator[None]:
    """Arrow's buffers taken from the C library's allocator for the duration of the block.

    pyarrow's default pool (mimalloc) keeps the pages a freed buffer used for the next
    one, per thread. Reading a year's history file after file, column after column, that
    kept about 60 MB more at the report's peak than malloc, which hands a large block back
    to the system as soon as it is freed (``benchmarks/bench_report.py``: the whole
    process's peak). Restored after the block: a buffer remembers the pool it came from,
    and the rest of a process that calls the report from Python keeps its own choice.
    Nothing happens when pyarrow is not imported (a history of JSON files).
    """
    arrow = sys.modules.get("pyarrow")
    if arrow is None:
        yield
        return
    before = arrow.default_memory_pool()
    arrow.set_memory_pool(arrow.system_memory_pool())
    try:
        yield
    finally:
        arrow.set_memory_pool(before)

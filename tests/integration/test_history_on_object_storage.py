"""The run history on object storage (issue 57): a local S3-compatible server (moto's, on
loopback), real `evalrunner run` nights appending to it at the same time, and the
report, `plan`'s evidence read and a night's own read all taking it from there.

The location is what a team passes: ``--history s3://bucket/path``, with s3fs installed
(the ``s3`` extra) and the endpoint in botocore's own ``AWS_ENDPOINT_URL``.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_endpoint import FakeEndpoint
from night_process import EVALRUNNER, respond, start, suite_file

pytest.importorskip("s3fs", reason="the s3 extra: pip install -e '.[s3]'")
moto_server = pytest.importorskip("moto.server", reason="moto[server] (the dev extra)")


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A local S3-compatible server with an empty bucket; the environment points at it."""
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    # botocore reads these; fake credentials, as the server checks none. The night's
    # subprocesses inherit them through fake_env (a copy of os.environ).
    for name, value in {
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()
    # moto keeps its buckets per process, across servers: a bucket of each test's own.
    bucket = f"team-evals-{uuid.uuid4().hex[:12]}"
    s3fs.S3FileSystem().mkdir(bucket)
    try:
        yield f"s3://{bucket}/evalrunner"
    finally:
        server.stop()


def test_two_nights_append_to_s3_at_once_and_the_report_reads_both(tmp_path: Path, s3: str) -> None:
    suite_file(tmp_path)
    with FakeEndpoint(responder=respond) as ep:
        # A suite sharded across two CI machines, both writing as they finish.
        shard = ("--suite", "resumable", "--runs", "3", "--no-compare", "--history", s3)
        nights = [
            start(ep, tmp_path, *shard, "--scenario", name, "--out", str(tmp_path / name))
            for name in ("capital", "population")
        ]
        done = [night.communicate(timeout=120) for night in nights]
    for night, (_, err) in zip(nights, done, strict=True):
        assert night.returncode == 0, err[-2000:]
        assert f"history: {s3}/resumable/" in err  # where each night landed, said
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()
    files = s3fs.S3FileSystem().ls(f"{s3.removeprefix('s3://')}/resumable")
    assert len(files) == 2 and all(f.endswith(".parquet") for f in files)

    report = _report(s3, tmp_path / "report")
    assert report.returncode == 0, report.stderr[-2000:]
    # Both shards' runs are read: one night where they finished within the same second,
    # two nights (the latter shown, the other cell "not in the latest night") otherwise.
    summary = (tmp_path / "report" / "summary.md").read_text()
    rows = [line for line in summary.splitlines() if line.startswith("| ") and "fake" in line]
    assert rows and all("| 3 |" in row for row in rows), summary[:2000]
    shown = "\n".join(rows)
    for scenario in ("capital", "population"):
        assert scenario in shown or f"{scenario} × openai/fake (last run" in summary, summary


def test_a_history_location_in_a_bucket_that_does_not_exist_is_one_line(
    tmp_path: Path, s3: str
) -> None:
    missing = f"s3://no-such-bucket-{os.getpid()}/evalrunner"
    report = _report(missing, tmp_path / "report")
    assert report.returncode == 2, report.stderr[-2000:]
    [line] = [x for x in report.stderr.splitlines() if x.startswith("error:")]
    assert missing in line and "Traceback" not in report.stderr


def _report(history: str, out: Path) -> subprocess.CompletedProcess[str]:
    """`evalrunner report` of ``history`` as a process, in this environment (the server's)."""
    return subprocess.run(
        [EVALRUNNER, "report", "--history", history, "--out", str(out)],
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=120,
    )

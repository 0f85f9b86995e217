"""Scenarios with ``command:``: subprocess agents on the official SDKs (Python and Node.js)
run live in a suite through one capture proxy per night, against a loopback fake endpoint.

Each run's trajectory is the proxy's; the outcome comes from the process's
exit, its stdout and the proxy's view of the upstream.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fake_endpoint import FakeEndpoint, Fault, Reply
from paths import REPO
from runner_agents import FAKE_KEY, fake_pool, write_suite
from sdk_agents import content_responder
from suite_runs import run_suite

from evalrunner.live._driver import RunReport
from evalrunner.suite._loader import load_suite

SUPPORT = REPO / "tests" / "support"
NODE_AGENT = REPO / "examples" / "node_agent" / "agent.mjs"
TASK = "Capitals of: France, Japan"
CHECKS = {"answer_contains": ["Paris", "Tokyo"], "tools_used": ["lookup"]}
SECRET = "sk-proj-SECRETabcdef0123456789abcdef"


def py_command(kind: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": kind,
        "command": [sys.executable, str(SUPPORT / "sdk_agent_main.py"), kind, "{task}"],
        "env": {"PYTHONPATH": str(SUPPORT)},
        "input": TASK,
        "tools": ["lookup"],
        "checks": CHECKS,
        **extra,
    }


def node_available() -> bool:
    return shutil.which("node") is not None and (NODE_AGENT.parent / "node_modules").is_dir()


needs_node = pytest.mark.skipif(
    not node_available(),
    reason="node or examples/node_agent/node_modules missing: run `npm ci --prefix examples/node_agent`",
)


def run(
    tmp_path: Path, api_base: str, scenarios: list[dict[str, Any]], **settings: Any
) -> RunReport:
    # A Python process importing two SDKs takes a second or more on a loaded machine.
    settings.setdefault("timeout_s", 30)
    suite = load_suite(write_suite(tmp_path / "suites", "cmd", scenarios, **settings))
    return asyncio.run(
        run_suite(
            suite,
            out=tmp_path / "out",
            pool=fake_pool(api_base),
            progress_stream=io.StringIO(),
        )
    )


def outcomes(report: RunReport) -> dict[str, list[tuple[str, str | None]]]:
    found: dict[str, list[tuple[str, str | None]]] = {}
    for r in sorted(report.records, key=lambda r: r.run_id):
        found.setdefault(r.scenario, []).append((r.outcome, r.reason))
    return found


SDK_KINDS = [
    "openai",
    "openai-streamed",
    "openai-async",
    "openai-async-streamed",
    "anthropic",
    "anthropic-streamed",
]


def test_sdk_command_agents_run_n_times_and_pass_with_the_proxys_trajectory(
    tmp_path: Path,
) -> None:
    with FakeEndpoint(responder=content_responder) as ep:
        report = run(tmp_path, ep.api_base, [py_command(k) for k in SDK_KINDS], runs=2)
    found = outcomes(report)
    assert set(found) == set(SDK_KINDS)
    for kind in SDK_KINDS:
        assert found[kind] == [("passed", None)] * 2, kind
    for record in report.records:
        # Task -> parallel lookups -> answer: two model calls, two tool calls, every run.
        assert (record.llm_calls, record.tool_calls, record.tools) == (2, 2, ["lookup", "lookup"])
        assert record.final_answer == "Capitals: Paris, Tokyo."
    # Two runs per scenario through one proxy, none mixed: 2 upstream calls each.
    assert len(ep.requests) == 2 * 2 * len(SDK_KINDS)
    runs = sorted((tmp_path / "out" / "runs").rglob("*.json"))
    trajectory = json.loads(runs[0].read_text(encoding="utf-8"))
    assert "trajectory" in trajectory or "steps" in json.dumps(trajectory)


def test_prompt_cache_tokens_the_endpoint_reports_are_recorded_on_the_command_path(
    tmp_path: Path,
) -> None:
    """Issue 53, row 17: cached prompt tokens reach the run's record (and its metric)
    through the proxy, whichever SDK the agent speaks; unreported ones stay unreported."""

    def caching(body: dict[str, Any], n: int) -> Reply:
        reply = content_responder(body, n)
        return dataclasses.replace(reply, prompt_tokens=1000, cache_read_tokens=300)

    pricing = {
        "openai/fake": {
            "input_per_million": 1.0,
            "output_per_million": 2.0,
            "cached_input_per_million": 0.1,
        }
    }
    with FakeEndpoint(responder=caching) as ep:
        report = run(
            tmp_path, ep.api_base, [py_command("anthropic"), py_command("openai")], pricing=pricing
        )
    assert [(r.scenario, r.outcome) for r in sorted(report.records, key=lambda r: r.scenario)] == [
        ("anthropic", "passed"),
        ("openai", "passed"),
    ]
    for record in report.records:
        assert record.cache_read_tokens == 600  # two calls of 300
        assert record.cache_write_tokens is None  # not reported: not zero
        # Issue 55: priced on the command path too, its cached tokens at their own rate.
        plain = record.prompt_tokens - 600
        expected = (plain * 1.0 + 600 * 0.1 + record.completion_tokens * 2.0) / 1e6
        assert record.cost_usd is not None and abs(record.cost_usd - expected) < 1e-8


@needs_node
def test_node_agent_on_the_openai_npm_package_runs_live_in_a_suite(tmp_path: Path) -> None:
    node = {
        "id": "node",
        "command": ["node", str(NODE_AGENT), "{task}"],
        "input": TASK,
        "tools": ["lookup"],
        "checks": CHECKS,
    }
    streamed = {**node, "id": "node-streamed", "env": {"AGENT_STREAM": "1"}}
    with FakeEndpoint(responder=content_responder) as ep:
        report = run(tmp_path, ep.api_base, [node, streamed], runs=2, timeout_s=30)
    found = outcomes(report)
    assert found == {"node": [("passed", None)] * 2, "node-streamed": [("passed", None)] * 2}
    assert all(r.tools == ["lookup", "lookup"] for r in report.records)


def test_exit_codes_timeouts_and_missing_calls_each_get_their_outcome(tmp_path: Path) -> None:
    scenarios = [
        py_command("crash"),
        py_command("hang", timeout_s=3),
        py_command("no-calls", checks={"answer_contains": ["Paris"]}),
        py_command("plain-last-line"),
    ]
    with FakeEndpoint(responder=content_responder) as ep:
        report = run(tmp_path, ep.api_base, scenarios, timeout_s=20)
    found = outcomes(report)
    (crash,) = found["crash"]
    assert crash[0] == "crashed"
    assert crash[1] is not None and "exited with status 3" in crash[1]
    assert "ValueError: the agent broke" in crash[1]  # the tail of stderr
    # It answered, then slept in its own code: the timeout is the agent's.
    assert found["hang"] == [
        ("crashed", "timed out in the agent after 3 s (no model call was under way)")
    ]
    (none,) = found["no-calls"]
    assert none[0] == "infra_error" and none[1] is not None
    assert none[1].startswith("no model calls")
    assert found["plain-last-line"] == [("passed", None)]  # the last stdout line is the answer
    crashes = dict(report.crashes)
    assert "the agent broke" in crashes["crash/openai_fake/0"]
    # The timed-out one is listed too (before: only in its progress line, a review).
    hung = crashes["hang/openai_fake/0"]
    assert hung == "timed out in the agent after 3 s (no model call was under way)"


@pytest.mark.parametrize(
    ("fault", "kind", "shown"),
    [
        (Fault("503"), "openai", "HTTP 503"),
        (Fault("429", retry_after=0.01), "anthropic", "HTTP 429"),
        (Fault("reset"), "openai-async", "connection"),
        (Fault("truncated_stream"), "openai-streamed", ""),
        (Fault("empty_choices"), "openai", "no usable choice"),
        (Fault("error_body"), "openai-streamed", ""),
    ],
    ids=["503", "429", "reset", "truncated-stream", "empty-choices", "error-body"],
)
def test_an_upstream_that_stays_down_is_infra_error_not_a_crash(
    tmp_path: Path, fault: Fault, kind: str, shown: str
) -> None:
    # The agent gets an error from the proxy after its retries and exits 1: the proxy's
    # view (an infrastructure fault) decides, not the exit code.
    with FakeEndpoint(default=fault) as ep:
        report = run(tmp_path, ep.api_base, [py_command(kind)], runs=1)
        attempts = len(ep.requests)
        api_base = ep.api_base
    ((outcome, reason),) = outcomes(report)[kind]
    assert outcome == "infra_error", reason
    assert reason is not None and shown in reason, reason
    # Where, as in process (before: "UpstreamHTTPError (HTTP 503): ...", a review).
    assert f" from openai/fake at {api_base}: " in reason, reason
    assert not report.crashes
    assert attempts == 3  # the suite's retry policy: 3 attempts, no SDK retries on top


def test_a_hung_upstream_call_is_abandoned_after_request_timeout_s_and_retried_in_the_run(
    tmp_path: Path,
) -> None:
    # As in process: an attempt that hears nothing for request_timeout_s (2 s) is given
    # up and retried. Before, the proxy waited for the attempt's whole deadline (60 s
    # here; 4 x request_timeout_s by default), past the run's own 20 s, so one hung
    # request cost the run.
    def respond(body: dict[str, Any], n: int) -> Reply | Fault:
        return Fault("hang") if n == 0 else content_responder(body, n)

    retry = {"max_attempts": 2, "backoff_s": 0.01, "request_timeout_s": 2, "attempt_deadline_s": 60}
    with FakeEndpoint(responder=respond) as ep:
        report = run(
            tmp_path, ep.api_base, [py_command("openai")], runs=1, timeout_s=20, retry=retry
        )
        deadline = time.monotonic() + 5
        while ep.abandoned < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        abandoned = list(ep.abandoned_after)
    assert outcomes(report)["openai"] == [("passed", None)], (len(ep.requests), abandoned)
    assert len(abandoned) == 1 and 1.5 < abandoned[0] < 4, abandoned


def test_a_run_that_times_out_during_a_hung_upstream_call_logs_no_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    # The proxy's request for the run was still waiting on the upstream when the run timed
    # out: finishing the run cancels it and the agent, if still there, gets a 503. Before,
    # the night's proxy waited 5 s at shutdown and uvicorn logged the cancelled request's
    # traceback ("Exception in ASGI application").
    # 8 s: the agent process (two SDKs to import) reaches the proxy well within it.
    started = time.monotonic()
    with FakeEndpoint(default=Fault("hang")) as ep:
        report = run(tmp_path, ep.api_base, [py_command("openai")], runs=1, timeout_s=8)
    took = time.monotonic() - started
    ((outcome, reason),) = outcomes(report)["openai"]
    assert (outcome, reason) == ("infra_error", "run timed out after 8 s"), reason
    logged = caplog.text + "".join(capfd.readouterr())
    assert "Traceback" not in logged and "Exception in ASGI application" not in logged, logged
    assert took < 8 + 4, took  # no graceful-shutdown wait for a request nobody awaits


def test_secrets_in_the_task_and_the_upstream_key_never_reach_the_results(tmp_path: Path) -> None:
    scenario = py_command("openai", input=f"Capitals of: France, Japan. token={SECRET}")
    with FakeEndpoint(responder=content_responder) as ep:
        run(tmp_path, ep.api_base, [scenario], runs=1)
        headers = ep.headers
    assert headers and all(FAKE_KEY in h.get("authorization", "") for h in headers)
    written = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "out").rglob("*.json"))
    assert written and SECRET not in written and FAKE_KEY not in written


SEARCH_KEY = "srch_inline_55aa66bb77cc"
"""A credential that matches no pattern: only its variable's name says what it is."""


def test_a_key_given_in_a_commands_env_never_reaches_the_results(tmp_path: Path) -> None:
    # Before: a key in the suite's env: (not in evalrunner's own environment) was written in
    # clear to run files (a review); the same key inherited from the environment was not.
    scenario = py_command(
        "echo-env", env={"PYTHONPATH": str(SUPPORT), "SEARCH_API_KEY": SEARCH_KEY}
    )
    with FakeEndpoint(responder=content_responder) as ep:
        report = run(tmp_path, ep.api_base, [scenario], runs=1)
        sent = json.dumps(ep.requests)
    assert [r.outcome for r in report.records] in (["passed"], ["failed"])  # it ran
    assert SEARCH_KEY in sent  # the agent did send it: the test can fail
    written = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "out").rglob("*.json"))
    assert "[REDACTED]" in written and SEARCH_KEY not in written


def test_a_command_whose_program_is_missing_fails_before_any_run(tmp_path: Path) -> None:
    from evalrunner.errors import ConfigError

    bad = {**py_command("openai"), "command": ["no-such-program-xyz", "{task}"]}
    with pytest.raises(ConfigError, match=r"command: program 'no-such-program-xyz' not found"):
        run(tmp_path, "http://127.0.0.1:9", [bad])
    assert not (tmp_path / "out" / "runs").exists()


def test_a_command_agent_without_the_proxy_extra_fails_before_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: validate said ok, and run failed only once the night's proxy started, after
    # it had made the results directory and marked the night interrupted.
    from evalrunner.errors import ConfigError

    monkeypatch.setitem(sys.modules, "uvicorn", None)  # as if 'evalrunner[proxy]' were missing
    with pytest.raises(ConfigError, match=r"needs starlette and uvicorn .*evalrunner\[proxy\]"):
        run(tmp_path, "http://127.0.0.1:9", [py_command("openai")])
    assert not (tmp_path / "out").exists()  # no night begun, none to mark interrupted


def test_command_agents_get_baselines_and_verdicts_like_any_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from baseline_agents import evalrunner, verdict_table

    monkeypatch.chdir(tmp_path)  # relative defaults (reports/, history) land here
    write_suite(
        tmp_path,
        "cmdbase",
        [py_command("openai")],
        timeout_s=30,
        concurrency=4,
        tolerance={"min_baseline_nights": 1},  # one night's baseline gates here
    )
    common = ["--suite", "cmdbase", "--suites-dir", str(tmp_path)]
    where = ["--baselines", str(tmp_path / "baselines")]

    def forgetful(body: dict[str, Any], n: int) -> Any:  # the model stops using the tool
        from fake_endpoint import Reply

        return Reply("Capitals: no idea.")

    with FakeEndpoint(responder=content_responder) as ep:
        base = evalrunner(ep, "run", *common, "--out", "base", "--runs", "8", "--no-history")
        assert base.exit_code == 0, base.output
        built = evalrunner(ep, "baseline", *common, "--from", "base", *where)
        assert built.exit_code == 0, built.output
        same = evalrunner(
            ep, "run", *common, "--out", "same", "--runs", "8", *where, "--no-history"
        )
    assert same.exit_code == 0, same.output
    rows = verdict_table(same.stdout)
    # Behaviour only: a diagnostic such as latency_s times a subprocess's start, which
    # follows the machine's load, not the agent (one CI run flagged it, exit 0).
    gating = [r for r in rows if not r["metric"].endswith("(diag)")]
    assert gating and all(r["verdict"] != "REGRESSION" for r in gating), same.stdout
    with FakeEndpoint(responder=forgetful) as ep:
        changed = evalrunner(
            ep, "run", *common, "--out", "changed", "--runs", "8", *where, "--no-history"
        )
    assert changed.exit_code != 0
    regressed = {r["metric"] for r in verdict_table(changed.stdout) if r["verdict"] == "REGRESSION"}
    assert "success_rate" in regressed, changed.stdout
    # Why, on the proxied path too: the baseline kept the command's first request in full
    # (from the proxy), and tonight's runs left its path at their first model response
    # (the baseline's made both lookups at once).
    kept = json.loads((tmp_path / "baselines" / "cmdbase" / "openai--openai_fake.json").read_text())
    assert kept["nights"][0]["traces"]["sent"]["messages"][0]["role"] in ("system", "user")
    assert re.search(
        r"openai × openai/fake: cause: model \(same first request; at the first model "
        r"response: baseline lookup \+ lookup 8/8, tonight lookup \+ lookup 0/(\d+) and "
        r"\(answer\) \1/\1",
        changed.stdout,
    ), changed.stdout
    # What the sentinel is and how to run it, where the night could not (before: "not run
    # (a tenth of tonight's model calls is too few for it)", a review).
    assert (
        "sentinel: not run: sending the baseline's first request again, to tell a model change "
        "from an agent change, takes at least 5 calls a failing scenario, and its share of "
        "tonight's calls (a tenth) is fewer; `evalrunner sentinel --suite cmdbase --suites-dir "
        f"{tmp_path} --baselines {tmp_path / 'baselines'}` runs it alone"
    ) in changed.stdout  # with the locations the night was given (before: without them)


def test_a_command_that_gives_up_on_a_context_window_refusal_is_skipped(tmp_path: Path) -> None:
    too_long = "This model's maximum context length is 2048 tokens; your messages used 9000"
    with FakeEndpoint(default=Fault("400", message=too_long)) as ep:
        report = run(tmp_path, ep.api_base, [py_command("openai")], runs=1)
        assert len(ep.requests) == 1  # a refusal is the model's answer: not retried
    ((outcome, reason),) = outcomes(report)["openai"]
    assert outcome == "skipped"
    assert reason is not None and reason.startswith("context_window_exceeded: ")
    assert "maximum context length" in reason


def test_the_nights_proxy_answers_only_requests_that_carry_its_token(tmp_path: Path) -> None:
    # Another local user (here: a request without the agent's key) gets 401, not the
    # upstream; the agent itself, which sends the key it was handed, is served.
    probe = (
        "import json, os, urllib.error, urllib.request\n"
        "url = os.environ['OPENAI_BASE_URL'] + '/chat/completions'\n"
        "body = json.dumps({'model': 'm', 'messages': [{'role': 'user', 'content': 'hi'}]})\n"
        "def status(headers):\n"
        "    request = urllib.request.Request(url, body.encode(), {**headers, 'Content-Type': 'application/json'})\n"
        "    try:\n"
        "        return urllib.request.urlopen(request).status\n"
        "    except urllib.error.HTTPError as err:\n"
        "        return err.code\n"
        "key = os.environ['OPENAI_API_KEY']\n"
        "print(status({}), status({'Authorization': 'Bearer wrong'}), status({'Authorization': 'Bearer ' + key}))\n"
    )
    scenario = {"id": "probe", "command": [sys.executable, "-c", probe, "{task}"], "input": "x"}
    with FakeEndpoint(responder=content_responder) as ep:
        report = run(tmp_path, ep.api_base, [scenario], runs=1)
    (record,) = report.records
    assert record.final_answer == "401 401 200", record.reason


def test_a_command_that_goes_around_the_proxy_is_infra_error_naming_the_base_url(
    tmp_path: Path,
) -> None:
    # Its base URL written into the agent: the proxy sees no call and the SDK fails to
    # connect. The run measured nothing of the model, so it is no crash of the agent's.
    around = (
        "import openai\n"
        "client = openai.OpenAI(base_url='http://127.0.0.1:9/v1', api_key='k', max_retries=0)\n"
        "client.chat.completions.create(model='m', messages=[{'role': 'user', 'content': 'hi'}])\n"
    )
    own_bug = "raise ValueError('the agent broke before calling anything')"
    scenarios = [
        {"id": "around", "command": [sys.executable, "-c", around, "{task}"], "input": "x"},
        {"id": "own-bug", "command": [sys.executable, "-c", own_bug, "{task}"], "input": "x"},
    ]
    with FakeEndpoint(responder=content_responder) as ep:
        report = run(tmp_path, ep.api_base, scenarios, runs=1)
        assert ep.requests == []
    found = outcomes(report)
    ((outcome, reason),) = found["around"]
    assert outcome == "infra_error" and reason is not None
    assert "no model call reached the capture proxy" in reason
    assert "base URL hard-coded" in reason and "APIConnectionError" in reason
    assert found["own-bug"][0][0] == "crashed"  # an agent's own crash stays behaviour


@pytest.mark.parametrize("gives_up", [True, False])
def test_a_command_whose_request_the_proxy_cannot_carry_is_infra_error_naming_it(
    tmp_path: Path, gives_up: bool
) -> None:
    """A built-in tool the proxy does not carry was the agent's crash (behaviour, compared
    with the baseline); it is evalrunner's limit, whether the agent then gave up or went
    on without it."""
    then = "raise" if gives_up else "print('no search today')"
    searching = (
        "import openai\n"
        "try:\n"
        "    openai.OpenAI(max_retries=0).responses.create(\n"
        "        model='m', input='news', tools=[{'type': 'web_search'}])\n"
        "except openai.BadRequestError:\n"
        f"    {then}\n"
    )
    scenario = {
        "id": "search",
        "command": [sys.executable, "-c", searching, "{task}"],
        "input": "x",
    }
    with FakeEndpoint(responder=content_responder) as ep:
        report = run(tmp_path, ep.api_base, [scenario], runs=1)
    (record,) = report.records
    assert record.outcome == "infra_error", record.reason
    assert (
        "the capture proxy cannot carry the agent's request: tool type 'web_search' is not "
        "supported by the proxy" in (record.reason or "")
    ), record.reason


def test_a_command_that_sends_the_proxy_no_key_is_infra_error_saying_to_send_it(
    tmp_path: Path,
) -> None:
    # Before: one that printed the proxy's 401 and exited 0 was "no model calls ... ignored
    # OPENAI_BASE_URL", and the night "the endpoints failed ... check the model endpoint";
    # one whose SDK raised on the 401 was a crash of the agent, counted as behaviour.
    keyless = (
        "import os, urllib.error, urllib.request\n"
        "url = os.environ['OPENAI_BASE_URL'] + '/chat/completions'\n"
        'body = b\'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}\'\n'
        "try:\n"
        "    print(urllib.request.urlopen(urllib.request.Request(url, body)).read())\n"
        "except urllib.error.HTTPError as err:\n"
        "    print(err.read().decode())\n"
    )
    wrong_key = (
        "import openai\n"
        "client = openai.OpenAI(api_key='sk-not-the-one-given', max_retries=0)\n"
        "client.chat.completions.create(model='m', messages=[{'role': 'user', 'content': 'hi'}])\n"
    )
    scenarios = [
        {"id": "keyless", "command": [sys.executable, "-c", keyless, "{task}"], "input": "x"},
        {"id": "wrong-key", "command": [sys.executable, "-c", wrong_key, "{task}"], "input": "x"},
    ]
    with FakeEndpoint(responder=content_responder) as ep:
        report = run(tmp_path, ep.api_base, scenarios, runs=1)
        assert ep.requests == []
    for scenario, [(outcome, reason)] in outcomes(report).items():
        assert outcome == "infra_error", (scenario, reason)
        assert reason is not None and "(refused by the capture proxy)" in reason
        assert "send OPENAI_API_KEY (ANTHROPIC_API_KEY) as the bearer token" in reason

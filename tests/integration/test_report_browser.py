"""The HTML report in a real browser: headless Chromium driven by selenium.

Needs the Debian packages ``chromium`` and ``chromium-driver`` (CI installs them)
and ``selenium`` (the ``browser`` extra); skipped with the reason when they are
missing. Selenium is pointed at the system chromedriver, so selenium-manager
never downloads anything.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from history_factory import HOSTILE_SCRIPT, make_history

from evalrunner.report._html import render_html
from evalrunner.suite._cost import usd

pytestmark = pytest.mark.browser

CHROMIUM = next(
    (p for name in ("chromium", "chromium-browser", "google-chrome") if (p := shutil.which(name))),
    None,
)
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    webdriver = pytest.importorskip(
        "selenium.webdriver",
        reason="selenium is not installed (the `browser` extra; .ci/run installs it)",
    )
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip(
            "chromium and chromedriver not found (apt-get install -y chromium chromium-driver)"
        )
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1400,1000",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SE_OFFLINE", "true")  # belt and braces: selenium-manager must never go online
        browser = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield browser
    finally:
        browser.quit()


def load(driver: Any, path: Path) -> list[dict[str, Any]]:
    """Open ``path``; return the SEVERE console entries logged while loading."""
    driver.get_log("browser")  # drop whatever an earlier page left
    driver.get(path.resolve().as_uri())
    assert driver.execute_script("return document.readyState") == "complete"
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def test_report_loads_with_charts_and_no_console_errors(driver: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    history = make_history(
        nights=20, scenarios=5, models=1, runs=12, baseline_runs=40, regressed=(0,)
    )
    page = tmp_path / "report.html"
    page.write_text(render_html(history, title="browser test"), encoding="utf-8")

    assert load(driver, page) == []
    assert driver.title == "browser test"
    charts = driver.find_elements(By.CSS_SELECTOR, "svg.chart")
    assert len(charts) > 5
    trend = driver.find_element(
        By.CSS_SELECTOR, 'details.key svg[aria-label="success_rate over 20 nights"]'
    )
    assert trend.size["width"] > 200 and trend.size["height"] > 50
    flagged = driver.find_element(By.CSS_SELECTOR, "details.key.regression")
    assert flagged.get_attribute("open") is not None  # flagged scenarios start open
    assert flagged.find_element(By.CSS_SELECTOR, "pre.diff").is_displayed()

    shot = tmp_path / "report.png"
    driver.set_window_size(
        1400, min(6000, int(driver.execute_script("return document.body.scrollHeight")))
    )
    assert driver.save_screenshot(str(shot))
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_hostile_model_output_runs_no_script_and_reads_as_text(driver: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    history = make_history(nights=4, scenarios=2, models=1, runs=12, hostile=True, regressed=(0,))
    page = tmp_path / "hostile.html"
    page.write_text(render_html(history), encoding="utf-8")

    assert load(driver, page) == []
    assert driver.execute_script("return typeof window.__pwned") == "undefined"
    assert driver.find_elements(By.TAG_NAME, "script") == []
    assert driver.find_elements(By.CSS_SELECTOR, "img") == []
    assert driver.find_elements(By.CSS_SELECTOR, "svg[onload]") == []
    body = driver.find_element(By.TAG_NAME, "body").text
    assert HOSTILE_SCRIPT in body  # the skip reason, shown as the text it is
    # The layout survived the "</pre></div></details>" in the data: every section is still inside <main>.
    assert driver.execute_script("return document.querySelectorAll('main details.key').length") == 2
    assert (
        driver.execute_script("return document.querySelector('footer').parentElement.tagName")
        == "BODY"
    )


def test_a_priced_history_charts_spend_per_night(driver: Any, tmp_path: Path) -> None:
    """Issue 55: what each night cost, where its runs were priced, beside its tokens."""
    from history_factory import build_entries, history_from_entries
    from selenium.webdriver.common.by import By

    entries = build_entries(nights=6, scenarios=2, models=1, runs=8, baseline_runs=20)
    priced = [
        entry.model_copy(
            update={
                "records": [
                    r.model_copy(update={"cost_usd": r.prompt_tokens * 3e-6}) for r in entry.records
                ]
            }
        )
        for entry in entries
    ]
    page = tmp_path / "report.html"
    page.write_text(render_html(history_from_entries(priced), title="spend"), encoding="utf-8")
    assert load(driver, page) == []
    (panel,) = driver.find_elements(By.CSS_SELECTOR, "figure.spend")
    assert panel.is_displayed()
    assert "Spend per night, USD" in panel.text
    assert panel.find_elements(By.CSS_SELECTOR, "svg polyline, svg path")
    total = math.fsum(r.cost_usd or 0 for e in priced for r in e.records)
    assert f"{usd(total)} over 6 nights; latest night $" in panel.text

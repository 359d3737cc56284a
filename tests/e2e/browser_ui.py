"""`make test-ui`: the UI path in a real browser (headless Chromium from Debian's packages, Selenium).

Airflow is started the documented way (include/scripts/airflow.sh, on a free port); the browser
logs in with the printed login, finds the pipeline's DAG in the DAG list, pauses it and triggers a
run with the DAG page's Trigger button (the form README describes: "Unpause ... on trigger"
pre-ticked, "Rebuild tables (optional)" empty), and once the run succeeded opens the run and the transform task's log,
whose per-table summary must match the data produced. Screenshots of each page go to
run/ui-screenshots/. Not collected by `make test` (no ``test_`` prefix): `make test-ui` runs it
after installing chromium, chromium-driver and Selenium (requirements-ui.txt).
"""

from __future__ import annotations

import shutil
import time
import urllib.parse
from collections.abc import Callable, Iterator

import pytest
from airflow_ui_support import expected_summary_rows, produce_workload, started_airflow, summary_rows
from e2e_support import Pipeline
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from ticdc_lake.cli.airflow_runner import PROJECT_ROOT
from ticdc_lake.cli.airflow_service import AirflowApi

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark, pytest.mark.airflow]

SCREENSHOTS = PROJECT_ROOT / "run" / "ui-screenshots"


@pytest.fixture
def browser() -> Iterator[WebDriver]:
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver is None:
        pytest.fail("chromium or chromedriver is not installed: `make test-ui` installs them (apt-get)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1600,1200"):
        options.add_argument(argument)
    session = webdriver.Chrome(options=options, service=Service(driver))
    try:
        yield session
    finally:
        session.quit()


def _page_text(browser: WebDriver, *expected: str, timeout: float = 60) -> str:
    """The page's visible text once it shows every expected string (the UI renders asynchronously)."""
    text = ""

    def shows(session: WebDriver) -> bool:
        nonlocal text
        text = session.find_element(By.TAG_NAME, "body").text
        return all(e in text for e in expected)

    try:
        WebDriverWait(browser, timeout).until(shows)
    except Exception as exc:
        raise AssertionError(
            f"{browser.current_url} does not show {expected} after {timeout} s:\n{text[-3000:]}"
        ) from exc
    return text


def _shot(browser: WebDriver, name: str) -> None:
    browser.save_screenshot(str(SCREENSHOTS / name))


def test_the_browser_logs_in_triggers_the_dag_and_shows_the_run_and_its_transform_log(
    e2e_pipeline: Callable[..., Pipeline], kafka_bootstrap: str, browser: WebDriver
) -> None:
    pipeline = e2e_pipeline()
    sim, watermark = produce_workload(pipeline, kafka_bootstrap)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for old in SCREENSHOTS.glob("*.png"):
        old.unlink()
    with started_airflow(pipeline, kafka_bootstrap) as login:
        browser.get(login.url + "/")
        WebDriverWait(browser, 60).until(lambda s: s.find_elements(By.NAME, "username"))
        assert "/auth/login" in browser.current_url
        browser.find_element(By.NAME, "username").send_keys(login.username)
        browser.find_element(By.NAME, "password").send_keys(login.password)
        browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        WebDriverWait(browser, 60).until(lambda s: "/auth/login" not in s.current_url)

        browser.get(login.url + "/dags")
        _page_text(browser, pipeline.dag_id, "ticdc_maintenance_lake")
        _shot(browser, "1-dags.png")

        # A paused DAG (as on a deployment that pauses new DAGs): the form README describes.
        api = AirflowApi(login)
        api.pause(pipeline.dag_id)
        browser.get(f"{login.url}/dags/{pipeline.dag_id}")
        _page_text(browser, pipeline.dag_id, "land", "transform")
        browser.find_element(By.CSS_SELECTOR, "[data-testid=trigger-dag-button]").click()
        form = _page_text(browser, f"Trigger Dag - {pipeline.dag_id}", "Single Run", "Rebuild tables")
        _shot(browser, "2-trigger.png")
        assert f"Unpause {pipeline.dag_id} on trigger" in form  # pre-ticked by Airflow's form
        assert "Rebuild tables (optional)\n[]\nLeave empty for a normal run." in form
        [submit] = browser.find_elements(By.XPATH, "//*[@role='dialog']//button[normalize-space(.)='Trigger']")
        submit.click()

        deadline = time.monotonic() + 60
        while not (run_ids := api.run_ids(pipeline.dag_id)):
            assert time.monotonic() < deadline, "the Trigger button created no run within 60 s"
            time.sleep(1)
        [run_id] = run_ids
        assert run_id.startswith("manual__")
        assert not api.is_paused(pipeline.dag_id)  # the ticked box unpaused it
        assert api.await_run(pipeline.dag_id, run_id, timeout_s=600) == "success"

        run_url = f"{login.url}/dags/{pipeline.dag_id}/runs/{urllib.parse.quote(run_id, safe='')}"
        browser.get(run_url)
        run_page = _page_text(browser, run_id, "Success", "Manual", "land", "transform", "2 Task Instances")
        assert "Triggering User\nadmin" in run_page
        _shot(browser, "3-run.png")

        browser.get(f"{run_url}/tasks/transform")
        log_page = _page_text(browser, "run summary: pipeline", "asset events:", timeout=120)
        _shot(browser, "4-transform-log.png")

    lines = [line.strip().removeprefix("- ") for line in log_page.splitlines()]
    assert f"run summary: pipeline {pipeline.id!r} run {run_id!r}: decode OK, schema_history OK, apply OK" in lines
    assert summary_rows("\n".join(lines)) == expected_summary_rows(pipeline, sim, watermark), log_page[-5000:]

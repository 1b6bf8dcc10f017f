#!/usr/bin/env python3
"""Drives expense-server's web interface in headless Chromium (Debian's
chromium and chromium-driver, through selenium), as BrowserTests starts it:

    browser-check.py BASE_URL WORK_DIR < facts.json

facts.json names the tokens and expenses the test made. Every step
asserts; the script prints one JSON object of what it measured on its
last line and exits 0, or prints the failed step and exits 1. The
browser's own processes end with driver.quit(), in every case, SIGTERM
included; their pids are printed first ("pids: chromedriver=N chromium=M")
so that the test can stop them by pid should this script be killed."""

import csv
import json
import os
import signal
import subprocess
import sys
import time

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

base, work = sys.argv[1], sys.argv[2]
facts = json.load(sys.stdin)
downloads = os.path.join(work, "downloads")
os.makedirs(downloads, exist_ok=True)
measured = {}


def step(name):
    print("step:", name, flush=True)


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def no_dialog(driver, where):
    """No script ran: a dialog would be open now."""
    try:
        text = driver.switch_to.alert.text
    except NoAlertPresentException:
        return
    raise AssertionError(f"a dialog opened on {where}: {text!r}")


def page_left(old):
    """A wait condition: the page `old` (an element of it) was on has been
    left. chromedriver says so by a stale element, or, when the element's
    document was replaced at the moment it is asked, by "Node with given id
    does not belong to the document" (EC.staleness_of takes only the first)."""
    def left(_):
        try:
            old.is_enabled()
            return False
        except StaleElementReferenceException:
            return True
        except WebDriverException as error:
            if "does not belong to the document" in str(error):
                return True
            raise
    return left


def click_and_load(driver, element):
    """Clicks what navigates, and waits for the next page to be loaded
    (the old one gone, the new one complete): a lookup right after a
    click could otherwise still see the old page."""
    old = driver.find_element(By.TAG_NAME, "html")
    element.click()
    WebDriverWait(driver, 20).until(page_left(old))
    WebDriverWait(driver, 20).until(lambda d: d.execute_script("return document.readyState") == "complete")


def submit_edit(driver, field, value):
    form = driver.find_element(By.ID, f"edit-{field}")
    box = form.find_element(By.NAME, "value")
    box.clear()
    box.send_keys(value)
    click_and_load(driver, form.find_element(By.TAG_NAME, "button"))


options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1600",
             f"--user-data-dir={os.path.join(work, 'profile')}", "--no-first-run", "--disable-background-networking"]:
    options.add_argument(flag)
options.add_experimental_option("prefs", {"download.default_directory": downloads, "download.prompt_for_download": False})
# A dialog stays open for no_dialog() to find, instead of being dismissed.
options.set_capability("unhandledPromptBehavior", "ignore")


def terminated(signum, _frame):
    """SIGTERM (the test's timeout) ends the script through `finally`,
    which stops chromedriver and Chromium too."""
    raise SystemExit(128 + signum)


def stop_browser(driver, browser_pid):
    """After a SIGTERM the driver may be in the middle of a command (a page
    that never loads) that driver.quit() would wait behind: the browser and
    chromedriver are stopped by their pids instead."""
    for pid in [browser_pid, driver.service.process.pid]:
        if pid is not None:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    driver.service.process.wait()


def chromium_pid(driver_pid):
    """The browser chromedriver started: its child running Chromium."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read().split(b"\0")[0]
        except OSError:
            continue
        # The parent pid is the second field after the parenthesised name.
        if int(stat.rsplit(")", 1)[1].split()[1]) == driver_pid and b"chromium" in command:
            return int(entry)
    return None


# A SIGTERM while the browser starts waits until there is a driver to quit.
early = []
signal.signal(signal.SIGTERM, lambda signum, _frame: early.append(signum))
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver", log_output=os.path.join(work, "chromedriver.log")), options=options)
wait = WebDriverWait(driver, 20)
browser_pid = None
try:
    signal.signal(signal.SIGTERM, terminated)
    if early:
        terminated(early[0], None)
    browser_pid = chromium_pid(driver.service.process.pid)
    print(f"pids: chromedriver={driver.service.process.pid} chromium={browser_pid}", flush=True)
    step("sign in")
    driver.get(base + "/expenses")
    check(driver.current_url.endswith("/sign-in"), "a signed-out list goes to the sign-in page")
    driver.find_element(By.NAME, "token").send_keys(facts["token"])
    click_and_load(driver, driver.find_element(By.CSS_SELECTOR, "form[action='/sign-in'] button"))
    wait.until(EC.presence_of_element_located((By.ID, "signed-in")))
    check("Signed in as alice" in driver.find_element(By.ID, "signed-in").text, "signed in as alice")

    step("the synced expense and its receipt")
    driver.get(base + "/expenses?merchant=" + "Synced")
    click_and_load(driver, driver.find_element(By.LINK_TEXT, "Synced Lunch"))
    image = wait.until(EC.presence_of_element_located((By.ID, "receipt")))
    wait.until(lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", image))
    measured["receipt_natural_width"] = driver.execute_script("return arguments[0].naturalWidth", image)
    shot = os.path.join(work, "receipt.png")
    image.screenshot(shot)
    stats = subprocess.run(["/usr/bin/convert", shot, "-colorspace", "gray", "-format", "%[fx:standard_deviation] %[fx:mean]", "info:"],
                           check=True, capture_output=True, text=True).stdout.split()
    measured["receipt_screenshot_stddev"], measured["receipt_screenshot_mean"] = float(stats[0]), float(stats[1])
    check(measured["receipt_screenshot_stddev"] > 0.1, f"the receipt area is blank: {stats}")
    expense_url = driver.current_url

    step("filter and page")
    driver.get(base + "/expenses")
    form = driver.find_element(By.ID, "filters")
    form.find_element(By.NAME, "merchant").send_keys("Shop")
    click_and_load(driver, form.find_element(By.TAG_NAME, "button"))
    check("merchant=Shop" in driver.current_url, "the filter is in the address")
    count = driver.find_element(By.ID, "count").text
    check(count.startswith(f"{facts['shops']} expenses · page 1 of "), f"filtered count: {count}")
    first_page = [a.text for a in driver.find_elements(By.CSS_SELECTOR, "a.open")]
    click_and_load(driver, driver.find_element(By.ID, "next"))
    check("page=2" in driver.current_url, "page 2 is in the address")
    check("page 2 of" in driver.find_element(By.ID, "count").text, "on page 2")
    second_page = [a.text for a in driver.find_elements(By.CSS_SELECTOR, "a.open")]
    check(len(first_page) == 50 and second_page and not set(first_page) & set(second_page), "pages differ")
    measured["filtered"] = count

    step("export the filtered list as CSV")
    driver.find_element(By.ID, "export-csv").click()
    target = os.path.join(downloads, "expenses.csv")
    deadline = time.time() + 20
    while not (os.path.exists(target) and not os.path.exists(target + ".crdownload")) and time.time() < deadline:
        time.sleep(0.05)
    with open(target, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    check(rows[0][:4] == ["transaction_id", "user", "date", "merchant"], f"header {rows[0]}")
    check(len(rows) - 1 == facts["shops"], f"{len(rows) - 1} rows exported, {facts['shops']} listed")
    check(all("Shop" in r[3] for r in rows[1:]), "only what the filter shows")
    measured["csv"] = target

    step("edit a field and see the new version")
    driver.get(expense_url)
    before = int(driver.find_element(By.ID, "version").text)
    submit_edit(driver, "merchant", "Edited Lunch")
    wait.until(EC.presence_of_element_located((By.ID, "notice")))
    check(driver.find_element(By.ID, "version").text == str(before + 1), f"version {before + 1}")
    check(driver.find_element(By.ID, "field-merchant").text == "Edited Lunch", "the new value shows")
    check("merchant: Synced Lunch → Edited Lunch" in driver.find_element(By.ID, "history").text, "history shows the change")

    step("a stale second tab gets the conflict")
    first_tab = driver.current_window_handle
    driver.switch_to.new_window("tab")
    driver.get(expense_url)
    second_tab = driver.current_window_handle
    driver.switch_to.window(first_tab)
    driver.get(expense_url)
    submit_edit(driver, "category", "Travel")
    wait.until(EC.presence_of_element_located((By.ID, "notice")))
    driver.switch_to.window(second_tab)
    submit_edit(driver, "category", "Office")
    stale = wait.until(EC.presence_of_element_located((By.ID, "stale")))
    check(driver.find_element(By.ID, "current-value").text == "Travel", "the conflict shows the current value")
    check(driver.find_element(By.ID, "your-value").text == "Office", "and mine")
    check(driver.find_element(By.ID, "field-category").text == "Travel", "nothing was overwritten")
    driver.close()
    driver.switch_to.window(first_tab)

    step("hostile values are inert")
    driver.get(base + "/expenses/" + facts["hostile"])
    no_dialog(driver, "the hostile expense's page")
    check(driver.find_element(By.ID, "field-merchant").text == facts["hostile_merchant"], "the script shows as text")
    check(driver.find_element(By.ID, "field-comment").text == facts["hostile_comment"], "the quotes break nothing")
    check(driver.find_element(By.ID, "field-category").text == facts["hostile_category"], "the javascript: URL is text")
    check(not driver.find_elements(By.CSS_SELECTOR, "img[src='x'], script"), "no element was injected")
    check(not any((a.get_attribute("href") or "").startswith("javascript:") for a in driver.find_elements(By.TAG_NAME, "a")), "no javascript: link")
    driver.get(base + "/expenses?merchant=" + "%3Cscript%3E")
    no_dialog(driver, "the list")
    check(driver.find_element(By.LINK_TEXT, facts["hostile_merchant"]), "listed as text")

    step("CSRF: a wrong token, and a form from another site")
    driver.get(expense_url)
    driver.execute_script("document.querySelector('#edit-comment input[name=csrf]').value = 'wrong'")
    submit_edit(driver, "comment", "forged")
    check("This form has expired or was not sent by this site" in driver.find_element(By.ID, "error").text, "wrong token refused")
    step("CSRF: a form from another site")
    with open(os.path.join(work, "forge.html"), "w") as f:
        f.write(f"""<form method="post" action="{base}/expenses/{facts['synced']}/edit" id="f">
            <input name="field" value="comment"><input name="value" value="forged"><input name="base_version" value="3">
            <input name="key" value="web-forgedforged"></form><button form="f" id="go">go</button>""")
    driver.get("file://" + os.path.join(work, "forge.html"))
    click_and_load(driver, driver.find_element(By.ID, "go"))
    check(driver.current_url.endswith("/edit"), "the forged form was posted")
    check(driver.find_element(By.ID, "error"), "a cross-site form is refused")
    driver.get(expense_url)
    check(driver.find_element(By.ID, "field-comment").text != "forged", "nothing forged was saved")

    step("another user's expense is not found")
    driver.get(base + "/expenses/" + facts["bobs"])
    check(driver.find_element(By.TAG_NAME, "h1").text == "Not found", "bob's expense is not found")

    step("sign out, and back shows nothing private")
    driver.get(base + "/expenses?merchant=Edited")
    check("Edited Lunch" in driver.page_source, "the list before signing out")
    click_and_load(driver, driver.find_element(By.ID, "sign-out"))
    check(driver.current_url.endswith("/sign-in"), "signed out to the sign-in page")
    old = driver.find_element(By.TAG_NAME, "html")
    driver.back()
    WebDriverWait(driver, 20).until(page_left(old))
    WebDriverWait(driver, 20).until(lambda d: d.execute_script("return document.readyState") == "complete")
    source = driver.page_source
    measured["after_back_url"] = driver.current_url
    check("Edited Lunch" not in source and "Signed in as" not in source, f"the back button showed a private page: {driver.current_url}")
    check(driver.find_elements(By.NAME, "token"), "the sign-in form shows instead")
    print(json.dumps(measured), flush=True)
except Exception as error:  # noqa: BLE001 - every failure is reported the same way
    print(f"FAILED: {type(error).__name__}: {error} at {driver.current_url}: {driver.page_source[:600]}", flush=True)
    driver.save_screenshot(os.path.join(work, "failure.png"))
    with open(os.path.join(work, "failure.html"), "w") as f:
        f.write(driver.page_source)
    sys.exit(1)
except SystemExit:
    stop_browser(driver, browser_pid)
    raise
finally:
    if driver.service.process.poll() is None:
        driver.quit()

"""The admin console in a real browser: headless Chromium driven over WebDriver (Debian's
chromium and chromium-driver) against a live `herald serve --simulator` that scripts/admin-test.sh
started. Each check names what it shows; a failed one stops the run with what the page held.

Arguments: BASE_URL API_KEY READ_ONLY_KEY CLIENT_TOKEN DATABASE SCREENSHOT_DIR
"""

import json
import os
import sqlite3
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

base, key, read_only_key, client_token, database, shots = sys.argv[1:7]
checks = 0


def check(condition, what, page=None):
    global checks
    if not condition:
        detail = ""
        if page is not None:
            detail = "\n--- the page held ---\n" + page.find_element(By.TAG_NAME, "body").text[:3000]
        sys.exit(f"admin browser test: FAILED: {what}{detail}")
    checks += 1
    print(f"  ok  {what}")


def api(method, path, body=None, token=key):
    request = urllib.request.Request(base + path, method=method)
    request.add_header("Authorization", f"Bearer {token}")
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, data, timeout=30) as answer:
            text = answer.read()
            return answer.status, json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def until(condition, what, seconds=20):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.2)
    sys.exit(f"admin browser test: FAILED: waited {seconds} s for {what}")


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


# Answers as they come, a 303 included, not the page it leads to.
no_redirects = urllib.request.build_opener(NoRedirect)


def post_form(path, fields, cookie):
    """A form sent without the browser: what a page of another site could make a browser send."""
    request = urllib.request.Request(base + path, data=urllib.parse.urlencode(fields).encode(), method="POST")
    request.add_header("Content-Type", "application/x-www-form-urlencoded")
    if cookie:
        request.add_header("Cookie", cookie)
    try:
        with no_redirects.open(request, timeout=30) as answer:
            return answer.status, answer.headers, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read().decode()


# --- The data each page must show ------------------------------------------------------------

live = "ab" * 32
dead = "cd" * 32
api("PUT", f"/v1/devices/{live}", {"user_id": "ann", "tags": ["beta"]})
api("PUT", f"/v1/devices/{dead}", {"user_id": "bob", "tags": ["beta"]})
api("POST", "/simulator/tokens", {"token": dead, "unregistered_at": "now"})
status, sent = api("POST", "/v1/notifications?wait=true", {"tokens": [live, dead], "payload": {"aps": {"alert": "Hello"}}})
check(status == 200, "a notification to a live and a dead token was sent")
notification = sent["id"]

push_to_start = "51" * 32
device = "52" * 32
api("PUT", "/v1/users/ann/push-to-start-tokens", {"attributes_type": "OrderAttributes", "token": push_to_start})
status, created = api(
    "POST",
    "/v1/live-activities",
    {
        "attributes_type": "OrderAttributes",
        "attributes": {"order": "A-17"},
        "content_state": {"step": 1, "title": "Order received"},
        "alert": {"title": "Order A-17", "body": "We got your order"},
        "audience": {"users": ["ann"]},
    },
)
activity = created["id"]
until(lambda: api("GET", f"/v1/live-activities/{activity}")[1]["state"] == "started", "the activity to start")
ios_id = api("GET", f"/simulator/devices/{push_to_start}/activities")[1]["activities"][0]["activity_id"]
api("POST", f"/v1/live-activities/{activity}/update", {"content_state": {"step": 2, "title": "Packing"}})
api(
    "POST",
    f"/v1/client/live-activities/{activity}/instances",
    {"activity_id": ios_id, "device_token": device},
    token=client_token,
)
until(
    lambda: '"step":2' in json.dumps(api("GET", f"/simulator/devices/{push_to_start}/activities")[1], separators=(",", ":")),
    "the silent push to reach the device",
)
api("POST", f"/simulator/devices/{push_to_start}/activities/{ios_id}/allow")
update_token = api("GET", f"/simulator/devices/{push_to_start}/activities")[1]["activities"][0]["update_token"]
api(
    "POST",
    f"/v1/client/live-activities/{activity}/instances",
    {"activity_id": ios_id, "update_token": update_token},
    token=client_token,
)
status, routes = api("POST", f"/v1/live-activities/{activity}/update", {"content_state": {"step": 3, "title": "On its way"}})
check(routes["routes"]["update_token"] == 1, "the third update went by update token")
until(
    lambda: '"step":3' in json.dumps(api("GET", f"/simulator/devices/{push_to_start}/activities")[1], separators=(",", ":")),
    "the update-token push to reach the device",
)

# A webhook whose receiver refuses every connection: a loopback port nothing listens on.
import socket

closed = socket.socket()
closed.bind(("127.0.0.1", 0))
closed_port = closed.getsockname()[1]
closed.close()
status, created = api("POST", "/v1/webhooks", {"url": f"http://127.0.0.1:{closed_port}/hook", "events": ["device.reassigned"]})
check(status == 201, "a webhook to a receiver that refuses connections was registered")
webhook = created["id"]

# A job whose every attempt failed: written as the queue writes one when its attempts run out.
job = str(uuid.uuid4())
now = int(time.time() * 1000)
with sqlite3.connect(database, timeout=30) as connection:
    connection.execute(
        "INSERT INTO jobs (id, kind, payload, status, due_at, attempts, max_attempts, last_error, missed_runs, "
        "created_at, updated_at, finished_at) VALUES (?, 'admin.sessions.prune', '{}', 'dead', ?, 3, 3, "
        "'the database was unavailable', 'skip', ?, ?, ?)",
        (job, now, now, now, now),
    )

# --- The browser --------------------------------------------------------------------------------

options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000"]:
    options.add_argument(argument)
browser = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
browser.set_page_load_timeout(30)


def visit(path):
    browser.get(base + path)
    return browser


def click(element):
    """Clicks and waits until the browser has loaded the page the click leads to.

    The page being left is marked, and the wait is for a complete document without the mark.
    (Selenium's staleness_of asks about the old element mid-navigation, and Chromium has answered
    that with an inspector error instead of a stale element.)"""
    browser.execute_script("document.documentElement.dataset.leaving = '1'")
    element.click()

    def arrived(b):
        try:
            return b.execute_script(
                "return document.documentElement.dataset.leaving === undefined && document.readyState === 'complete'"
            )
        except WebDriverException:
            return False  # between documents

    WebDriverWait(browser, 30).until(arrived)


def shot(name):
    browser.save_screenshot(os.path.join(shots, f"admin-{name}.png"))


def text():
    return browser.find_element(By.TAG_NAME, "body").text


def sign_in(with_key, then="/admin"):
    visit("/admin/sign-in?next=" + urllib.parse.quote(then))
    browser.find_element(By.ID, "key").send_keys(with_key)
    click(browser.find_element(By.CSS_SELECTOR, "form.sign-in button"))


def session_cookie():
    cookie = browser.get_cookie("herald_admin")
    return f"herald_admin={cookie['value']}" if cookie else ""


try:
    visit("/admin/jobs")
    check(browser.current_url.startswith(base + "/admin/sign-in"), "an unsigned visit is sent to the sign-in page", browser)
    shot("sign-in")

    sign_in("not-a-key-0123456789abcdef")
    check("That key does not sign in" in text(), "a wrong key is refused with what to use", browser)
    metrics = urllib.request.urlopen(base + "/metrics", timeout=30).read().decode()
    check('herald_admin_sign_ins_total{result="refused"} 1' in metrics, "the refused sign-in is counted in /metrics")

    sign_in(key, then="/admin/jobs")
    check(browser.current_url == base + "/admin/jobs", "signing in goes back to the page asked for", browser)
    cookie = browser.get_cookie("herald_admin")
    check(cookie["httpOnly"] and cookie["sameSite"] == "Strict", "the session cookie is HttpOnly and SameSite=Strict")

    visit("/admin")
    check("Sent" in text() and "Dead tokens" in text(), "the overview charts sends and dead tokens", browser)
    check(len(browser.find_elements(By.CSS_SELECTOR, ".chart svg rect")) >= 2, "the charts have bars for this minute", browser)
    shot("overview")

    visit("/admin/notifications")
    check(notification in text(), "the notifications list shows the notification", browser)
    click(browser.find_element(By.LINK_TEXT, notification))
    rows = browser.find_elements(By.CSS_SELECTOR, "#results tbody tr")
    dead_row = [row.text for row in rows if dead in row.text]
    check(dead_row and "dead" in dead_row[0] and "Unregistered" in dead_row[0], "the dead token's result and reason are shown", browser)
    shot("notification")

    visit("/admin/live-activities")
    click(browser.find_element(By.LINK_TEXT, activity))
    timeline = browser.find_element(By.ID, "timeline").text
    for route in ["push_to_start", "silent", "update_token"]:
        check(route in timeline, f"the activity's timeline shows its {route} delivery", browser)
    check('"step":3' in browser.find_element(By.ID, "content-state").text, "the activity shows its latest content state", browser)
    shot("live-activity")

    visit(f"/admin/devices?token_prefix={dead[:6]}")
    devices = browser.find_element(By.ID, "devices").text
    check(dead in devices and "invalid" in devices and "Unregistered" in devices, "a device found by token prefix shows it died", browser)
    check(live not in devices, "the token prefix search leaves other devices out", browser)

    visit("/admin/jobs")
    check(job in text() and "the database was unavailable" in text(), "the dead job is listed with its error", browser)
    shot("jobs")
    forged = post_form(f"/admin/jobs/{job}/retry", {}, session_cookie())
    check(forged[0] == 403, "a form without the CSRF token is refused")
    with sqlite3.connect(database, timeout=30) as connection:
        still = connection.execute("SELECT status FROM jobs WHERE id = ?", (job,)).fetchone()[0]
    check(still == "dead", "the refused form changed nothing")
    row = [row for row in browser.find_elements(By.CSS_SELECTOR, "#jobs tbody tr") if job in row.text][0]
    click(row.find_element(By.XPATH, ".//button[text()='Retry']"))
    check("pending again" in text(), "the retry button makes the dead job pending", browser)
    with sqlite3.connect(database, timeout=30) as connection:
        until(
            lambda: connection.execute("SELECT status FROM jobs WHERE id = ?", (job,)).fetchone()[0] == "done",
            "the retried job to run",
        )
    check(True, "the retried job ran to done")

    visit("/admin/webhooks")
    check(f"127.0.0.1:{closed_port}" in text(), "the webhooks page lists the webhook", browser)
    click(browser.find_element(By.XPATH, "//button[text()='Send test event']"))
    check("is queued" in text(), "the send test event button queues a test event", browser)
    until(lambda: api("GET", f"/v1/webhooks/{webhook}")[1]["delivery"]["last_error"] is not None, "the test event's delivery to fail")
    visit("/admin/webhooks")
    last_error = api("GET", f"/v1/webhooks/{webhook}")[1]["delivery"]["last_error"]
    check(last_error in browser.find_element(By.ID, "webhooks").text, "the webhooks page shows the receiver's last error", browser)
    shot("webhooks")

    for path, heading in [
        ("/admin/webhooks", "Webhooks"),
        ("/admin/wake-schedules", "Wake schedules"),
        ("/admin/channels", "Channels"),
    ]:
        visit(path)
        check(browser.find_element(By.TAG_NAME, "h1").text == heading, f"{path} shows its page", browser)
    check("of Apple's 10000 channels" in text(), "the channels page counts against Apple's limit", browser)

    visit("/admin/send")
    browser.find_element(By.NAME, "token").send_keys(live)
    click(browser.find_element(By.CSS_SELECTOR, "#send-form button"))
    result = browser.find_element(By.ID, "send-result").text
    check("sent" in result and live in result, "a test push shows APNs' answer", browser)
    shot("send")

    visit("/admin/lock-screens")
    check("On its way" in text() and "OrderAttributes" in text(), "the lock screen draws the activity's latest state", browser)
    shot("lock-screens")

    old_cookie = session_cookie()
    click(browser.find_element(By.CSS_SELECTOR, "form.sign-out button"))
    check(browser.current_url.startswith(base + "/admin/sign-in"), "signing out goes to the sign-in page", browser)
    check(browser.get_cookie("herald_admin") is None, "signing out deletes the cookie", browser)
    request = urllib.request.Request(base + "/admin/jobs", headers={"Cookie": old_cookie})
    try:
        no_redirects.open(request, timeout=30)
        replayed = 200
    except urllib.error.HTTPError as error:
        replayed = error.code
    check(replayed == 303, "the signed-out session's cookie no longer opens a page")

    sign_in(read_only_key)
    visit("/admin/jobs?status=done")
    check(job in text(), "a read-only key reads the jobs", browser)
    check(not browser.find_elements(By.CSS_SELECTOR, "main form.inline"), "a read-only key sees no buttons", browser)
    visit("/admin/send")
    check(not browser.find_elements(By.ID, "send-form"), "a read-only key gets no send form", browser)
    csrf = browser.find_element(By.CSS_SELECTOR, "form.sign-out input[name=csrf]").get_attribute("value")
    refused = post_form(f"/admin/jobs/{job}/retry", {"csrf": csrf}, session_cookie())
    check(refused[0] == 403 and "may only read" in refused[2], "a read-only key's change is refused, even with its CSRF token")
finally:
    browser.quit()

print(f"admin browser test: {checks} checks passed; screenshots in {shots}")

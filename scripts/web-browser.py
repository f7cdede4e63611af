#!/usr/bin/env python3
"""Loads web-view pages in headless Chromium, signed in through the real sign-in form.

Why this script: `chromium --headless --dump-dom URL` cannot send a header or a cookie, and a
token in the URL (`/login?token=`) would end up in logs and history, so the web view has no
such thing. Chromium's DevTools protocol can drive a real sign-in instead. It is spoken here
over `--remote-debugging-pipe` (JSON messages separated by NUL bytes on file descriptors 3 and
4), which needs no WebSocket client: Python's standard library is enough, nothing from PyPI.

    web-browser.py --base http://127.0.0.1:PORT --token-file F --out DIR NAME=PATH...

Signs in at /login with the token read from F (typed into the form and submitted, so the
session cookie is the one the server set), then for each NAME=PATH loads BASE+PATH and writes
DIR/NAME.html (the DOM after load), DIR/NAME.png (a full-page screenshot) and DIR/NAME.json:
{"url", "status", "elements": [{"k", "text", "tag", "width", "x", "count", "label", "cls"} for
every [data-k]], "images", "scripts", "inlineHandlers", "hover", "console"}: console holds
console messages and CSP violation reports; hover what #flame-info said when the mouse was
moved over the flame graph's last lag-key rectangle (null on pages without one).
A NAME=PATH with a leading "!" is loaded without signing in (in a fresh browser context).
NAME=PATH>ACTION?FIELD=VALUE&... loads PATH, fills the fields of the page's form
`form[data-k="action:ACTION"]` (typed in, as a person would) and submits it; what is recorded
is the page the browser lands on after the server's answer (`status` is that answer's).
"""
import argparse
import base64
import fcntl
import json
import os
import subprocess
import sys
import tempfile
import urllib.parse

COLLECT = r"""
JSON.stringify({
  url: location.href,
  elements: Array.from(document.querySelectorAll("[data-k]")).map(function (e) {
    return {k: e.getAttribute("data-k"), text: e.textContent, tag: e.tagName.toLowerCase(),
            width: e.getAttribute("width"), x: e.getAttribute("x"), count: e.getAttribute("data-count"),
            label: e.getAttribute("data-label"), cls: e.getAttribute("class")};
  }),
  images: document.querySelectorAll("img").length,
  scripts: Array.from(document.querySelectorAll("script")).map(function (s) { return s.getAttribute("src"); }),
  inlineHandlers: Array.from(document.querySelectorAll("*")).filter(function (e) {
    return Array.from(e.attributes).some(function (a) { return a.name.toLowerCase().indexOf("on") === 0; });
  }).length
})
"""


class Browser:
    def __init__(self, chromium):
        self.profile = tempfile.mkdtemp(prefix="stackline-chromium-")
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()
        self._spare = (to_browser_r, from_browser_w)

        # Chromium reads commands on fd 3 and writes answers on fd 4. Move the child's ends above
        # 4 first, so that neither dup2 below is a no-op (which would keep close-on-exec) or
        # overwrites the other end.
        to_browser_r = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD_CLOEXEC, 10)
        from_browser_w = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD_CLOEXEC, 10)

        def plumb():
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--user-data-dir=" + self.profile, "--no-first-run", "--disable-extensions",
             "--disable-background-networking", "--hide-scrollbars", "about:blank"],
            preexec_fn=plumb, close_fds=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        os.close(self._spare[0])
        os.close(self._spare[1])
        self.buffer = b""
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        return self.next_id

    def read(self):
        while b"\0" not in self.buffer:
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method, params=None, session=None):
        wanted = self.send(method, params, session)
        while True:
            message = self.read()
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError("%s: %s" % (method, message["error"]))
                return message.get("result", {})
            self.events.append(message)

    def wait_event(self, method, session):
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == method and event.get("sessionId") == session:
                    del self.events[i]
                    return event
            self.events.append(self.read())

    def page(self, fresh_context):
        params = {"url": "about:blank"}
        if fresh_context:
            params["browserContextId"] = self.call("Target.createBrowserContext")["browserContextId"]
        target = self.call("Target.createTarget", params)["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(domain + ".enable", {}, session)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False}, session)
        return session

    def navigate(self, session, url):
        self.events = [e for e in self.events if e.get("sessionId") != session]
        self.call("Page.navigate", {"url": url}, session)
        self.wait_event("Page.loadEventFired", session)

    def evaluate(self, session, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session)
        return result.get("result", {}).get("value")

    def close(self):
        try:
            self.call("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        subprocess.run(["rm", "-rf", self.profile])


def hover_flame(browser, session):
    """Moves the mouse over the flame graph's last lag-key rectangle (web.js then fills
    #flame-info); returns that rectangle's data-k and the info text, or None without a graph."""
    box = browser.evaluate(session, r"""
      (function () {
        var keys = document.querySelectorAll("svg.flame rect.key");
        if (!keys.length) return null;
        var rect = keys[keys.length - 1];
        rect.scrollIntoView();
        var b = rect.getBoundingClientRect();
        return JSON.stringify({k: rect.getAttribute("data-k"), x: b.left + b.width / 2, y: b.top + b.height / 2});
      })()""")
    if not box:
        return None
    box = json.loads(box)
    browser.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": box["x"], "y": box["y"]}, session)
    info = browser.evaluate(session, "document.getElementById('flame-info').textContent")
    # Back to the top for the screenshot, the mouse away from the graph.
    browser.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": 1, "y": 1}, session)
    browser.evaluate(session, "window.scrollTo(0, 0)")
    return {"k": box["k"], "info": info}


def submit_form(browser, session, action):
    """Fills and submits the page's form for ACTION?FIELD=VALUE&...; answers the URL the
    browser lands on (after a redirect, the page it was sent to)."""
    name, _, query = action.partition("?")
    form = 'form[data-k="action:%s"]' % name
    for field, value in urllib.parse.parse_qsl(query, keep_blank_values=True):
        selector = json.dumps("%s [name=%s]" % (form, json.dumps(field)))
        found = browser.evaluate(session, "(function () { var e = document.querySelector(%s); if (!e) return false; e.focus(); return true; })()" % selector)
        if not found:
            raise RuntimeError("no field %s in %s" % (field, form))
        browser.call("Input.insertText", {"text": value}, session)
    if not browser.evaluate(session, "!!document.querySelector(%s)" % json.dumps(form)):
        raise RuntimeError("no form " + form)
    browser.events = [e for e in browser.events if e.get("sessionId") != session]
    browser.call("Runtime.evaluate", {"expression": "document.querySelector(%s).submit()" % json.dumps(form)}, session)
    browser.wait_event("Page.loadEventFired", session)
    return browser.evaluate(session, "location.href")


def console_of(browser, session):
    lines = []
    for event in browser.events:
        if event.get("sessionId") != session:
            continue
        if event.get("method") == "Log.entryAdded":
            lines.append(event["params"]["entry"].get("text", ""))
        elif event.get("method") == "Runtime.consoleAPICalled":
            lines.append(" ".join(str(a.get("value", "")) for a in event["params"].get("args", [])))
        elif event.get("method") == "Runtime.exceptionThrown":
            lines.append("exception: " + json.dumps(event["params"].get("exceptionDetails", {}).get("text", "")))
    return lines


def status_of(browser, session, url):
    for event in browser.events:
        if event.get("sessionId") == session and event.get("method") == "Network.responseReceived":
            response = event["params"]["response"]
            if response.get("url") == url and event["params"].get("type") == "Document":
                return response.get("status")
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--token-file", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--chromium", default="chromium")
    parser.add_argument("pages", nargs="+")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with open(args.token_file) as f:
        token = f.read().strip()

    browser = Browser(args.chromium)
    try:
        signed_in = browser.page(fresh_context=False)
        browser.navigate(signed_in, args.base + "/login")
        # Type the token into the form and submit it, as a person would; the server answers
        # 303 to / with the session cookie.
        browser.call("Runtime.evaluate", {"expression": "document.getElementById('token').focus()"}, signed_in)
        browser.call("Input.insertText", {"text": token}, signed_in)
        browser.events = [e for e in browser.events if e.get("sessionId") != signed_in]
        browser.call("Runtime.evaluate", {"expression": "document.querySelector('form[action=\"/login\"]').submit()"}, signed_in)
        browser.wait_event("Page.loadEventFired", signed_in)
        anonymous = None
        for spec in args.pages:
            name, path = spec.split("=", 1)
            session = signed_in
            if path.startswith("!"):
                path = path[1:]
                anonymous = anonymous or browser.page(fresh_context=True)
                session = anonymous
            action = None
            if ">" in path:
                path, action = path.split(">", 1)
            url = args.base + path
            browser.navigate(session, url)
            if action:
                url = submit_form(browser, session, action)
            facts = json.loads(browser.evaluate(session, COLLECT))
            facts["hover"] = hover_flame(browser, session)
            facts["status"] = status_of(browser, session, url)
            facts["console"] = console_of(browser, session)
            html = browser.evaluate(session, "document.documentElement.outerHTML")
            with open(os.path.join(args.out, name + ".html"), "w") as f:
                f.write(html)
            metrics = browser.call("Page.getLayoutMetrics", {}, session)
            size = metrics.get("cssContentSize") or metrics.get("contentSize")
            clip = {"x": 0, "y": 0, "width": max(1280, size["width"]), "height": min(max(size["height"], 200), 6000), "scale": 1}
            shot = browser.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}, session)
            with open(os.path.join(args.out, name + ".png"), "wb") as f:
                f.write(base64.b64decode(shot["data"]))
            with open(os.path.join(args.out, name + ".json"), "w") as f:
                json.dump(facts, f)
    finally:
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

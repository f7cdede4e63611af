#!/usr/bin/env python3
"""Makes a real Crashpad minidump: Debian's Chromium, whose renderer is crashed by a null write
(chrome://crash, navigated to over the DevTools pipe as scripts/web-browser.py drives it).

    crashpad-dump.py DIR

Chromium's Crashpad handler writes its database under DIR/crashpad (BREAKPAD_DUMP_LOCATION),
and HOME and the XDG directories point under DIR, so nothing is written outside it. With no
upload URL the report stays in DIR/crashpad/pending/<report id>.dmp, whose path is printed.
Exits 1 when no dump appears within a minute.
"""
import glob
import importlib.util
import os
import shutil
import sys
import time

directory = os.path.abspath(sys.argv[1])
for name, sub in (("HOME", "home"), ("XDG_CONFIG_HOME", "config"), ("XDG_CACHE_HOME", "cache"),
                  ("BREAKPAD_DUMP_LOCATION", "crashpad"), ("TMPDIR", "tmp")):
    os.makedirs(os.path.join(directory, sub), exist_ok=True)
    os.environ[name] = os.path.join(directory, sub)

spec = importlib.util.spec_from_file_location("web_browser", os.path.join(os.path.dirname(__file__), "web-browser.py"))
web_browser = importlib.util.module_from_spec(spec)
spec.loader.exec_module(web_browser)

chromium = shutil.which("chromium") or "/usr/lib/chromium/chromium"
browser = web_browser.Browser(chromium)
try:
    session = browser.page(False)
    # The renderer dies before it answers: send, do not wait.
    browser.send("Page.navigate", {"url": "chrome://crash"}, session)
    deadline = time.time() + 60
    dumps = []
    while time.time() < deadline and not dumps:
        time.sleep(0.1)
        dumps = glob.glob(os.path.join(directory, "crashpad", "pending", "*.dmp"))
    # The handler writes the file whole before it renames it into pending/.
finally:
    browser.close()
if not dumps:
    sys.exit("no Crashpad dump appeared under " + directory)
print(dumps[0])

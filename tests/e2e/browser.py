#!/usr/bin/env python3
"""Plays a lockstep-web page in headless Chromium, driven through the DevTools protocol.

  browser.py URL --out RESULT.json [--screenshot PNG] [--timeout S] [--keys KEYS]
             [--bench TICKS] [--reload-at TICK] [--measure-load] [--hide-at TICK --hide-for S [--throttled]]

Opens URL in a fresh headless Chromium, waits until the page's client has ended (window.lockstep.exit
>= 0), and writes RESULT.json: the exit code, the page's figures, its per-tick hashes (the hash log
the client wrote), the console's lines and any page errors. --screenshot captures the canvas once
the session is under way; --keys holds arrow keys (e.g. "Right:2,Down:1": key:seconds in turn)
through real key events; --bench runs the page's step benchmark after the session; --reload-at
reloads the page once, as a player would (its rejoins are in RESULT.json's "rejoins"); --hide-at
switches to another tab for --hide-for seconds (the page hidden, as a player's is; with --throttled
Chromium throttles it as it does a background tab), sampling the page meanwhile ("hidden").
Uses python3-websockets (Debian) and the system's chromium.
"""
import argparse, asyncio, base64, json, os, shutil, subprocess, sys, tempfile, time

import websockets


class Page:
    def __init__(self, ws):
        self.ws, self.next_id, self.pending, self.console, self.errors = ws, 0, {}, [], []

    async def pump(self):
        async for raw in self.ws:
            m = json.loads(raw)
            if "id" in m and m["id"] in self.pending:
                self.pending.pop(m["id"]).set_result(m)
            elif m.get("method") == "Runtime.consoleAPICalled":
                self.console.append(" ".join(str(a.get("value", a.get("description", ""))) for a in m["params"]["args"]))
            elif m.get("method") == "Runtime.exceptionThrown":
                self.errors.append(m["params"]["exceptionDetails"].get("exception", {}).get("description", "exception"))
            elif m.get("method") == "Log.entryAdded":
                e = m["params"]["entry"]
                if e.get("level") == "error":
                    self.errors.append(e.get("text", "") + (" " + e["url"] if e.get("url") else ""))

    async def call(self, method, **params):
        self.next_id += 1
        fut = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = fut
        await self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        m = await asyncio.wait_for(fut, 30)
        if "error" in m:
            raise RuntimeError(f"{method}: {m['error']}")
        return m.get("result", {})

    async def eval(self, expression):
        r = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in r:
            return None
        return r["result"].get("value")


KEYS = {"Up": ("ArrowUp", 38), "Down": ("ArrowDown", 40), "Left": ("ArrowLeft", 37), "Right": ("ArrowRight", 39)}


own_track = []  # (key held, own disc's x, y before, after)


async def hold_keys(page, plan):
    for step in plan:
        name, seconds = step.split(":")
        key, code = KEYS[name]
        before = await page.eval("JSON.stringify(lockstep.own())")
        await page.call("Input.dispatchKeyEvent", type="rawKeyDown", key=key, code=key, windowsVirtualKeyCode=code)
        await asyncio.sleep(float(seconds))
        await page.call("Input.dispatchKeyEvent", type="keyUp", key=key, code=key, windowsVirtualKeyCode=code)
        after = await page.eval("JSON.stringify(lockstep.own())")
        own_track.append([name, json.loads(before or "null"), json.loads(after or "null")])


TOUCH_BUTTONS = {"Up": 0, "Down": 1, "Left": 2, "Right": 3}
PAD_AXES = {"Up": (1, -1.0), "Down": (1, 1.0), "Left": (0, -1.0), "Right": (0, 1.0)}
touch_track, pad_track = [], []


async def hold_touches(page, plan):
    """Presses the page's touch buttons with real touch events (CDP's touch input, which the page
    gets as pointer events), each held for its seconds, as a thumb would."""
    for step in plan:
        name, seconds = step.split(":")
        at = json.loads(await page.eval(
            "JSON.stringify((() => { const r = document.querySelector('#controls button[data-key=\"%d\"]')"
            ".getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })())" % TOUCH_BUTTONS[name]))
        before = await page.eval("JSON.stringify(lockstep.own())")
        await page.call("Input.dispatchTouchEvent", type="touchStart", touchPoints=[{"x": at[0], "y": at[1], "id": 1}])
        await asyncio.sleep(float(seconds))
        await page.call("Input.dispatchTouchEvent", type="touchEnd", touchPoints=[])
        after = await page.eval("JSON.stringify(lockstep.own())")
        touch_track.append([name, json.loads(before or "null"), json.loads(after or "null")])


async def hold_pad(page, plan):
    """A gamepad plugged in (navigator.getGamepads answers with it, and gamepadconnected fires), its
    stick pushed each way for its seconds: the page reads it every frame, as the Gamepad API has it."""
    await page.eval("""(() => {
        const pad = { connected: true, id: "test pad", index: 0, mapping: "standard", timestamp: 0,
                      axes: [0, 0, 0, 0], buttons: Array.from({ length: 17 }, () => ({ pressed: false, value: 0 })) };
        window.test_pad = pad;
        navigator.getGamepads = () => [pad];
        const e = new Event("gamepadconnected");
        e.gamepad = pad;
        window.dispatchEvent(e);
      })()""")
    for step in plan:
        name, seconds = step.split(":")
        axis, value = PAD_AXES[name]
        before = await page.eval("JSON.stringify(lockstep.own())")
        await page.eval(f"test_pad.axes[{axis}] = {value}; test_pad.timestamp = performance.now()")
        await asyncio.sleep(float(seconds))
        await page.eval(f"test_pad.axes[{axis}] = 0; test_pad.timestamp = performance.now()")
        after = await page.eval("JSON.stringify(lockstep.own())")
        pad_track.append([name, json.loads(before or "null"), json.loads(after or "null")])


async def run(args, port):
    import urllib.request
    deadline = time.monotonic() + 20
    while True:
        try:
            targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
            pages = [t for t in targets if t.get("type") == "page"]
            if pages:
                break
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit("browser.py: Chromium's DevTools did not answer")
        await asyncio.sleep(0.2)
    async with websockets.connect(pages[0]["webSocketDebuggerUrl"], max_size=64 << 20) as ws:
        page = Page(ws)
        pump = asyncio.create_task(page.pump())
        await page.call("Runtime.enable")
        await page.call("Log.enable")
        await page.call("Page.enable")
        width, height = (int(v) for v in args.viewport.split("x"))
        await page.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                        mobile=args.mobile)
        if args.mobile:  # a phone: touch events, a coarse pointer
            await page.call("Emulation.setTouchEmulationEnabled", enabled=True, maxTouchPoints=5)
        await page.call("Page.navigate", url=args.url)
        result = {"url": args.url}
        start = time.monotonic()
        screenshot_done = not args.screenshot
        keys_task = None
        reloaded = False
        hidden = None
        target_id = pages[0]["id"]
        loads = []
        joined = False
        while True:
            state = await page.eval("window.lockstep ? JSON.stringify({exit: lockstep.exit, figures: lockstep.figures}) : null")
            state = json.loads(state) if state else None
            figures = (state or {}).get("figures") or {}
            tick = figures.get("tick", 0)
            # How far the prediction ran ahead (it follows the round trip), and whether the page
            # ever said it was held at its limit.
            result["predicted_ahead_max"] = max(result.get("predicted_ahead_max", 0), figures.get("predicted_ahead", 0))
            if figures and not result.get("held_said"):
                result["held_said"] = "held at its limit" in (await page.eval("document.getElementById('hud').textContent") or "")
            if state and state["exit"] >= 0:
                break
            if args.join_as and not joined:
                # The join screen: the name typed into its field, its button pressed.
                ready = await page.eval("!!document.getElementById('name')")
                if ready:
                    if args.screenshot_join:
                        shot = await page.call("Page.captureScreenshot", format="png")
                        with open(args.screenshot_join, "wb") as f:
                            f.write(base64.b64decode(shot["data"]))
                    await page.eval("document.getElementById('name').focus()")
                    await page.call("Input.insertText", text=args.join_as)
                    await page.eval("document.querySelector('#panel button').click()")
                    joined = True
                await asyncio.sleep(0.2)
                continue
            if args.measure_load and tick > 50 and len(loads) < 2:
                # What this load cost: every file's bytes on the wire (headers too; a 304's are its
                # headers alone) and decoded, and when the wasm was ready. The second is a reload.
                load = await page.eval("""JSON.stringify({ready_ms: lockstep.ready_ms, files:
                    performance.getEntriesByType("navigation").concat(performance.getEntriesByType("resource"))
                      .filter((e) => !e.name.startsWith("ws"))
                      .map((e) => [e.name.split("/").pop() || "/", e.transferSize, e.encodedBodySize, e.decodedBodySize])})""")
                loads.append(json.loads(load))
                if len(loads) == 1:
                    await page.call("Page.reload")
                    await asyncio.sleep(0.5)
                continue
            if args.reload_at and not reloaded and tick > args.reload_at:
                # A reload, as a player's: the page comes back with its sessionStorage (the rejoin secret).
                result["reloaded_at_tick"] = tick
                reloaded = True
                await page.call("Page.reload")
                await asyncio.sleep(0.5)
                continue
            if args.hide_at and hidden is None and tick > args.hide_at:
                # The player switches to another tab: this one is hidden (its timers throttled as
                # Chromium throttles a background tab's, with --throttled), then shown again.
                other = (await page.call("Target.createTarget", url="about:blank"))["targetId"]
                await page.call("Target.activateTarget", targetId=other)
                hidden = {"at_tick": tick, "seconds": args.hide_for, "samples": []}
                result["hidden"] = hidden
                hide_start = time.monotonic()
                while time.monotonic() - hide_start < args.hide_for:
                    await asyncio.sleep(min(10, args.hide_for / 4))
                    sample = await page.eval("JSON.stringify([document.visibilityState, lockstep.figures && lockstep.figures.tick, lockstep.exit, lockstep.hidden_serves || 0])")
                    hidden["samples"].append([round(time.monotonic() - hide_start, 1)] + json.loads(sample or "[]"))
                await page.call("Target.closeTarget", targetId=other)
                await page.call("Target.activateTarget", targetId=target_id)
                hidden["shown_at_tick"] = (await page.eval("lockstep.figures && lockstep.figures.tick")) or 0
                continue
            if (args.keys or args.touch or args.pad) and keys_task is None and tick > 40:
                async def steer():
                    if args.keys:
                        await hold_keys(page, args.keys.split(","))
                    if args.touch:
                        await hold_touches(page, args.touch.split(","))
                    if args.pad:
                        await hold_pad(page, args.pad.split(","))
                keys_task = asyncio.create_task(steer())
            if not screenshot_done and tick > args.screenshot_at:
                shot = await page.call("Page.captureScreenshot", format="png")
                with open(args.screenshot, "wb") as f:
                    f.write(base64.b64decode(shot["data"]))
                result["screenshot_tick"] = tick
                screenshot_done = True
            if time.monotonic() - start > args.timeout:
                result["timed_out"] = True
                break
            await asyncio.sleep(0.2)
        if keys_task:
            try:
                await asyncio.wait_for(keys_task, 30)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                pass
        result["exit"] = state["exit"] if state else None
        result["figures"] = json.loads(await page.eval("JSON.stringify(lockstep.figures)") or "null")
        result["hashes"] = await page.eval("lockstep.hashes()") or ""
        result["slowed"] = await page.eval("lockstep.slowed || null")
        result["key_to_drawn_ms"] = await page.eval("lockstep.key_to_drawn_ms") or []
        result["own_disc"] = own_track
        result["own_disc_touch"] = touch_track
        result["own_disc_pad"] = pad_track
        result["rejoins"] = await page.eval("lockstep.rejoins") or []
        result["shown_rejoins"] = await page.eval("lockstep.shown_rejoins || 0")
        result["clock"] = await page.eval("lockstep.clock || null")
        result["hidden_serves"] = await page.eval("lockstep.hidden_serves || 0")
        if loads:
            result["load"] = {"cold": loads[0], "warm": loads[1] if len(loads) > 1 else None}
        result["resumed"] = await page.eval("lockstep.resumed || false")
        result["hud"] = await page.eval("document.getElementById('hud').textContent")
        result["panel"] = await page.eval("document.getElementById('panel').hidden ? null : document.getElementById('panel').textContent")
        if args.screenshot_end:
            shot = await page.call("Page.captureScreenshot", format="png")
            with open(args.screenshot_end, "wb") as f:
                f.write(base64.b64decode(shot["data"]))
        result["error"] = await page.eval("lockstep.error || null")
        if args.bench:
            result["bench"] = await page.eval(f"JSON.stringify(lockstep.bench({args.bench}))")
            result["bench"] = json.loads(result["bench"]) if result["bench"] else None
        result["console"] = page.console
        result["errors"] = page.errors
        pump.cancel()
        return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--out", required=True)
    ap.add_argument("--screenshot")
    ap.add_argument("--screenshot-at", type=int, default=300, help="the tick after which the screenshot is taken")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--keys")
    ap.add_argument("--touch", help="touch buttons held in turn after the keys, e.g. Up:1,Left:0.3")
    ap.add_argument("--pad", help="a gamepad's stick held each way in turn after the touches, e.g. Up:1,Down:1")
    ap.add_argument("--bench", type=int, default=0)
    ap.add_argument("--reload-at", type=int, default=0, help="reload the page once after this tick")
    ap.add_argument("--viewport", default="800x600", help="the page's size, WxH")
    ap.add_argument("--mobile", action="store_true", help="as a phone: touch, a coarse pointer")
    ap.add_argument("--join-as", help="the page opens on its join screen: type this name and join")
    ap.add_argument("--screenshot-join", help="the join screen, before the name is typed")
    ap.add_argument("--screenshot-end", help="the page once the session ended (its end screen)")
    ap.add_argument("--measure-load", action="store_true",
                    help="the bytes and time of a cold load and of a warm one (a reload), in RESULT.json's load")
    ap.add_argument("--insecure", action="store_true", help="take the server's self-signed certificate")
    ap.add_argument("--hide-at", type=int, default=0, help="after this tick, switch to another tab (this one hidden) ...")
    ap.add_argument("--hide-for", type=float, default=20, help="... for this many seconds, then back to it")
    ap.add_argument("--throttled", action="store_true",
                    help="keep Chromium's throttling of background tabs (the test's default turns it off)")
    args = ap.parse_args()
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    profile = tempfile.mkdtemp(prefix="lockstep-chromium-")
    port_file = os.path.join(profile, "DevToolsActivePort")
    unthrottled = [] if args.throttled else ["--disable-background-timer-throttling", "--disable-renderer-backgrounding",
                                             "--disable-backgrounding-occluded-windows"]
    proc = subprocess.Popen([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                             "--disable-dev-shm-usage",
                             # the data channel to a server on this machine (WebRTC leaves loopback out otherwise)
                             "--allow-loopback-in-peer-connection",
                             f"--user-data-dir={profile}", "--remote-debugging-port=0"] + unthrottled +
                            (["--ignore-certificate-errors"] if args.insecure else []) + ["about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not os.path.exists(port_file) or not open(port_file).read().strip():
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit("browser.py: Chromium did not start")
            time.sleep(0.1)
        port = int(open(port_file).read().split()[0])
        result = asyncio.run(run(args, port))
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(profile, ignore_errors=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps({k: result.get(k) for k in ("exit", "figures", "errors", "timed_out")}, indent=None))


if __name__ == "__main__":
    main()

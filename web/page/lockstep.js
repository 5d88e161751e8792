// The page around lockstep-web: it starts the client from the page's address, calls ls_frame()
// at requestAnimationFrame's rate, draws the shapes the frame left on the canvas, and hands the
// keys to the client. A hidden tab gets no animation frames: a worker's clock keeps the session
// served ten times a second (the page's own timers are throttled then), as a 10 fps client is.
//
// A session that survives the network: the rejoin secret of the welcome is kept in sessionStorage
// (per server), so a reload comes back into the same seat; a session that ends because the network
// went away (no connection, the connection lost, the server silent) is rejoined with it, up to 6
// times over at most 60 s, 1, 2, 4, 8, 8, 8 s apart, the page saying so meanwhile. A secret the
// server no longer knows (its session is another one) is dropped and the page joins afresh once.
//
// Address options (?name=alice&predict=8&bot=7&sim=arena&desync=250):
//   name     the player's name; without it (and without bot) the page opens on a join screen
//            that asks for it (remembered in localStorage)
//   sim      the game: a built-in one by name; default the page's own (the team's module built
//            into this page's wasm: web/CMakeLists.txt, LOCKSTEP_LINKED_MODULES), else "arena"
//   predict  the prediction's limit in ticks (default 64: a 640 ms round trip; 0: off); within it
//            the prediction follows the round trip
//   bot      play with the game's bot and this seed
//   desync   test hook: perturb this client's state after this tick
//   slow_at, slow_for  test hook: from this tick, serve the session once a second for this many
//            seconds, as a hidden tab's throttled timer does (no animation frames), then resume
//   ws       HOST:PORT of the WebSocket door (default: where the page came from)
//   datagrams  0: play over the WebSocket even when the server offers a data channel (default 1:
//            a WebRTC data channel when the server has one; the overlay says which is in use)
//   touch    1: show the touch controls on any screen (they show by themselves on a touch screen)
// Keys, touch buttons and the first gamepad (stick or pad, and its first button) all steer.
// and in the fragment, never sent to a server over HTTP: #token=BASE64, the player's connect token
// (lockstep-token mint --format base64), for a server that admits only token holders.
"use strict";
// index.html names the wasm by its content's hash (web/hashed_names.cmake) in lockstep_wasm.
var Module = {
  locateFile: (path, prefix) => (path.endsWith(".wasm") && typeof lockstep_wasm === "string" ? lockstep_wasm : prefix + path),
};
(function () {
  const q = new URLSearchParams(location.search);
  const door = (q.get("ws") || location.host).split(":");
  const secure = location.protocol === "https:";
  const options = {
    host: door[0] || "127.0.0.1",
    port: Number(door[1] || (secure ? 443 : 80)),
    name: q.get("name") || "",
    sim: q.get("sim") || "",
    // The limit of prediction; within it the predicted world runs as far ahead as this player's
    // inputs are sampled ahead of the confirmed frames, which follows the round trip (64 ticks
    // covers 640 ms, and the library lowers it when the steps do not fit a frame).
    predict: q.has("predict") ? Number(q.get("predict")) : 64,
    bot: Number(q.get("bot") || 0),
    desync: Number(q.get("desync") || 0),
    slow_at: Number(q.get("slow_at") || 0),
    slow_for: Number(q.get("slow_for") || 0),
    // Play over a WebRTC data channel when the server offers one (lockstep-server --webrtc),
    // else over the WebSocket; ?datagrams=0 keeps play on the WebSocket.
    datagrams: q.get("datagrams") !== "0",
  };
  // The connect token from the fragment; a token that is not base64 is said on the page, not left
  // to stop the page on "loading" (atob throws on it).
  const in_fragment = location.hash.match(/[#&]token=([^&]*)/);
  let token = new Uint8Array(0), token_error = "";
  if (in_fragment) {
    try {
      token = Uint8Array.from(atob(decodeURIComponent(in_fragment[1]).replace(/\s+/g, "")), (c) => c.charCodeAt(0));
    } catch (e) {
      token_error = "the connect token in the address (#token=...) is not base64 " +
        "(lockstep-token mint --format base64 writes one): " + e.message;
    }
  }
  // Keys to lockstep::Key: 0 up, 1 down, 2 left, 3 right, 4 space, 5 enter, 6.. letters a..z.
  function keyOf(e) {
    const named = { ArrowUp: 0, ArrowDown: 1, ArrowLeft: 2, ArrowRight: 3, " ": 4, Enter: 5 };
    if (e.key in named) return named[e.key];
    if (e.key.length === 1) {
      const c = e.key.toLowerCase().charCodeAt(0);
      if (c >= 97 && c <= 122) return 6 + c - 97;
    }
    return -1;
  }
  const canvas = document.getElementById("world");
  const hud = document.getElementById("hud");
  const ctx = canvas.getContext("2d");
  // What tests and people read: the figures, the end, and the per-tick hashes the client logged.
  const lockstep = (window.lockstep = { options, exit: -1, figures: null, frames: 0, key_to_drawn_ms: [], rejoins: [] });
  const secret_key = `lockstep.rejoin:${options.host}:${options.port}`;
  const stored = () => { try { return sessionStorage.getItem(secret_key) || ""; } catch (e) { return ""; } };
  const store = (v) => { try { if (v) sessionStorage.setItem(secret_key, v); else sessionStorage.removeItem(secret_key); } catch (e) { /* storage off */ } };
  const retry_delays_s = [1, 2, 4, 8, 8, 8], retry_window_ms = 60000;
  let retry = null;  // while rejoining: { attempt, since, why }
  let waiting = false;  // a rejoin or a fresh join is scheduled: no client to serve meanwhile
  let joined_with = "";  // the secret this client started with ("" : a fresh join)
  // Key to screen as the page sees it: from a key event to the end of the first frame drawn after
  // it (that frame samples the key into the input and, predicting, steps and draws it); the
  // browser shows that frame at its next vsync.
  let keys_waiting = [];
  lockstep.hashes = function () {
    try { return Module.FS.readFile("/hashes.log", { encoding: "utf8" }); } catch (e) { return ""; }
  };
  // The local player's disc in world units, from the latest frame's shapes (drawn in its colour).
  lockstep.own = function () {
    const n = Module._ls_shape_count(), base = Module._ls_shapes() >> 2, f = Module.HEAPF32;
    for (let i = 0; i < n; ++i) {
      const o = base + i * 7;
      if (f[o] === 0 && f[o + 5] === 0xffc828) return { x: f[o + 1], y: f[o + 2] };
    }
    return null;
  };

  function draw() {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.floor(canvas.clientWidth * dpr), h = Math.floor(canvas.clientHeight * dpr);
    if (canvas.width !== w || canvas.height !== h) { canvas.width = w; canvas.height = h; }
    ctx.fillStyle = "#14161c";
    ctx.fillRect(0, 0, w, h);
    const ww = Module._ls_world_width(), wh = Module._ls_world_height();
    if (!(ww > 0 && wh > 0)) return;
    // The world between the status overlay (top) and the keys' line or the touch controls (bottom).
    const top = 58 * dpr, bottom = (touch_shown ? 190 : 26) * dpr, free = Math.max(h - top - bottom, h / 3);
    const scale = Math.min(w / ww, free / wh), ox = (w - ww * scale) / 2, oy = top + (free - wh * scale) / 2;
    ctx.strokeStyle = "#5a5f6e";
    ctx.strokeRect(ox, oy, ww * scale, wh * scale);
    const n = Module._ls_shape_count();
    const base = Module._ls_shapes() >> 2;
    const f = Module.HEAPF32;
    for (let i = 0; i < n; ++i) {
      const o = base + i * 7;
      const kind = f[o], x = f[o + 1], y = f[o + 2], a = f[o + 3], b = f[o + 4];
      const colour = "#" + (f[o + 5] | 0).toString(16).padStart(6, "0");
      if (kind === 0) {
        ctx.fillStyle = colour;
        ctx.beginPath();
        ctx.arc(ox + x * scale, oy + y * scale, Math.max(1, a * scale), 0, 2 * Math.PI);
        ctx.fill();
      } else if (kind === 1) {
        ctx.fillStyle = colour;
        ctx.fillRect(ox + x * scale, oy + y * scale, a * scale, b * scale);
      } else if (kind === 2) {
        ctx.strokeStyle = colour;
        ctx.beginPath();
        ctx.moveTo(ox + x * scale, oy + y * scale);
        ctx.lineTo(ox + a * scale, oy + b * scale);
        ctx.stroke();
      }
    }
  }

  const keys_line = document.getElementById("keys");
  const panel = document.getElementById("panel");
  const controls = document.getElementById("controls");
  const touch_shown = q.get("touch") === "1" || matchMedia("(pointer: coarse)").matches;
  controls.hidden = !touch_shown;
  // The prediction held at its limit: the predicted world as far ahead as it may go (the round
  // trip is longer than the limit covers, and the view waits for confirmed frames).
  // The status overlay: who, where, the connection as measured all along, and the prediction.
  function status_lines(f, code) {
    const held_at_limit = f.predict > 0 && f.predicted_ahead >= f.predict;
    const keys = lockstep.key_to_drawn_ms.slice(-64).sort((x, y) => x - y);
    const key_ms = keys.length ? keys[Math.floor(keys.length / 2)].toFixed(1) + " ms" : "-";
    const line1 = `${options.name}  ${f.game}  tick ${f.tick}  ${f.ticks_per_second.toFixed(1)} ticks/s  ` +
      `${f.players} players  round trip ${f.rtt_ms} ms  loss ${(100 * f.loss).toFixed(1)} %  over ${f.play_path}`;
    const predict = document.createElement("span");
    predict.textContent = f.predict ? `prediction ${f.predicted_ahead} ticks ahead (limit ${f.predict})` +
      (held_at_limit ? ", held at its limit" : "") : "no prediction";
    if (held_at_limit) predict.className = "warn";
    const rest = `  key to screen ${key_ms}  input to screen ${f.input_to_screen_ms.p50.toFixed(1)} ms  hash ${f.hash}` +
      (f.desynced ? "  DESYNCED" : "") + (code >= 0 ? `\n${f.end_message}` : "");
    return [line1 + "\n", predict, rest];
  }
  // The panel: the join screen, and what ended the session, in words.
  function show_panel(title, lines, button, on_button, input) {
    const box = document.createElement(input ? "form" : "div");
    box.className = "box";
    const h = document.createElement("h1");
    h.textContent = title;
    box.append(h);
    for (const l of lines) {
      const p = document.createElement("div");
      p.textContent = l.text || l;
      if (l.error) p.className = "error";
      box.append(p);
    }
    if (input) box.append(input, document.createElement("br"));
    if (button) {
      const b = document.createElement("button");
      b.textContent = button;
      b.type = input ? "submit" : "button";
      if (!input) b.onclick = on_button;
      box.append(b);
    }
    if (input) box.onsubmit = (e) => { e.preventDefault(); on_button(); };
    panel.replaceChildren(box);
    panel.hidden = false;
  }
  function show_end(code) {
    const f = lockstep.figures || {};
    const title = code === 0 ? "The session is over" : f.desynced ? "This player's game diverged" : "The session ended";
    const lines = [f.end_message || lockstep.error || lockstep.last_error || "", `tick ${f.tick || 0}` + (f.hash ? `, state ${f.hash}` : "")];
    if (code !== 0) lines[0] = { text: lines[0], error: true };
    show_panel(title, lines, "Play again", () => location.reload());
  }
  // Touch and pointer: each button holds its key while pressed.
  for (const b of controls.querySelectorAll("button")) {
    const k = Number(b.dataset.key);
    const down = (e) => { e.preventDefault(); b.setPointerCapture(e.pointerId); b.classList.add("held"); press(k, true, e.timeStamp); };
    const up = (e) => { e.preventDefault(); b.classList.remove("held"); press(k, false); };
    b.addEventListener("pointerdown", down);
    b.addEventListener("pointerup", up);
    b.addEventListener("pointercancel", up);
  }
  // The first gamepad, read every frame: its stick or pad steers, its first button is the action.
  const pad_held = new Map();
  function poll_gamepad() {
    const pads = navigator.getGamepads ? navigator.getGamepads() : [];
    const pad = pads && Array.from(pads).find((p) => p && p.connected);
    if (!pad) return;
    const b = (i) => pad.buttons[i] && pad.buttons[i].pressed;
    const x = pad.axes[0] || 0, y = pad.axes[1] || 0;
    const want = [y < -0.5 || b(12), y > 0.5 || b(13), x < -0.5 || b(14), x > 0.5 || b(15), b(0)];
    want.forEach((on, k) => { if (!!pad_held.get(k) !== on) { pad_held.set(k, on); press(k, on, performance.now()); } });
  }
  function press(k, held, when) {
    if (!Module._ls_key) return;
    Module._ls_key(k, held ? 1 : 0);
    if (held && when !== undefined) keys_waiting.push(when);
  }

  let last_hud = 0;
  function frame() {
    if (waiting) return false;
    poll_gamepad();
    const code = Module._ls_frame();
    lockstep.frames++;
    draw();
    if (keys_waiting.length) {
      const now = performance.now();
      for (const t of keys_waiting) lockstep.key_to_drawn_ms.push(now - t);
      keys_waiting = [];
    }
    const now = performance.now();
    if (now - last_hud > 250 || code >= 0) {
      last_hud = now;
      const figures = JSON.parse(Module.UTF8ToString(Module._ls_figures()));
      lockstep.figures = figures;
      hud.replaceChildren(...status_lines(figures, code));
      keys_line.textContent = figures.controls ? `${figures.game}: ${figures.controls}` +
        (touch_shown ? "" : "  (a gamepad's stick and first button work too)") : "";
    }
    if (code < 0) {
      if (!joined_with || retry) {  // the welcome's secret, once, for a reload or a rejoin
        const secret = Module.UTF8ToString(Module._ls_rejoin_secret());
        if (secret) {
          store(secret);
          joined_with = secret;
          if (retry) { lockstep.rejoins.push({ attempt: retry.attempt, after_ms: performance.now() - retry.since, tick: lockstep.figures ? lockstep.figures.tick : 0 }); retry = null; }
        }
      }
      return true;
    }
    return ended(code);
  }
  // The session ended: rejoin when the network took it and the secret is known, join afresh once
  // when the server no longer knows the secret, else the end is the page's.
  function ended(code) {
    const figures = lockstep.figures || {};
    // The network took the session: the connection lost, or the server dropped this player for
    // silence (a tab hidden and throttled past the server's bound, a network gone quiet).
    const lost = Module._ls_connection_lost() === 1 || /dropped by the server: silent for/.test(figures.end_message || "");
    if (code === 0) store("");
    // (Not after this client diverged: the server drops a diverged player, and coming back with a
    // fresh state would hide what the desync report shows.)
    if (lost && joined_with && !figures.desynced) {
      const now = performance.now();
      if (!retry) retry = { attempt: 0, since: now, why: figures.end_message || "the connection was lost" };
      if (retry.attempt < retry_delays_s.length && now - retry.since < retry_window_ms) {
        const wait = retry_delays_s[retry.attempt++];
        hud.textContent = `${options.name}: ${retry.why}. Rejoining in ${wait} s (attempt ${retry.attempt} of ${retry_delays_s.length})…`;
        waiting = true;
        setTimeout(() => { waiting = false; if (start(joined_with)) requestAnimationFrame(animate); }, wait * 1000);
        return false;
      }
      hud.textContent = `${options.name}: ${retry.why}. Gave up rejoining after ${retry.attempt} attempts.`;
      // Rejoins that ran out while the tab was hidden (its timers throttled) start again when the
      // player comes back to it.
      lockstep.rejoin_when_shown = true;
    } else if (code !== 0 && joined_with && /unknown rejoin secret/.test(figures.end_message || "") && !lockstep.fresh) {
      // A secret from an earlier session (a reload long after, another match): join afresh, once.
      store("");
      lockstep.fresh = true;
      joined_with = "";
      hud.textContent = `${options.name}: the server no longer knows this page's seat; joining afresh…`;
      waiting = true;
      setTimeout(() => { waiting = false; if (start("")) requestAnimationFrame(animate); }, 200);
      return false;
    }
    lockstep.exit = code;
    show_end(code);
    return false;
  }
  function animate() {
    if (!frame()) return;
    const tick = lockstep.figures ? lockstep.figures.tick : 0;
    if (options.slow_at > 0 && tick >= options.slow_at && !lockstep.slowed) {
      lockstep.slowed = { at_tick: tick, frames: 0 };
      const until = performance.now() + options.slow_for * 1000;
      const slow = () => {
        lockstep.slowed.frames++;
        if (!frame()) return;
        if (performance.now() < until) setTimeout(slow, 1000);
        else requestAnimationFrame(animate);
      };
      setTimeout(slow, 1000);
      return;
    }
    requestAnimationFrame(animate);
  }
  // A hidden tab gets no animation frames, and the client steps what waits when it comes back.
  // Chromium throttles a hidden tab's timers to once a second, and after five minutes hidden to
  // once a minute, which would leave the session silent past the server's bound; a worker's timer
  // is not throttled so. The worker ticks every 100 ms and the page serves its session on each
  // tick while hidden (and falls back to its own timer where workers are not to be had).
  function keep_served() {
    if (!document.hidden || lockstep.exit >= 0) return;
    lockstep.hidden_serves = (lockstep.hidden_serves || 0) + 1;
    frame();
  }
  function keep_served_by_timer() { keep_served(); if (lockstep.exit < 0) setTimeout(keep_served_by_timer, 100); }
  function start_clock() {
    try {
      const code = "setInterval(() => postMessage(0), 100);";
      const clock = new Worker(URL.createObjectURL(new Blob([code], { type: "text/javascript" })));
      clock.onmessage = keep_served;
      lockstep.clock = "worker";
    } catch (e) {
      lockstep.clock = "timer";
      setTimeout(keep_served_by_timer, 100);
    }
  }
  // Shown again after rejoins ran out while hidden: rejoin now, with the seat's secret.
  document.addEventListener("visibilitychange", () => {
    if (document.hidden || !lockstep.rejoin_when_shown || !joined_with) return;
    lockstep.rejoin_when_shown = false;
    lockstep.exit = -1;
    panel.hidden = true;
    retry = { attempt: 0, since: performance.now(), why: "back after the tab was hidden" };
    lockstep.shown_rejoins = (lockstep.shown_rejoins || 0) + 1;
    if (start(joined_with)) requestAnimationFrame(animate);
  });

  // Starts (or restarts) the client, with a rejoin secret or "" for a fresh join; false when it
  // cannot start (said on the page).
  function start(secret) {
    joined_with = secret;
    Module.ccall("ls_set_datagrams", null, ["number"], [options.datagrams ? 1 : 0]);
    const code = Module.ccall("ls_start", "number",
      ["string", "number", "number", "string", "string", "number", "number", "number", "array", "number", "string"],
      [options.host, options.port, secure ? 1 : 0, options.name, options.sim, options.predict, options.bot,
       secret ? 0 : options.desync, token, token.length, secret]);
    if (code !== 0) {
      hud.textContent = "cannot start: " + (lockstep.last_error || "see the console");
      lockstep.exit = code;
      show_end(code);
      return false;
    }
    return true;
  }

  // The client's log lines go to the console; its last error is what the page says when it ends.
  Module.print = (t) => console.log(t);
  Module.printErr = (t) => {
    console.log(t);
    const m = /(?:error|warn): (.*)$/.exec(t);
    if (m && / error: /.test(" " + t)) lockstep.last_error = m[1];
  };
  // The join screen: the player's name (remembered), the server the page came from or ?ws= names.
  function ask_name(then) {
    const input = document.createElement("input");
    input.id = "name";
    input.maxLength = 32;
    input.autocomplete = "nickname";
    try { input.value = localStorage.getItem("lockstep.name") || ""; } catch (e) { /* storage off */ }
    input.placeholder = "your name";
    show_panel("Join the game", [`server ${options.host}:${options.port}` + (token.length ? ", with your connect token" : ""),
      "Your name:"], "Join", () => {
      const name = input.value.trim().replace(/[^\x20-\x7e]/g, "").slice(0, 32);
      if (!name) { input.focus(); return; }
      try { localStorage.setItem("lockstep.name", name); } catch (e) { /* storage off */ }
      options.name = name;
      panel.hidden = true;
      then();
    }, input);
    input.focus();
  }
  Module.onRuntimeInitialized = function () {
    lockstep.ready_ms = performance.now();  // the page and its wasm loaded and compiled
    if (token_error) {
      hud.textContent = "cannot join: " + token_error;
      lockstep.error = token_error;
      lockstep.exit = 2;
      show_end(2);
      return;
    }
    if (!options.name && !options.bot) {
      hud.textContent = "";
      ask_name(begin);
      return;
    }
    if (!options.name) options.name = "web";
    begin();
  };
  function begin() {
    const secret = stored();
    lockstep.resumed = secret !== "";  // a reload: back into the seat this tab had
    if (!start(secret)) return;
    lockstep.bench = (ticks) => JSON.parse(Module.ccall("ls_bench_step", "string", ["string", "number"], [options.sim, ticks]));
    addEventListener("keydown", (e) => {
      const k = keyOf(e);
      if (k < 0) return;
      Module._ls_key(k, 1);
      e.preventDefault();
      if (!e.repeat) keys_waiting.push(e.timeStamp);
    });
    addEventListener("keyup", (e) => { const k = keyOf(e); if (k >= 0) { Module._ls_key(k, 0); e.preventDefault(); } });
    addEventListener("pagehide", () => Module._ls_leave());
    requestAnimationFrame(animate);
    start_clock();
  }
})();

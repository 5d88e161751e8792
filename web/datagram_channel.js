// The page's datagram path (docs/PROTOCOL.md §17.1), an emscripten JS library linked into
// lockstep-web: a WebRTC data channel, unordered and without retransmissions, negotiated by both
// sides as id 0, for the play channel's messages. web_transport.cpp drives it: ls_rtc_open()
// makes the offer, which the transport sends over the WebSocket; the server's answer comes back
// through ls_rtc_answer(). What the channel does is reported to the transport through its
// exported functions: _ls_rtc_offer (the offer's text), _ls_rtc_state (open or closed, and why)
// and _ls_rtc_message (a message received).
mergeInto(LibraryManager.library, {
  $lsRtc: { pc: null, dc: null, open: false, generation: 0 },

  ls_rtc_open__deps: ["$lsRtc", "$stringToNewUTF8"],
  ls_rtc_open: function () {
    const generation = ++lsRtc.generation;
    const closed = (why) => {
      if (lsRtc.generation !== generation) return;  // an earlier channel's news
      const was = lsRtc.pc;
      lsRtc.pc = lsRtc.dc = null;
      lsRtc.open = false;
      try { if (was) was.close(); } catch (e) {}
      const text = stringToNewUTF8(String(why));
      Module["_ls_rtc_state"](0, text);
      _free(text);
    };
    if (typeof RTCPeerConnection === "undefined") return closed("this browser has no WebRTC");
    let pc;
    try {
      pc = new RTCPeerConnection({ iceServers: [] });
    } catch (e) {
      return closed("WebRTC is off in this browser: " + e.message);
    }
    const dc = pc.createDataChannel("play", { ordered: false, maxRetransmits: 0, negotiated: true, id: 0 });
    dc.binaryType = "arraybuffer";
    lsRtc.pc = pc;
    lsRtc.dc = dc;
    lsRtc.open = false;
    dc.onopen = () => {
      if (lsRtc.generation !== generation) return;
      lsRtc.open = true;
      Module["_ls_rtc_state"](1, 0);
    };
    dc.onclose = () => closed("the data channel closed");
    dc.onerror = (e) => closed("the data channel failed" + (e && e.error ? ": " + e.error.message : ""));
    pc.onconnectionstatechange = () => {
      if (pc.connectionState === "failed") closed("the data channel's connection failed");
    };
    dc.onmessage = (e) => {
      if (lsRtc.generation !== generation || !(e.data instanceof ArrayBuffer)) return;
      const bytes = new Uint8Array(e.data);
      const at = _malloc(bytes.length || 1);
      HEAPU8.set(bytes, at);
      Module["_ls_rtc_message"](at, bytes.length);
      _free(at);
    };
    pc.createOffer()
      .then((offer) => pc.setLocalDescription(offer))
      .then(() => {
        if (lsRtc.generation !== generation) return;
        const text = stringToNewUTF8(pc.localDescription.sdp);
        Module["_ls_rtc_offer"](text);
        _free(text);
      })
      .catch((e) => closed("no offer: " + e.message));
  },

  ls_rtc_answer__deps: ["$lsRtc"],
  ls_rtc_answer: function (text, length) {
    const pc = lsRtc.pc;
    if (!pc) return;
    const generation = lsRtc.generation;
    pc.setRemoteDescription({ type: "answer", sdp: UTF8ToString(text, length) }).catch((e) => {
      if (lsRtc.generation !== generation) return;
      lsRtc.pc = lsRtc.dc = null;
      lsRtc.open = false;
      try { pc.close(); } catch (x) {}
      const why = stringToNewUTF8("the server's answer was refused: " + e.message);
      Module["_ls_rtc_state"](0, why);
      _free(why);
    });
  },

  ls_rtc_send__deps: ["$lsRtc"],
  ls_rtc_send: function (bytes, length) {
    if (!lsRtc.open || !lsRtc.dc || lsRtc.dc.readyState !== "open") return 0;
    try {
      lsRtc.dc.send(HEAPU8.slice(bytes, bytes + length));
      return 1;
    } catch (e) {
      return 0;
    }
  },

  // Closes the channel without a report (the transport knows why).
  ls_rtc_close__deps: ["$lsRtc"],
  ls_rtc_close: function () {
    ++lsRtc.generation;
    const pc = lsRtc.pc;
    lsRtc.pc = lsRtc.dc = null;
    lsRtc.open = false;
    try { if (pc) pc.close(); } catch (e) {}
  },
});

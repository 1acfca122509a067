/*
 * voiced widget: a voice call button for any web page.
 *
 *   <script src="https://voice.example.com/widget.js" data-key="pk_live_..." async></script>
 *
 * Attributes: data-key (the publishable key, required), data-server (the
 * voiced base URL; default: where this script came from), data-label (the
 * button text), data-position ("bottom-right" or "bottom-left"),
 * data-ice-servers (a JSON list of RTCIceServer used instead of the
 * server's), data-ice-transport-policy ("relay" sends media only through
 * TURN). The page's host must be in the key's allowed domains (localhost
 * and 127.0.0.1 always are).
 *
 * While the microphone is being allowed, GET
 * {server}/v1/widget/ice-servers fetches the node's STUN/TURN servers with
 * fresh credentials (an empty list when it has none). Signalling is then
 * one HTTP round trip: the offer, with every ICE candidate, goes to POST
 * {server}/v1/widget/calls and the answer comes back. Live
 * events (transcript, state) arrive on the "events" data channel; hanging
 * up sends {"type":"hangup"} on it and closes the connection.
 *
 * window.voicedWidget is the instance (state, transcript, callId, pc,
 * start(), hangup()); every state change also fires a "voiced:state"
 * event on window with {state, detail}.
 */
(function () {
  "use strict";
  var script = document.currentScript;
  if (!script || window.voicedWidget) {
    return;
  }
  var key = script.getAttribute("data-key") || "";
  var server = (script.getAttribute("data-server") || new URL(script.src, location.href).origin).replace(/\/+$/, "");
  var label = script.getAttribute("data-label") || "Talk to us";
  var left = script.getAttribute("data-position") === "bottom-left";
  var pageIceServers = null;
  if (script.hasAttribute("data-ice-servers")) {
    try {
      pageIceServers = JSON.parse(script.getAttribute("data-ice-servers"));
    } catch (e) {
      pageIceServers = [];
    }
  }
  var icePolicy = script.getAttribute("data-ice-transport-policy") === "relay" ? "relay" : "all";

  var GATHER_TIMEOUT_MS = 3000;
  var LABELS = {
    idle: label,
    microphone: "Allow the microphone\u2026",
    connecting: "Connecting\u2026",
    connected: "Connected",
    reconnecting: "Reconnecting\u2026",
    ended: "Call ended",
    error: "Call failed"
  };

  var CSS =
    ":host{all:initial}" +
    ".box{position:fixed;bottom:20px;" + (left ? "left" : "right") + ":20px;z-index:2147483000;font:14px/1.4 system-ui,sans-serif;color:#111}" +
    ".btn{border:0;border-radius:24px;padding:12px 20px;background:#1a56db;color:#fff;font:inherit;font-weight:600;cursor:pointer;box-shadow:0 2px 8px rgba(0,0,0,.25)}" +
    ".btn.hang{background:#c81e1e}" +
    ".btn:disabled{opacity:.6;cursor:default}" +
    ".panel{display:none;width:300px;margin-bottom:10px;background:#fff;border-radius:12px;box-shadow:0 4px 16px rgba(0,0,0,.2);padding:12px}" +
    ".panel.open{display:block}" +
    ".status{font-weight:600;margin-bottom:6px}" +
    ".status .dot{display:inline-block;width:8px;height:8px;border-radius:50%;background:#999;margin-right:6px}" +
    ".status.connected .dot{background:#0e9f6e}.status.error .dot{background:#c81e1e}" +
    ".lines{max-height:200px;overflow-y:auto;font-size:13px}" +
    ".line{margin:4px 0}.line .who{font-weight:600;margin-right:4px}";

  function Widget() {
    this.state = "idle";
    this.detail = "";
    this.transcript = [];
    this.callId = null;
    this.pc = null;
    this.dc = null;
    this.stream = null;
    this.audio = null;
    this.startedAt = 0;
    this.build();
  }

  Widget.prototype.build = function () {
    var host = document.createElement("div");
    host.setAttribute("data-voiced-widget", "");
    var root = host.attachShadow ? host.attachShadow({ mode: "open" }) : host;
    var style = document.createElement("style");
    style.textContent = CSS;
    root.appendChild(style);
    var box = document.createElement("div");
    box.className = "box";
    this.panel = document.createElement("div");
    this.panel.className = "panel";
    this.panel.setAttribute("role", "log");
    this.status = document.createElement("div");
    this.status.className = "status";
    this.lines = document.createElement("div");
    this.lines.className = "lines";
    this.panel.appendChild(this.status);
    this.panel.appendChild(this.lines);
    this.button = document.createElement("button");
    this.button.className = "btn";
    this.button.type = "button";
    var self = this;
    this.button.addEventListener("click", function () {
      if (self.busy()) {
        self.hangup("caller_hangup");
      } else {
        self.start();
      }
    });
    box.appendChild(this.panel);
    box.appendChild(this.button);
    root.appendChild(box);
    this.root = root;
    (document.body || document.documentElement).appendChild(host);
    this.render();
  };

  Widget.prototype.busy = function () {
    return this.state === "microphone" || this.state === "connecting" || this.state === "connected" || this.state === "reconnecting";
  };

  Widget.prototype.setState = function (state, detail) {
    this.state = state;
    this.detail = detail || "";
    this.render();
    try {
      window.dispatchEvent(new CustomEvent("voiced:state", { detail: { state: state, detail: this.detail, callId: this.callId } }));
    } catch (e) {
      /* old browsers */
    }
  };

  Widget.prototype.render = function () {
    var busy = this.busy();
    this.button.textContent = busy ? "Hang up" : label;
    this.button.className = busy ? "btn hang" : "btn";
    this.button.disabled = this.state === "microphone";
    this.panel.className = this.state === "idle" ? "panel" : "panel open";
    this.status.className = "status " + this.state;
    this.status.textContent = "";
    var dot = document.createElement("span");
    dot.className = "dot";
    this.status.appendChild(dot);
    this.status.appendChild(document.createTextNode(LABELS[this.state] + (this.detail ? ": " + this.detail : "")));
  };

  Widget.prototype.addLine = function (role, text) {
    var entry = { role: role, text: text };
    this.transcript.push(entry);
    var line = document.createElement("div");
    line.className = "line";
    var who = document.createElement("span");
    who.className = "who";
    who.textContent = role === "assistant" ? "Agent:" : role === "user" ? "You:" : "";
    line.appendChild(who);
    line.appendChild(document.createTextNode(text));
    this.lines.appendChild(line);
    this.lines.scrollTop = this.lines.scrollHeight;
  };

  Widget.prototype.onMessage = function (raw) {
    var m;
    try {
      m = JSON.parse(raw);
    } catch (e) {
      return;
    }
    if (m.type === "transcript") {
      var text = m.text;
      if (!text) {
        text = "(" + ((m.duration_ms || 0) / 1000).toFixed(1) + " s of speech)";
      }
      this.addLine(m.role, text);
    } else if (m.type === "ended") {
      this.finish("ended", m.reason || "");
    }
  };

  function gathered(pc, ms) {
    return new Promise(function (resolve) {
      if (pc.iceGatheringState === "complete") {
        resolve();
        return;
      }
      var timer = setTimeout(resolve, ms);
      pc.addEventListener("icegatheringstatechange", function () {
        if (pc.iceGatheringState === "complete") {
          clearTimeout(timer);
          resolve();
        }
      });
    });
  }

  // iceServers resolves to the RTCIceServer list for this call: the
  // page's own when it gave one, else the server's (with TURN credentials
  // made for this key). A refusal carries the server's reason.
  function iceServers() {
    if (pageIceServers) {
      return Promise.resolve({ servers: pageIceServers });
    }
    return fetch(server + "/v1/widget/ice-servers?publishable_key=" + encodeURIComponent(key), { credentials: "omit" })
      .then(function (res) {
        return res.json().catch(function () {
          return {};
        }).then(function (body) {
          if (!res.ok) {
            return { error: body.detail || "HTTP " + res.status };
          }
          return { servers: body.ice_servers || [] };
        });
      })
      .catch(function () {
        return { servers: [] }; // unreachable: the call request will say why
      });
  }

  Widget.prototype.start = async function () {
    if (this.busy()) {
      return;
    }
    this.transcript = [];
    this.lines.textContent = "";
    this.callId = null;
    if (!key) {
      this.setState("error", "the widget has no data-key");
      return;
    }
    if (!window.RTCPeerConnection || !navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
      this.setState("error", "this browser cannot make calls (a secure https page is needed)");
      return;
    }
    this.setState("microphone");
    var ice = iceServers();
    try {
      this.stream = await navigator.mediaDevices.getUserMedia({
        audio: { echoCancellation: true, noiseSuppression: true, autoGainControl: true },
        video: false
      });
    } catch (e) {
      this.setState("error", "microphone permission denied");
      return;
    }
    if (this.state !== "microphone") {
      this.stopStream();
      return; // hung up meanwhile
    }
    this.setState("connecting");
    var got = await ice;
    if (this.state !== "connecting") {
      this.stopStream();
      return; // hung up meanwhile
    }
    if (got.error) {
      this.finish("error", got.error);
      return;
    }
    var self = this;
    var pc = new RTCPeerConnection({ iceServers: got.servers, iceTransportPolicy: icePolicy, bundlePolicy: "max-bundle" });
    this.pc = pc;
    this.stream.getAudioTracks().forEach(function (t) {
      pc.addTrack(t, self.stream);
    });
    this.dc = pc.createDataChannel("events");
    this.dc.onmessage = function (e) {
      self.onMessage(e.data);
    };
    pc.ontrack = function (e) {
      var audio = self.audio || new Audio();
      audio.autoplay = true;
      audio.srcObject = (e.streams && e.streams[0]) || new MediaStream([e.track]);
      self.audio = audio;
      var p = audio.play();
      if (p && p.catch) {
        p.catch(function () {});
      }
    };
    pc.onconnectionstatechange = function () {
      if (self.pc !== pc) {
        return;
      }
      switch (pc.connectionState) {
        case "connected":
          if (!self.startedAt) {
            self.startedAt = Date.now();
          }
          self.setState("connected");
          break;
        case "disconnected":
          self.setState("reconnecting");
          break;
        case "failed":
          self.finish("error", "the connection was lost");
          break;
      }
    };
    try {
      await pc.setLocalDescription(await pc.createOffer());
      await gathered(pc, GATHER_TIMEOUT_MS);
      if (this.pc !== pc) {
        return;
      }
      var res = await fetch(server + "/v1/widget/calls", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ publishable_key: key, sdp: pc.localDescription.sdp }),
        credentials: "omit"
      });
      var body = await res.json().catch(function () {
        return {};
      });
      if (!res.ok) {
        var msg = body.detail || (body.sdp && body.sdp[0]) || "HTTP " + res.status;
        this.finish("error", msg);
        return;
      }
      if (this.pc !== pc) {
        return;
      }
      this.callId = body.call_id;
      await pc.setRemoteDescription({ type: "answer", sdp: body.sdp });
    } catch (e) {
      this.finish("error", (e && e.message) || "could not connect");
    }
  };

  Widget.prototype.stopStream = function () {
    if (this.stream) {
      this.stream.getTracks().forEach(function (t) {
        t.stop();
      });
      this.stream = null;
    }
  };

  // finish releases the call's resources and shows the final state.
  Widget.prototype.finish = function (state, detail) {
    var pc = this.pc;
    this.pc = null;
    if (this.dc) {
      this.dc.onmessage = null;
      this.dc = null;
    }
    if (pc) {
      pc.close();
    }
    this.stopStream();
    if (this.audio) {
      this.audio.srcObject = null;
    }
    this.startedAt = 0;
    this.setState(state, detail);
  };

  Widget.prototype.hangup = function (reason) {
    if (this.dc && this.dc.readyState === "open") {
      try {
        this.dc.send(JSON.stringify({ type: "hangup", reason: reason || "caller_hangup" }));
      } catch (e) {
        /* closing anyway */
      }
    }
    this.finish("ended", "");
  };

  function init() {
    window.voicedWidget = new Widget();
    window.addEventListener("pagehide", function () {
      if (window.voicedWidget.busy()) {
        window.voicedWidget.hangup("page_closed");
      }
    });
  }
  if (document.body) {
    init();
  } else {
    document.addEventListener("DOMContentLoaded", init);
  }
})();

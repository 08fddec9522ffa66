// ahp-tap HTML report: renders the embedded findings (grouped by
// fingerprint) and the conversation (every exchange, observe
// notification, stray line and transport note) a page at a time. Filters
// live in location.hash (#check=BASE-2&level=error…), so a filtered view
// is a link. No network, no external code. Everything from the capture
// reaches the DOM as text (textContent, text nodes), never as markup.
"use strict";
(function () {
  var PAGE = 100, OCCURRENCES = 50, SUMMARY = 120;
  var $ = function (id) { return document.getElementById(id); };
  var data = function (id, dflt) {
    var e = $(id);
    if (!e) return dflt;
    try { return JSON.parse(e.textContent); } catch (err) { return dflt; }
  };
  var findings = data("data-findings", []), exchanges = data("data-exchanges", []), items = data("data-timeline", []);
  var groupCounts = data("data-groups", {}) || {}, related = data("data-related", {}) || {};
  var has = function (o, k) { return Object.prototype.hasOwnProperty.call(o, k); };
  var el = function (tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  var key = function (o, seq) { return o.in + "\u0000" + (o.g || 0) + "\u0000" + (o.conn || "") + "\u0000" + seq; };

  // Indexes: frames by identity, exchanges by their frames, findings by
  // frame, first deliveries by event id; and the conversation: one row
  // per exchange (at its first frame), observe notification, other frame
  // (a stray line, bad JSON) and note, in the order the tap saw them.
  // Exchanges whose frames are not in the page come last. The live view
  // rebuilds them as messages arrive.
  var frameByKey, xByFrame, byFrame, firstDelivery, rows, rowOfFrame;
  var findingsOf = function (o, seq) { return seq ? byFrame[key(o, seq)] || [] : []; };
  var exchangeRow = function (x) {
    var r = { t: "x", x: x, rq: x.rq ? frameByKey[key(x, x.rq)] : null, rs: x.rs ? frameByKey[key(x, x.rs)] : null };
    r.fs = findingsOf(x, x.rq).concat(findingsOf(x, x.rs));
    return r;
  };
  function rebuild() {
    frameByKey = {}; xByFrame = {}; byFrame = {}; firstDelivery = {}; rows = []; rowOfFrame = {};
    var placed = {};
    items.forEach(function (it) { if (it.k !== "note") frameByKey[key(it, it.seq)] = it; });
    exchanges.forEach(function (x, i) {
      x.i = i;
      if (x.rq) xByFrame[key(x, x.rq)] = x;
      if (x.rs) xByFrame[key(x, x.rs)] = x;
      if (x.eid && x.rq) {
        var ek = x.in + "\u0000" + x.eid;
        if (!has(firstDelivery, ek)) firstDelivery[ek] = x;
      }
    });
    findings.forEach(function (f) {
      if (!f.seq) return;
      var k = key(f, f.seq);
      (byFrame[k] = byFrame[k] || []).push(f);
    });
    items.forEach(function (it) {
      var r;
      if (it.k === "note") r = { t: "note", it: it, fs: [] };
      else {
        var x = xByFrame[key(it, it.seq)];
        if (x) {
          if (placed[x.i]) { rowOfFrame[key(it, it.seq)] = placed[x.i] - 1; return; }
          r = exchangeRow(x);
          placed[x.i] = rows.length + 1;
        } else r = { t: it.k, it: it, fs: findingsOf(it, it.seq) };
        rowOfFrame[key(it, it.seq)] = rows.length;
      }
      rows.push(r);
    });
    exchanges.forEach(function (x) {
      if (placed[x.i]) return;
      var r = exchangeRow(x);
      if (x.rq) rowOfFrame[key(x, x.rq)] = rows.length;
      if (x.rs) rowOfFrame[key(x, x.rs)] = rows.length;
      rows.push(r);
    });
    rows.forEach(function (r, i) {
      r.n = i;
      var o = r.x || r.it;
      r.conn = o.conn || "";
      r.ev = r.x ? r.x.ev || "" : r.it.ev || "";
      r.out = r.x ? r.x.out || "" : "";
    });
    options("f-link", rows.map(function (r) { return r.conn; }).concat(findings.map(function (f) { return f.conn || ""; })));
    options("f-outcome", exchanges.map(function (x) { return x.out || ""; }));
    options("f-event", rows.map(function (r) { return r.ev; }).concat(findings.map(function (f) { return f.ev || ""; })));
  }
  var outcomeOf = function (f) {
    var x = f.seq ? xByFrame[key(f, f.seq)] : null;
    return x ? x.out || "" : "";
  };

  // Filter options that come from the traffic (text, never markup), added
  // to those the page has; at most 500 per filter.
  function options(id, values) {
    var sel = $(id), seen = {}, list = [];
    for (var i = 0; i < sel.options.length; i++) seen[sel.options[i].value] = true;
    values.forEach(function (v) { if (v && !has(seen, v) && sel.options.length + list.length < 500) { seen[v] = true; list.push(v); } });
    list.sort().forEach(function (v) { var o = el("option", "", v); o.value = v; sel.appendChild(o); });
  }
  // The views a link may open (#tab=…). The value names an element, so
  // only these are taken: "#tab=claim" or "#tab=verdict" must not empty
  // the claim table or the verdict badge, nor hide the failing rows.
  var TABS = ["findings", "timeline"];
  var FILTERS = ["check", "level", "event", "link", "outcome", "text"];
  var fresh = function () { return { check: "", level: "", event: "", link: "", outcome: "", text: "", tab: "findings", page: 1, open: "" }; };
  var state = fresh();

  function readHash() {
    var h = location.hash.replace(/^#/, "");
    state = fresh();
    h.split("&").forEach(function (kv) {
      var i = kv.indexOf("=");
      if (i < 0) return;
      var k, v;
      try { k = decodeURIComponent(kv.slice(0, i)); v = decodeURIComponent(kv.slice(i + 1)); } catch (e) { return; }
      if (k === "page") state.page = Math.max(1, parseInt(v, 10) || 1);
      else if (k === "tab") state.tab = TABS.indexOf(v) >= 0 ? v : "findings";
      else if (k === "open") state.open = v;
      else if (FILTERS.indexOf(k) >= 0) state[k] = v;
    });
    FILTERS.forEach(function (k) { $("f-" + k).value = state[k]; });
  }
  function writeHash() {
    var parts = [];
    FILTERS.concat(["tab", "page", "open"]).forEach(function (k) {
      var v = state[k];
      if (v && !(k === "tab" && v === "findings") && !(k === "page" && v === 1)) parts.push(k + "=" + encodeURIComponent(v));
    });
    var h = parts.length ? "#" + parts.join("&") : "#";
    if (location.hash !== h) history.replaceState(null, "", h);
    render();
  }
  function textIn(o, t) {
    for (var k in o) {
      if (has(o, k) && k !== "frame" && k !== "raw" && typeof o[k] !== "object" && String(o[k]).toLowerCase().indexOf(t) >= 0) return true;
    }
    return false;
  }
  function keepFinding(f) {
    return (!state.check || f.check === state.check) && (!state.level || f.level === state.level) &&
      (!state.event || f.ev === state.event) && (!state.link || (f.conn || "") === state.link) &&
      (!state.outcome || outcomeOf(f) === state.outcome) && (!state.text || textIn(f, state.text.toLowerCase()));
  }
  function keepRow(r) {
    if (state.event && r.ev !== state.event) return false;
    if (state.link && r.conn !== state.link) return false;
    if (state.outcome && r.out !== state.outcome) return false;
    if ((state.check || state.level) && !r.fs.some(function (f) {
      return (!state.check || f.check === state.check) && (!state.level || f.level === state.level);
    })) return false;
    if (state.text) {
      var t = state.text.toLowerCase();
      var objs = r.x ? [r.x, r.rq, r.rs] : [r.it];
      if (!objs.some(function (o) { return o && (textIn(o, t) || (o.raw && o.raw.toLowerCase().indexOf(t) >= 0)); }) &&
        !r.fs.some(function (f) { return textIn(f, t); })) return false;
    }
    return true;
  }

  // A JSON reader that keeps every token as written (ids above 2^53,
  // duplicate keys and number spellings are facts to an auditor).
  function parseJSON(s) {
    var i = 0;
    function ws() { while (i < s.length && " \t\r\n".indexOf(s[i]) >= 0) i++; }
    function str() {
      var j = i++;
      while (i < s.length && s[i] !== '"') { if (s[i] === "\\") i++; i++; }
      if (i >= s.length) throw new Error("unterminated string");
      i++;
      return s.slice(j, i);
    }
    function val() {
      ws();
      var c = s[i];
      if (c === "{") {
        i++; var m = [];
        ws();
        if (s[i] === "}") { i++; return { t: "o", m: m }; }
        for (;;) {
          ws();
          if (s[i] !== '"') throw new Error("key expected");
          var k = str(); ws();
          if (s[i] !== ":") throw new Error(": expected");
          i++;
          m.push({ k: k, v: val() }); ws();
          if (s[i] === ",") { i++; continue; }
          if (s[i] === "}") { i++; return { t: "o", m: m }; }
          throw new Error(", or } expected");
        }
      }
      if (c === "[") {
        i++; var a = [];
        ws();
        if (s[i] === "]") { i++; return { t: "a", a: a }; }
        for (;;) {
          a.push(val()); ws();
          if (s[i] === ",") { i++; continue; }
          if (s[i] === "]") { i++; return { t: "a", a: a }; }
          throw new Error(", or ] expected");
        }
      }
      if (c === '"') return { t: "s", r: str() };
      var j = i;
      while (i < s.length && ",]} \t\r\n".indexOf(s[i]) < 0) i++;
      if (j === i) throw new Error("value expected");
      return { t: "l", r: s.slice(j, i) };
    }
    var v = val(); ws();
    if (i !== s.length) throw new Error("text after the value");
    return v;
  }
  function unquote(raw) { try { return JSON.parse(raw); } catch (e) { return raw; } }
  function pointerTokens(p) {
    if (!p) return [];
    return p.split("/").slice(1).map(function (t) { return t.replace(/~1/g, "/").replace(/~0/g, "~"); });
  }
  // pretty renders v into parent, indented, wrapping the value at each
  // target pointer (token lists) in <mark>.
  function pretty(v, path, targets, indent, parent) {
    var here = targets.some(function (target) {
      return path.length === target.length && path.every(function (t, n) { return t === target[n]; });
    });
    var box = here ? el("mark", "hl") : parent;
    if (here) parent.appendChild(box);
    var pad = "\n" + "  ".repeat(indent + 1), end = "\n" + "  ".repeat(indent);
    if (v.t === "o") {
      if (!v.m.length) { box.appendChild(document.createTextNode("{}")); return; }
      box.appendChild(document.createTextNode("{"));
      v.m.forEach(function (m, n) {
        box.appendChild(document.createTextNode(pad));
        box.appendChild(el("span", "k", m.k));
        box.appendChild(document.createTextNode(": "));
        pretty(m.v, path.concat([unquote(m.k)]), targets, indent + 1, box);
        if (n < v.m.length - 1) box.appendChild(document.createTextNode(","));
      });
      box.appendChild(document.createTextNode(end + "}"));
    } else if (v.t === "a") {
      if (!v.a.length) { box.appendChild(document.createTextNode("[]")); return; }
      box.appendChild(document.createTextNode("["));
      v.a.forEach(function (x, n) {
        box.appendChild(document.createTextNode(pad));
        pretty(x, path.concat([String(n)]), targets, indent + 1, box);
        if (n < v.a.length - 1) box.appendChild(document.createTextNode(","));
      });
      box.appendChild(document.createTextNode(end + "]"));
    } else {
      box.appendChild(el("span", v.t === "s" ? "s" : "n", v.r));
    }
  }
  // frameView shows a frame's bytes pretty-printed, the values at ptrs
  // (JSON Pointers) highlighted. it is a timeline frame or a finding.
  function frameView(raw, ptrs, cut, gone) {
    var pre = el("pre", "frame");
    if (raw === undefined || raw === null || raw === "") {
      pre.textContent = gone ? "(the frame's bytes are over the page's budget: see the capture)" :
        "(the frame is not in this report: it was no longer at hand or over the page's frame budget)";
      return pre;
    }
    try {
      // A finding about the whole frame (no pointer) is said, not marked.
      if (ptrs.indexOf("") >= 0) pre.appendChild(el("div", "meta", "(the finding is about the whole frame)"));
      pretty(parseJSON(raw), [], ptrs.filter(function (p) { return p; }).map(pointerTokens), 0, pre);
      if (cut) pre.appendChild(el("div", "meta", "(frame cut at 64 KiB)"));
    } catch (e) {
      pre.textContent = raw;
      pre.appendChild(el("div", "meta", "(not JSON: " + e.message + "; shown as received)"));
    }
    return pre;
  }
  function parsed(it) {
    if (!it || !it.raw) return null;
    if (it.p === undefined) { try { it.p = JSON.parse(it.raw); } catch (e) { it.p = null; } }
    return it.p;
  }
  function clip(s, n) { s = String(s); return s.length > n ? s.slice(0, n - 1) + "…" : s; }
  function compact(v) { try { return typeof v === "string" ? v : JSON.stringify(v); } catch (e) { return ""; } }
  function obj(v) { return v && typeof v === "object" && !Array.isArray(v) ? v : null; }
  // eventSummary says what an event is about: the tool and its command,
  // the model, the turn, the session.
  function eventSummary(ev) {
    ev = obj(ev);
    if (!ev) return "";
    var out = [];
    var tool = obj(ev.tool);
    if (tool) {
      var input = obj(tool.input), what = "";
      if (input) what = input.command !== undefined ? compact(input.command) : input.file_path !== undefined ? compact(input.file_path) : input.path !== undefined ? compact(input.path) : compact(input);
      out.push(compact(tool.name || "tool") + (what ? " " + clip(what, 80) : ""));
    }
    var model = obj(ev.model) || obj(ev.current);
    if (model && (model.id || model.provider)) out.push("model " + compact(model.id || "") + (model.provider ? " (" + compact(model.provider) + ")" : ""));
    if (obj(ev.proposed) && ev.proposed.id) out.push("→ " + compact(ev.proposed.id));
    var turn = obj(ev.turn);
    if (turn && turn.id !== undefined) out.push("turn " + compact(turn.id) + (ev.trigger ? " " + compact(ev.trigger) : "") + (typeof ev.outcome === "string" ? " " + ev.outcome : ""));
    if (!out.length && obj(ev.session) && ev.session.id !== undefined) out.push("session " + compact(ev.session.id));
    return out.join(" · ");
  }
  // answerSummary says what the backend answered: the deny reason, the
  // effects, the effective value of each edit, or the error.
  function answerSummary(x, rs) {
    var out = [], m = obj(parsed(rs));
    if (x.out) out.push(x.out);
    if (m && obj(m.error)) out.push("error " + compact(m.error.code) + (m.error.message !== undefined ? " " + clip(compact(m.error.message), 60) : ""));
    var res = m ? obj(m.result) : null;
    if (res && Array.isArray(res.effects)) {
      var types = [];
      res.effects.forEach(function (e) {
        e = obj(e);
        if (!e) return;
        types.push(compact(e.type));
        if (e.type === "deny" && e.reason !== undefined) out.push("reason: " + clip(compact(e.reason), 80));
      });
      if (types.length) out.push("effects: " + types.join(", "));
    }
    var ed = obj(x.edit);
    if (ed) {
      var eff = obj(ed.effective);
      if (eff) Object.keys(eff).forEach(function (t) { out.push(t + " = " + clip(compact(eff[t]), 60)); });
      if (ed.accepted === false) out.push("edits rejected");
    }
    return out.join(" · ");
  }
  function timeOf(t) { return t ? t.replace(/^\d{4}-\d\d-\d\dT/, "").replace(/Z$/, "") : ""; }
  function badges(box, fs) {
    var seen = {};
    fs.forEach(function (f) {
      var k = f.check + "\u0000" + f.level;
      if (seen[k]) { seen[k].n++; seen[k].a.textContent = f.check + " ×" + seen[k].n; return; }
      var a = el("span", "badge " + f.level, f.check);
      a.title = f.msg;
      box.appendChild(a);
      seen[k] = { a: a, n: 1 };
    });
  }
  function side(title, it, ptrs) {
    var d = el("div", "side");
    d.appendChild(el("div", "meta", title));
    d.appendChild(it ? frameView(it.raw, ptrs, it.cut, it.gone) : el("pre", "frame", "(none)"));
    return d;
  }
  function sideTitle(it, what) {
    if (!it) return what;
    return what + " · " + (it.dir === "backend" ? "backend → harness" : "harness → backend") + " #" + it.seq +
      (it.t ? " · " + it.t : "") + (it.line ? " · line " + it.line : "") + (it.st ? " · HTTP " + it.st : "");
  }
  function listFindings(box, fs) {
    if (!fs.length) return;
    var ul = el("ul", "fl");
    fs.forEach(function (f) {
      var li = el("li");
      li.appendChild(el("span", "badge " + f.level, f.level));
      li.appendChild(el("span", "check", f.check + " "));
      li.appendChild(el("span", "mono", (f.ptr || "") + " "));
      li.appendChild(el("span", "msg", f.msg));
      ul.appendChild(li);
    });
    box.appendChild(ul);
  }
  // ptrsOf lists the pointers of the findings about one frame; a finding
  // about the whole frame (no pointer) marks nothing here (its row does).
  function ptrsOf(fs, seq) { return fs.filter(function (f) { return f.seq === seq && f.ptr; }).map(function (f) { return f.ptr; }); }
  // The row of one timeline entry: a summary line that opens to the frames.
  function timelineRow(r) {
    var d = el("details", "row kind-" + r.t + (r.out ? " out-" + r.out.replace(/[^a-z_-]/gi, "") : ""));
    d.dataset.row = r.n;
    var s = el("summary"), it = r.it, x = r.x;
    var first = x ? r.rq || r.rs : it;
    s.appendChild(el("span", "when mono", first ? timeOf(first.t) : ""));
    s.appendChild(el("span", "conn mono", r.conn));
    var line = el("span", "what");
    if (x) {
      var req = obj(parsed(r.rq)), params = req ? obj(req.params) : null;
      line.appendChild(el("b", "", x.ev || x.m || "exchange"));
      var es = eventSummary(params ? params.event : null);
      if (es) line.appendChild(el("span", "", " " + clip(es, SUMMARY)));
      var as = answerSummary(x, r.rs);
      if (as) line.appendChild(el("span", "ans", " → " + clip(as, SUMMARY)));
      if (!x.rs && x.dl && !x.out) {
        var cd = el("span", "countdown");
        cd.dataset.dl = x.dl;
        line.appendChild(cd);
      } else if (!x.rs) line.appendChild(el("span", "pending", " (no response)"));
      if (x.ms !== undefined) line.appendChild(el("span", "meta", " " + x.ms.toFixed(1) + " ms"));
    } else if (r.t === "note") {
      line.appendChild(el("b", "", "note"));
      line.appendChild(el("span", "", " " + (it.text || it.note)));
    } else if (r.t === "notification") {
      var n = obj(parsed(it)), np = n ? obj(n.params) : null;
      line.appendChild(el("b", "", (it.ev || it.m || "notification")));
      line.appendChild(el("span", "meta", " observe"));
      var ns = eventSummary(np ? np.event : null);
      if (ns) line.appendChild(el("span", "", " " + clip(ns, SUMMARY)));
    } else {
      line.appendChild(el("b", "", r.t === "other" ? (it.dir === "backend" ? "stray line from the backend" : "not a JSON-RPC message from the " + (it.dir || "peer")) : it.k + " without its exchange"));
      if (it.raw) line.appendChild(el("span", "mono", " " + clip(it.raw, SUMMARY)));
    }
    s.appendChild(line);
    var b = el("span", "fb");
    badges(b, r.fs);
    s.appendChild(b);
    d.appendChild(s);
    var shown = false;
    d.addEventListener("toggle", function () {
      if (!d.open || shown) return;
      shown = true;
      if (r.t === "note") {
        var dl = el("dl");
        [["note", it.note], ["time", it.t], ["connection", it.conn], ["stream", it.dir], ["HTTP status", it.st]].forEach(function (p) {
          if (!p[1]) return;
          dl.appendChild(el("dt", "", p[0]));
          dl.appendChild(el("dd", "mono", String(p[1])));
        });
        d.appendChild(dl);
        return;
      }
      var pair = el("div", "pair");
      if (x) {
        pair.appendChild(side(sideTitle(r.rq, "request"), r.rq || (x.rq ? { seq: x.rq } : null), ptrsOf(r.fs, x.rq)));
        pair.appendChild(side(sideTitle(r.rs, "response") + (x.ms !== undefined ? " · " + x.ms.toFixed(1) + " ms" : ""), r.rs || (x.rs ? { seq: x.rs } : null), ptrsOf(r.fs, x.rs)));
      } else pair.appendChild(side(sideTitle(it, it.k), it, ptrsOf(r.fs, it.seq)));
      d.appendChild(pair);
      if (x && x.edit) {
        d.appendChild(el("div", "meta", "what the edit evaluator concluded"));
        var ev = frameView(JSON.stringify(x.edit), [], false, false);
        ev.className = "frame edit";
        d.appendChild(ev);
      }
      listFindings(d, r.fs);
    });
    return d;
  }
  // judged lists the frames a finding was judged against: its own, the
  // other side of its exchange, and a retry's first delivery.
  function judged(f) {
    var out = [], own = f.seq ? frameByKey[key(f, f.seq)] : null;
    out.push({ title: sideTitle(own || (f.seq ? { seq: f.seq, dir: f.dir } : null), "the frame"), it: own || { raw: f.frame, cut: f.cut }, ptrs: [f.ptr || ""] });
    var x = f.seq ? xByFrame[key(f, f.seq)] : null;
    var rel = has(related, f.check) ? related[f.check] : "";
    if (x) {
      if (x.rs === f.seq && x.rq) out.push({ title: sideTitle(frameByKey[key(x, x.rq)] || { seq: x.rq, dir: "harness" }, "its request"), it: frameByKey[key(x, x.rq)], ptrs: rel ? [rel] : [] });
      else if (x.rq === f.seq && x.rs) out.push({ title: sideTitle(frameByKey[key(x, x.rs)] || { seq: x.rs, dir: "backend" }, "its response"), it: frameByKey[key(x, x.rs)], ptrs: [] });
      var fd = x.eid ? firstDelivery[x.in + "\u0000" + x.eid] : null;
      if (fd && fd !== x && fd.rq) {
        var fi = frameByKey[key(fd, fd.rq)];
        out.push({ title: sideTitle(fi || { seq: fd.rq, dir: "harness" }, "first delivery of event " + x.eid + " (" + (fd.conn || "") + ")"), it: fi, ptrs: rel ? [rel] : ["/params/event"] });
      }
    }
    return out;
  }
  function occurrence(f, box) {
    var info = el("dl");
    [["where", f.in + (f.line ? ":" + f.line : "") + (f.seq ? " #" + f.seq + " " + (f.dir || "") : "")], ["message", f.msg], ["pointer", f.ptr], ["rule", f.rule], ["requirement", f.req], ["event type", f.ev], ["JSON-RPC id", f.id], ["connection", f.conn], ["fingerprint", f.fp]].forEach(function (p) {
      if (!p[1]) return;
      info.appendChild(el("dt", "", p[0]));
      info.appendChild(el("dd", "mono", p[1]));
    });
    box.appendChild(info);
    var pair = el("div", "pair");
    judged(f).forEach(function (j) {
      var sd = el("div", "side");
      sd.appendChild(el("div", "meta", j.title));
      sd.appendChild(j.it ? frameView(j.it.raw, j.ptrs, j.it.cut, j.it.gone) : el("pre", "frame", "(not in this page)"));
      pair.appendChild(sd);
    });
    box.appendChild(pair);
    var row = f.seq ? rowOfFrame[key(f, f.seq)] : undefined;
    if (row !== undefined) {
      var a = el("a", "open", "open in the conversation");
      a.href = "#tab=timeline&open=" + row;
      box.appendChild(a);
    }
  }
  // A group of identical findings (one fingerprint): one row, its count,
  // the first occurrence's frames, the other occurrences below.
  function groupRow(g, narrowed) {
    var f = g.fs[0];
    var d = el("details", "finding lvl-" + f.level + (f.base ? " baselined" : ""));
    d.dataset.check = f.check;
    d.dataset.level = f.level;
    d.dataset.fp = f.fp;
    var total = has(groupCounts, f.fp) ? groupCounts[f.fp] : g.fs.length;
    var count = narrowed ? g.fs.length : total;
    d.dataset.count = count;
    if (f.ev) d.dataset.event = f.ev;
    var s = el("summary");
    s.appendChild(el("span", "badge " + f.level, f.level));
    s.appendChild(el("span", "check", f.check));
    if (count > 1) s.appendChild(el("span", "count", "×" + count));
    s.appendChild(el("span", "loc", f.in + (f.line ? ":" + f.line : "") + (f.seq ? " #" + f.seq + " " + (f.dir || "") : "")));
    s.appendChild(el("span", "msg", f.msg + (f.base ? " (baselined)" : "")));
    d.appendChild(s);
    var shown = false;
    d.addEventListener("toggle", function () {
      if (!d.open || shown) return;
      shown = true;
      occurrence(f, d);
      if (g.fs.length > 1 || total > g.fs.length) {
        var more = el("div", "more");
        more.appendChild(el("div", "meta", (total > 1 ? total + " findings of this kind" : "") + (total > g.fs.length ? ", " + g.fs.length + " of them in this page" : "") + (g.fs.length > OCCURRENCES + 1 ? "; the first " + (OCCURRENCES + 1) + " listed" : "")));
        g.fs.slice(1, OCCURRENCES + 1).forEach(function (o) {
          var od = el("details", "occurrence");
          od.appendChild(el("summary", "loc", o.in + (o.line ? ":" + o.line : "") + (o.seq ? " #" + o.seq + " " + (o.dir || "") : "") + " " + o.msg));
          var done = false;
          od.addEventListener("toggle", function () { if (od.open && !done) { done = true; occurrence(o, od); } });
          more.appendChild(od);
        });
        d.appendChild(more);
      }
    });
    return d;
  }
  function groupsOf(list) {
    var byFp = {}, out = [];
    list.forEach(function (f) {
      var g = byFp[f.fp];
      if (!g) { g = byFp[f.fp] = { fs: [] }; out.push(g); }
      g.fs.push(f);
    });
    return out;
  }
  function render() {
    if (TABS.indexOf(state.tab) < 0) state.tab = "findings";
    $("tab-findings").className = state.tab === "findings" ? "on" : "";
    $("tab-timeline").className = state.tab === "timeline" ? "on" : "";
    $("findings").hidden = state.tab !== "findings";
    $("timeline").hidden = state.tab !== "timeline";
    var box = $(state.tab), list, total, what, open = null;
    box.textContent = "";
    if (state.tab === "findings") {
      var kept = findings.filter(keepFinding);
      list = groupsOf(kept);
      total = kept.length;
      what = list.length + (list.length === 1 ? " kind" : " kinds") + " of " + total + " of " + findings.length + " findings in this page";
    } else {
      list = rows.filter(keepRow);
      what = list.length + " of " + rows.length + " exchanges, notifications, lines and notes";
      if (state.open !== "") {
        var want = parseInt(state.open, 10);
        for (var i = 0; i < list.length; i++) {
          if (list[i].n === want) { state.page = Math.floor(i / PAGE) + 1; open = want; break; }
        }
      }
    }
    var pages = Math.max(1, Math.ceil(list.length / PAGE));
    if (state.page > pages) state.page = pages;
    var slice = list.slice((state.page - 1) * PAGE, state.page * PAGE);
    if (state.tab === "findings") {
      var narrowed = !!(state.link || state.outcome || state.text);
      slice.forEach(function (g) { box.appendChild(groupRow(g, narrowed)); });
      if (!slice.length) box.appendChild(el("p", "meta", "No finding matches."));
    } else {
      slice.forEach(function (r) {
        var d = timelineRow(r);
        box.appendChild(d);
        if (r.n === open) {
          d.open = true;
          d.classList.add("target");
          if (d.scrollIntoView) d.scrollIntoView();
        }
      });
      if (!slice.length) box.appendChild(el("p", "meta", "Nothing in the conversation matches."));
    }
    $("f-count").textContent = what;
    var nav = $("pager");
    nav.textContent = "";
    var prev = el("button", "", "‹ previous"), next = el("button", "", "next ›");
    prev.type = next.type = "button";
    prev.disabled = state.page <= 1;
    next.disabled = state.page >= pages;
    prev.onclick = function () { state.page--; state.open = ""; writeHash(); };
    next.onclick = function () { state.page++; state.open = ""; writeHash(); };
    nav.appendChild(prev);
    nav.appendChild(el("span", "meta", " page " + state.page + " of " + pages + " "));
    nav.appendChild(next);
  }
  ["check", "level", "event", "link", "outcome"].forEach(function (k) {
    $("f-" + k).addEventListener("change", function (e) { state[k] = e.target.value; state.page = 1; state.open = ""; writeHash(); });
  });
  $("f-text").addEventListener("input", function (e) { state.text = e.target.value; state.page = 1; state.open = ""; writeHash(); });
  $("tab-findings").onclick = function () { state.tab = "findings"; state.page = 1; state.open = ""; writeHash(); };
  $("tab-timeline").onclick = function () { state.tab = "timeline"; state.page = 1; state.open = ""; writeHash(); };
  window.addEventListener("hashchange", function () { readHash(); render(); });
  rebuild();
  readHash();
  render();

  // The live view: the page came from a tap's --ui server and reads its
  // server-sent events. It keeps the newest LIVE_MAX of each kind (older
  // ones are in the capture), redraws at most twice a second, and not
  // while a row is open (the status line says so). Pending exchanges
  // count down to their deadline.
  function tick() {
    var now = Date.now();
    document.querySelectorAll("span.countdown").forEach(function (c) {
      var left = (parseInt(c.dataset.dl, 10) - now) / 1000;
      c.textContent = left >= 0 ? " pending · " + left.toFixed(1) + " s to the deadline" : " pending · the deadline passed " + (-left).toFixed(1) + " s ago";
      c.className = "countdown" + (left < 0 ? " late" : "");
    });
  }
  if (document.body.dataset.live === "1") {
    var LIVE_MAX = 5000, dirty = false, skipped = 0, evicted = 0, dropped = 0, connected = false, xIndex = {};
    var xKey = function (x) { return x.rq ? key(x, x.rq) : key(x, "r" + x.rs); };
    var push = function (arr, v) {
      arr.push(v);
      if (arr.length > LIVE_MAX) {
        var old = arr.shift();
        dropped++;
        if (arr === exchanges) delete xIndex[xKey(old)];
      }
    };
    var status = function (paused) {
      var t = (connected ? "live" : "disconnected: the tap stopped, or the connection broke (retrying)") +
        " · " + items.length + " frames and notes, " + findings.length + " findings, " + exchanges.length + " exchanges";
      if (dropped || evicted) t += " · older ones are in the capture";
      if (skipped) t += " · this viewer fell behind and skipped " + skipped + " messages";
      if (paused) t += " · paused while a row is open: close it to see the newest";
      $("live-status").textContent = t;
    };
    var es = new EventSource("events");
    es.onopen = function () { connected = true; status(false); };
    es.onerror = function () { connected = false; status(false); };
    es.onmessage = function (e) {
      var m;
      try { m = JSON.parse(e.data); } catch (err) { return; }
      var v = m.v;
      if (m.t === "frame" || m.t === "note") push(items, v);
      else if (m.t === "finding") push(findings, v);
      else if (m.t === "exchange") {
        var k = xKey(v), old = xIndex[k];
        if (old) { Object.keys(old).forEach(function (f) { delete old[f]; }); Object.keys(v).forEach(function (f) { old[f] = v[f]; }); }
        else { xIndex[k] = v; push(exchanges, v); }
      } else if (m.t === "skipped") skipped = v;
      else if (m.t === "evicted") evicted = v;
      else return;
      dirty = true;
    };
    setInterval(function () {
      tick();
      if (!dirty) return;
      if (document.querySelector("#views details[open]")) { status(true); return; }
      dirty = false;
      rebuild();
      FILTERS.forEach(function (k) { $("f-" + k).value = state[k]; });
      render();
      tick();
      status(false);
    }, 500);
  }
})();

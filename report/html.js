// ahp-tap HTML report: renders the embedded findings and exchanges a page
// at a time. Filters live in location.hash (#check=BASE-2&level=error…),
// so a filtered view is a link. No network, no external code.
"use strict";
(function () {
  var PAGE = 100;
  var findings = JSON.parse(document.getElementById("data-findings").textContent);
  var exchanges = JSON.parse(document.getElementById("data-exchanges").textContent);
  var $ = function (id) { return document.getElementById(id); };
  var el = function (tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  // Findings by frame, so the timeline can show them at their exchange.
  var byFrame = {};
  findings.forEach(function (f) {
    if (!f.seq) return;
    var k = f.in + "\u0000" + (f.conn || "") + "\u0000" + f.seq;
    (byFrame[k] = byFrame[k] || []).push(f);
  });
  // The views a link may open (#tab=…). The value names an element, so
  // only these are taken: "#tab=claim" or "#tab=verdict" must not empty
  // the claim table or the verdict badge, nor hide the failing rows.
  var TABS = ["findings", "timeline"];
  var state = { check: "", level: "", event: "", text: "", tab: "findings", page: 1 };

  function readHash() {
    var h = location.hash.replace(/^#/, "");
    state = { check: "", level: "", event: "", text: "", tab: "findings", page: 1 };
    h.split("&").forEach(function (kv) {
      var i = kv.indexOf("=");
      if (i < 0) return;
      var k = decodeURIComponent(kv.slice(0, i)), v = decodeURIComponent(kv.slice(i + 1));
      if (k === "page") state.page = Math.max(1, parseInt(v, 10) || 1);
      else if (k === "tab") state.tab = TABS.indexOf(v) >= 0 ? v : "findings";
      else if (Object.prototype.hasOwnProperty.call(state, k)) state[k] = v;
    });
    $("f-check").value = state.check;
    $("f-level").value = state.level;
    $("f-event").value = state.event;
    $("f-text").value = state.text;
  }
  function writeHash() {
    var parts = [];
    ["check", "level", "event", "text", "tab", "page"].forEach(function (k) {
      var v = state[k];
      if (v && !(k === "tab" && v === "findings") && !(k === "page" && v === 1)) parts.push(k + "=" + encodeURIComponent(v));
    });
    var h = parts.length ? "#" + parts.join("&") : "#";
    if (location.hash !== h) history.replaceState(null, "", h);
    render();
  }
  function matchText(o) {
    if (!state.text) return true;
    var t = state.text.toLowerCase();
    for (var k in o) {
      if (k !== "frame" && String(o[k]).toLowerCase().indexOf(t) >= 0) return true;
    }
    return false;
  }
  function keepFinding(f) {
    return (!state.check || f.check === state.check) && (!state.level || f.level === state.level) &&
      (!state.event || f.ev === state.event) && matchText(f);
  }
  function keepExchange(x) {
    if (state.event && x.ev !== state.event) return false;
    if (state.check || state.level) {
      var fs = (byFrame[x.in + "\u0000" + (x.conn || "") + "\u0000" + x.rq] || []).concat(
        byFrame[x.in + "\u0000" + (x.conn || "") + "\u0000" + x.rs] || []);
      if (!fs.some(function (f) { return (!state.check || f.check === state.check) && (!state.level || f.level === state.level); })) return false;
    }
    return matchText(x);
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
  // pretty renders v into parent, indented, wrapping the value at the
  // pointer (if any) in <mark>.
  function pretty(v, path, target, indent, parent) {
    var here = path.length === target.length && path.every(function (t, n) { return t === target[n]; });
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
        pretty(m.v, path.concat([unquote(m.k)]), target, indent + 1, box);
        if (n < v.m.length - 1) box.appendChild(document.createTextNode(","));
      });
      box.appendChild(document.createTextNode(end + "}"));
    } else if (v.t === "a") {
      if (!v.a.length) { box.appendChild(document.createTextNode("[]")); return; }
      box.appendChild(document.createTextNode("["));
      v.a.forEach(function (x, n) {
        box.appendChild(document.createTextNode(pad));
        pretty(x, path.concat([String(n)]), target, indent + 1, box);
        if (n < v.a.length - 1) box.appendChild(document.createTextNode(","));
      });
      box.appendChild(document.createTextNode(end + "]"));
    } else {
      box.appendChild(el("span", v.t === "s" ? "s" : "n", v.r));
    }
  }
  function frameView(f) {
    var pre = el("pre", "frame");
    if (!f.frame) {
      pre.textContent = "(the frame is not in this report: it was no longer at hand or over the page's frame budget)";
      return pre;
    }
    try {
      pretty(parseJSON(f.frame), [], pointerTokens(f.ptr), 0, pre);
      if (f.cut) pre.appendChild(el("div", "meta", "(frame cut at 64 KiB)"));
    } catch (e) {
      pre.textContent = f.frame;
      pre.appendChild(el("div", "meta", "(not JSON: " + e.message + "; shown as received)"));
    }
    return pre;
  }
  function findingRow(f) {
    var d = el("details", "finding lvl-" + f.level + (f.base ? " baselined" : ""));
    d.dataset.check = f.check;
    d.dataset.level = f.level;
    d.dataset.fp = f.fp;
    if (f.ev) d.dataset.event = f.ev;
    var s = el("summary");
    s.appendChild(el("span", "badge " + f.level, f.level));
    s.appendChild(el("span", "check", f.check));
    s.appendChild(el("span", "loc", f.in + (f.line ? ":" + f.line : "") + (f.seq ? " #" + f.seq + " " + (f.dir || "") : "")));
    s.appendChild(el("span", "msg", f.msg + (f.base ? " (baselined)" : "")));
    d.appendChild(s);
    var info = el("dl");
    [["pointer", f.ptr], ["rule", f.rule], ["requirement", f.req], ["event type", f.ev], ["JSON-RPC id", f.id], ["connection", f.conn], ["fingerprint", f.fp]].forEach(function (p) {
      if (!p[1]) return;
      info.appendChild(el("dt", "", p[0]));
      info.appendChild(el("dd", "mono", p[1]));
    });
    d.appendChild(info);
    var shown = false;
    d.addEventListener("toggle", function () {
      if (d.open && !shown) { shown = true; d.appendChild(frameView(f)); }
    });
    return d;
  }
  function exchangeRow(x) {
    var tr = el("tr", "exchange" + (x.out ? " out-" + x.out.replace(/[^a-z-]/gi, "") : ""));
    var fs = (byFrame[x.in + "\u0000" + (x.conn || "") + "\u0000" + x.rq] || []).concat(
      x.rs ? byFrame[x.in + "\u0000" + (x.conn || "") + "\u0000" + x.rs] || [] : []);
    [x.in, x.conn || "", x.id || "", x.m || "", x.ev || "",
      x.rq ? "harness → backend #" + x.rq : "", x.rs ? "backend → harness #" + x.rs : "(no response)",
      x.ms !== undefined ? x.ms.toFixed(1) + " ms" : "", x.out || ""].forEach(function (t) { tr.appendChild(el("td", "", t)); });
    var td = el("td");
    fs.forEach(function (f) {
      var a = el("a", "badge " + f.level, f.check);
      a.href = "#check=" + encodeURIComponent(f.check) + "&text=" + encodeURIComponent(f.fp);
      a.title = f.msg;
      td.appendChild(a);
    });
    tr.appendChild(td);
    return tr;
  }
  function render() {
    if (TABS.indexOf(state.tab) < 0) state.tab = "findings";
    $("tab-findings").className = state.tab === "findings" ? "on" : "";
    $("tab-timeline").className = state.tab === "timeline" ? "on" : "";
    $("findings").hidden = state.tab !== "findings";
    $("timeline").hidden = state.tab !== "timeline";
    var list = state.tab === "findings" ? findings.filter(keepFinding) : exchanges.filter(keepExchange);
    var pages = Math.max(1, Math.ceil(list.length / PAGE));
    if (state.page > pages) state.page = pages;
    var slice = list.slice((state.page - 1) * PAGE, state.page * PAGE);
    var box = $(state.tab);
    box.textContent = "";
    if (state.tab === "findings") {
      slice.forEach(function (f) { box.appendChild(findingRow(f)); });
      if (!slice.length) box.appendChild(el("p", "meta", "No finding matches."));
    } else {
      var t = el("table", "timeline"), head = el("tr");
      ["input", "conn", "id", "method", "event type", "request", "response", "latency", "outcome", "findings"].forEach(function (h) { head.appendChild(el("th", "", h)); });
      t.appendChild(el("thead")).appendChild(head);
      var tb = t.appendChild(el("tbody"));
      slice.forEach(function (x) { tb.appendChild(exchangeRow(x)); });
      box.appendChild(t);
    }
    $("f-count").textContent = list.length + " of " + (state.tab === "findings" ? findings.length + " findings" : exchanges.length + " exchanges");
    var nav = $("pager");
    nav.textContent = "";
    var prev = el("button", "", "‹ previous"), next = el("button", "", "next ›");
    prev.type = next.type = "button";
    prev.disabled = state.page <= 1;
    next.disabled = state.page >= pages;
    prev.onclick = function () { state.page--; writeHash(); };
    next.onclick = function () { state.page++; writeHash(); };
    nav.appendChild(prev);
    nav.appendChild(el("span", "meta", " page " + state.page + " of " + pages + " "));
    nav.appendChild(next);
  }
  ["check", "level", "event"].forEach(function (k) {
    $("f-" + k).addEventListener("change", function (e) { state[k] = e.target.value; state.page = 1; writeHash(); });
  });
  $("f-text").addEventListener("input", function (e) { state.text = e.target.value; state.page = 1; writeHash(); });
  $("tab-findings").onclick = function () { state.tab = "findings"; state.page = 1; writeHash(); };
  $("tab-timeline").onclick = function () { state.tab = "timeline"; state.page = 1; writeHash(); };
  window.addEventListener("hashchange", function () { readHash(); render(); });
  readHash();
  render();
})();

/* kamera HTML report: draws the explored state graph, the object viewer and state diffs.
 * Inlined into every report by kamera_cli/report/html_report.py, next to Cytoscape.js.
 * Every text from the result goes into the page through textContent, never as markup. */
(function () {
  "use strict";
  var api = (window.kameraReport = { ready: false, errors: [], cy: null });
  window.addEventListener("error", function (ev) { api.errors.push(String(ev.message)); });

  var data = JSON.parse(document.getElementById("kamera-data").textContent);
  var scenarios = data.scenarios;
  var $ = function (id) { return document.getElementById(id); };

  function h(tag, props, children) {
    var el = document.createElement(tag);
    Object.keys(props || {}).forEach(function (k) {
      if (k === "text") el.textContent = props[k];
      else if (k === "cls") el.className = props[k];
      else if (k === "on") Object.keys(props.on).forEach(function (ev) { el.addEventListener(ev, props.on[ev]); });
      else el.setAttribute(k, props[k]);
    });
    (children || []).forEach(function (c) {
      if (c !== null && c !== undefined) el.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return el;
  }
  /* Fit the view to some elements, but never closer than a readable zoom (a 3-node graph is not a poster). */
  function fitTo(eles, pad) {
    var cy = api.cy;
    cy.fit(eles, pad);
    if (cy.zoom() > 1.4) { cy.zoom(1.4); cy.center(eles); }
  }
  function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); return el; }
  function num(n) { return Number(n).toLocaleString("en-US"); }

  // ---------------------------------------------------------------- objects, YAML and diffs
  function refOf(o) {
    var m = (o && o.metadata) || {};
    return (o.apiVersion || "") + "/" + (o.kind || "") + " " + (m.namespace ? m.namespace + "/" : "") + (m.name || "");
  }
  var PLAIN = /^[A-Za-z0-9_][A-Za-z0-9_.\/@+-]*( [A-Za-z0-9_.\/@+-]+)*$/;
  var RESERVED = /^(true|false|yes|no|on|off|null|~|y|n|[-+]?[0-9.]+([eE][-+]?[0-9]+)?|0x[0-9a-fA-F]+|\.inf|\.nan)$/i;
  function scalar(v) {
    if (v === null || v === undefined) return "null";
    if (typeof v === "string") return PLAIN.test(v) && !RESERVED.test(v) ? v : JSON.stringify(v);
    return String(v);
  }
  function isObj(v) { return v !== null && typeof v === "object" && !Array.isArray(v); }
  function yamlLines(v, pad, out) {
    if (Array.isArray(v)) {
      v.forEach(function (item) {
        if ((isObj(item) && Object.keys(item).length) || (Array.isArray(item) && item.length)) {
          var sub = [];
          yamlLines(item, "", sub);
          out.push(pad + "- " + sub[0]);
          sub.slice(1).forEach(function (l) { out.push(pad + "  " + l); });
        } else out.push(pad + "- " + (isObj(item) ? "{}" : Array.isArray(item) ? "[]" : scalar(item)));
      });
    } else if (isObj(v)) {
      Object.keys(v).forEach(function (k) {
        var val = v[k], key = scalar(k);
        if (isObj(val) && Object.keys(val).length) { out.push(pad + key + ":"); yamlLines(val, pad + "  ", out); }
        else if (Array.isArray(val) && val.length) { out.push(pad + key + ":"); yamlLines(val, pad, out); }
        else if (typeof val === "string" && val.indexOf("\n") >= 0) {
          out.push(pad + key + ": |-");
          val.split("\n").forEach(function (l) { out.push(pad + "  " + l); });
        } else out.push(pad + key + ": " + (isObj(val) ? "{}" : Array.isArray(val) ? "[]" : scalar(val)));
      });
    } else out.push(pad + scalar(v));
    return out;
  }
  function toYaml(v) { return yamlLines(v, "", []).join("\n"); }

  function ptr(path, key) { return path + "/" + String(key).replace(/~/g, "~0").replace(/\//g, "~1"); }
  function diffValues(a, b, path, out) {
    if (isObj(a) && isObj(b)) {
      var keys = Object.keys(a).concat(Object.keys(b).filter(function (k) { return !(k in a); })).sort();
      keys.forEach(function (k) {
        if (!(k in b)) out.push({ op: "remove", path: ptr(path, k), old: a[k] });
        else if (!(k in a)) out.push({ op: "add", path: ptr(path, k), new: b[k] });
        else diffValues(a[k], b[k], ptr(path, k), out);
      });
    } else if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
      a.forEach(function (x, i) { diffValues(x, b[i], ptr(path, i), out); });
    } else if (JSON.stringify(a) !== JSON.stringify(b)) {
      out.push({ op: "replace", path: path || "/", old: a, new: b });
    }
    return out;
  }
  /* A created object as one "add" per leaf, like the story's diff of a create. */
  function leaves(v, path, out) {
    if (isObj(v) && Object.keys(v).length) Object.keys(v).sort().forEach(function (k) { leaves(v[k], ptr(path, k), out); });
    else out.push({ op: "add", path: path || "/", new: v });
    return out;
  }
  function short(v) {
    var t = JSON.stringify(v);
    return t === undefined ? "" : t.length > 120 ? t.slice(0, 119) + "…" : t;
  }
  function diffTable(entries) {
    var OP = { add: "+", remove: "-", replace: "~" };
    return h("table", { cls: "diff" }, entries.map(function (d) {
      return h("tr", { cls: "op-" + d.op }, [
        h("td", { cls: "op", text: OP[d.op] }), h("td", { cls: "path", text: d.path }),
        h("td", { cls: "old", text: d.op === "add" ? "" : short(d.old) }),
        h("td", { cls: "new", text: d.op === "remove" ? "" : short(d.new) })]);
    }));
  }

  // ---------------------------------------------------------------- the current scenario's graph
  var cur = null; // {si, g, byId, objects, out, inc, mode, shown: Map stateId -> display id}

  function load(si) {
    var g = scenarios[si].graph;
    var byId = new Map(), out = new Map(), inc = new Map();
    g.states.forEach(function (s) { byId.set(s.id, s); out.set(s.id, []); inc.set(s.id, []); });
    g.edges.forEach(function (e, i) { e.i = i; out.get(e.src).push(e); inc.get(e.dst).push(e); });
    cur = { si: si, g: g, byId: byId, objects: g.objects, out: out, inc: inc, shown: new Map(),
      abbrev: scenarios[si].abbrev || {} };
    // the edge labels' legend: each short label and the actor it stands for
    var legend = Object.keys(cur.abbrev).sort().map(function (a) { return cur.abbrev[a] + " = " + a; });
    $("edge-legend").textContent = legend.length ? "Transitions are labelled by who stepped: " + legend.join(", ") +
      " (hover a transition for its full label)." : "";
  }
  function objectsOf(id) {
    var s = cur.byId.get(id);
    return s ? s.objects.map(function (k) { return cur.objects[k]; }) : [];
  }
  function diffStates(a, b) {
    var A = new Map(), B = new Map(), refs = [];
    objectsOf(a).forEach(function (o) { A.set(refOf(o), o); refs.push(refOf(o)); });
    objectsOf(b).forEach(function (o) { B.set(refOf(o), o); if (!A.has(refOf(o))) refs.push(refOf(o)); });
    refs.sort();
    var res = [];
    refs.forEach(function (r) {
      if (!B.has(r)) res.push({ ref: r, how: "deleted", entries: [] });
      else if (!A.has(r)) res.push({ ref: r, how: "created", entries: leaves(B.get(r), "", []) });
      else {
        var d = diffValues(A.get(r), B.get(r), "", []);
        if (d.length) res.push({ ref: r, how: "changed", entries: d });
      }
    });
    return res;
  }
  /* What the outcome comparison ignores too (runner.outcome_key): server bookkeeping and timestamps. */
  var NOISE = /^\/metadata\/(resourceVersion|uid|creationTimestamp|managedFields|generation)(\/|$)|^\/status\/observedGeneration$/;
  var TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
  function noise(d) {
    if (NOISE.test(d.path)) return true;
    var vals = [d.old, d.new].filter(function (v) { return v !== undefined && v !== null; });
    return vals.length > 0 && vals.every(function (v) { return typeof v === "string" && TIME.test(v); });
  }
  function renderDiff(box, a, b) {
    clear(box);
    if (a === null || b === null || isNaN(a) || isNaN(b)) return;
    var hide = !$("show-noise").checked, hidden = 0;
    var d = diffStates(a, b).filter(function (x) {
      if (!hide) return true;
      var kept = x.entries.filter(function (e) { return !noise(e); });
      hidden += x.entries.length - kept.length;
      x.entries = kept;
      return kept.length || x.how !== "changed";
    });
    box.appendChild(h("p", { cls: "dim", text: "state " + a + " → state " + b + ": " +
      (d.length ? d.length + " object(s) differ" : "the clusters are identical") +
      (hidden ? " (" + hidden + " bookkeeping change(s) hidden: resourceVersion, uid, managedFields, generation, timestamps)" : "") }));
    d.forEach(function (x) {
      box.appendChild(h("div", { cls: "diff-obj " + x.how }, [
        h("div", { cls: "ref", text: x.how + " " + x.ref }), x.entries.length ? diffTable(x.entries) : null]));
    });
  }

  var TAGS_BAD = ["violation", "error", "deadlock", "depth-cut"];
  function classesOf(tags) {
    var c = [];
    if (tags.indexOf("initial") >= 0) c.push("initial");
    if (tags.indexOf("outcome") >= 0 || tags.indexOf("converged") >= 0) c.push("good");
    if (tags.indexOf("livelock") >= 0) c.push("livelock");
    if (TAGS_BAD.some(function (t) { return tags.indexOf(t) >= 0; })) c.push("bad");
    if (tags.indexOf("unexpanded") >= 0) c.push("unexpanded");
    return c;
  }
  function stateLabel(s) { return s.outcome >= 0 ? "outcome " + (s.outcome + 1) : String(s.id); }

  /* Nodes to draw under the collapse mode: [{id, depth, label, classes, members}], edges deduplicated. */
  function displayModel(mode, maxDepth) {
    var nodes = [], edges = new Map(), shown = new Map(), hiddenNote = "";
    var states = cur.g.states;
    if (mode === "objects") {
      var groups = new Map();
      states.forEach(function (s) {
        var key = s.objects.join(",");
        if (!groups.has(key)) groups.set(key, []);
        groups.get(key).push(s);
      });
      groups.forEach(function (members) {
        var id = "g" + members[0].id, tags = [];
        members.forEach(function (m) { shown.set(m.id, id); tags = tags.concat(m.tags); });
        var outcome = members.filter(function (m) { return m.outcome >= 0; })[0];
        nodes.push({ id: id, depth: Math.min.apply(null, members.map(function (m) { return m.depth; })),
          label: members.length > 1 ? members.length + " states" + (outcome ? " (outcome " + (outcome.outcome + 1) + ")" : "")
            : stateLabel(members[0]),
          classes: classesOf(tags).concat(members.length > 1 ? ["group"] : []), members: members.map(function (m) { return m.id; }) });
      });
      var merged = cur.g.states.length - groups.size;
      hiddenNote = "Collapsed: states holding exactly the same objects (they differ only in pending work or bookkeeping) " +
        "are drawn as one node (" + num(merged) + " states merged into " + num(groups.size) + " nodes); " +
        "steps that changed no object are not drawn.";
    } else {
      var limit = mode === "depth" ? maxDepth : Infinity, deeper = 0;
      states.forEach(function (s) {
        if (s.depth > limit) { deeper++; return; }
        shown.set(s.id, "n" + s.id);
        nodes.push({ id: "n" + s.id, depth: s.depth, label: stateLabel(s), classes: classesOf(s.tags), members: [s.id] });
      });
      if (deeper) {
        var explored = cur.g.depth_counts.slice(limit + 1).reduce(function (a, b) { return a + b; }, 0);
        nodes.push({ id: "more", depth: limit + 1, label: "+" + num(explored) + " deeper states", classes: ["more"], members: [] });
        hiddenNote = "Collapsed: the " + num(explored) + " explored states deeper than " + limit + " (" + num(deeper) +
          " of them recorded) are drawn as one node.";
      }
    }
    cur.g.edges.forEach(function (e) {
      var a = shown.get(e.src), b = shown.get(e.dst);
      if (a === undefined) return;
      if (b === undefined) b = mode === "depth" ? "more" : undefined;
      if (b === undefined || (a === b && mode === "objects")) return;
      var key = a + ">" + b;
      if (!edges.has(key)) edges.set(key, { id: "e" + e.i, source: a, target: b, label: cur.abbrev[e.actor] || e.actor,
        full: e.actor + (e.request ? " " + e.request : ""), error: e.error, steps: [] });
      edges.get(key).steps.push(e.i);
    });
    return { nodes: nodes, edges: Array.from(edges.values()), shown: shown, note: hiddenNote };
  }

  var ROW_MAX = 40;
  /* Rows by depth; within a row, ordered by the mean position of each node's drawn parents. */
  function positions(model) {
    var rows = new Map(), pos = new Map(), parents = new Map(), y = 0;
    model.edges.forEach(function (e) {
      if (!parents.has(e.target)) parents.set(e.target, []);
      parents.get(e.target).push(e.source);
    });
    model.nodes.forEach(function (n) { if (!rows.has(n.depth)) rows.set(n.depth, []); rows.get(n.depth).push(n); });
    Array.from(rows.keys()).sort(function (a, b) { return a - b; }).forEach(function (d) {
      var row = rows.get(d);
      row.forEach(function (n, i) {
        var xs = (parents.get(n.id) || []).map(function (p) { return pos.has(p) ? pos.get(p).x : null; })
          .filter(function (x) { return x !== null; });
        n.key = xs.length ? xs.reduce(function (a, b) { return a + b; }, 0) / xs.length : i * 70;
      });
      row.sort(function (a, b) { return a.key - b.key || (a.members[0] || 0) - (b.members[0] || 0); });
      // a row wider than ROW_MAX nodes wraps onto more lines, so a wide level does not flatten the picture
      var lines = Math.ceil(row.length / ROW_MAX), width = Math.min(row.length, ROW_MAX);
      row.forEach(function (n, i) {
        pos.set(n.id, { x: ((i % ROW_MAX) - (width - 1) / 2) * 70, y: y + Math.floor(i / ROW_MAX) * 45 });
      });
      y += (lines - 1) * 45 + 110;
    });
    return pos;
  }

  var STYLE = [
    { selector: "node", style: { "background-color": "#90a4ae", label: "data(label)", "font-size": 9, width: 18, height: 18,
      "text-valign": "bottom", "text-margin-y": 3, color: "#333", "min-zoomed-font-size": 6 } },
    { selector: "node.good", style: { "background-color": "#2e7d32" } },
    { selector: "node.livelock", style: { "background-color": "#8e24aa" } },
    { selector: "node.bad", style: { "background-color": "#c62828" } },
    { selector: "node.unexpanded", style: { "background-color": "#fff", "border-width": 1, "border-style": "dashed", "border-color": "#555" } },
    { selector: "node.initial", style: { "border-width": 3, "border-color": "#1565c0", shape: "diamond", width: 24, height: 24 } },
    { selector: "node.group", style: { shape: "round-rectangle", width: 34, height: 22 } },
    { selector: "node.more", style: { shape: "tag", "background-color": "#cfd8dc", width: 40, height: 22 } },
    { selector: "node.onpath", style: { "border-width": 4, "border-color": "#ff9800" } },
    { selector: "node:selected", style: { "overlay-color": "#fdd835", "overlay-opacity": 0.45, "overlay-padding": 6 } },
    { selector: "edge", style: { width: 1.2, "line-color": "#b0bec5", "target-arrow-color": "#b0bec5", "target-arrow-shape": "triangle",
      "arrow-scale": 0.7, "curve-style": "bezier", label: "data(label)", "font-size": 10, "min-zoomed-font-size": 5,
      "text-rotation": "autorotate", color: "#555", "text-background-color": "#fff", "text-background-opacity": 0.8 } },
    { selector: "edge.error", style: { "line-color": "#c62828", "target-arrow-color": "#c62828", "line-style": "dashed" } },
    { selector: "edge.onpath", style: { width: 4, "line-color": "#ff9800", "target-arrow-color": "#ff9800", "z-index": 10 } },
    { selector: "edge.onloop", style: { width: 4, "line-color": "#8e24aa", "target-arrow-color": "#8e24aa", "z-index": 10 } },
    { selector: "edge.onalt", style: { width: 4, "line-color": "#1565c0", "target-arrow-color": "#1565c0", "z-index": 10 } },
    { selector: "edge:selected", style: { "overlay-color": "#fdd835", "overlay-opacity": 0.45 } }
  ];

  function draw() {
    var mode = $("collapse").value, depth = parseInt($("depth").value, 10);
    $("depth-label").hidden = mode !== "depth";
    var model = displayModel(mode, isNaN(depth) ? 6 : Math.max(0, depth));
    cur.shown = model.shown;
    cur.model = model;
    var pos = positions(model), elements = [];
    model.nodes.forEach(function (n) {
      elements.push({ group: "nodes", data: { id: n.id, label: n.label, members: n.members }, position: pos.get(n.id), classes: n.classes.join(" ") });
    });
    model.edges.forEach(function (e) {
      elements.push({ group: "edges", data: { id: e.id, source: e.source, target: e.target, label: e.label, full: e.full, steps: e.steps }, classes: e.error ? "error" : "" });
    });
    if (api.cy) api.cy.destroy();
    var big = elements.length > 3000;
    api.cy = cytoscape({ container: $("graph"), elements: elements, style: STYLE, layout: { name: "preset" },
      minZoom: 0.02, maxZoom: 4, hideEdgesOnViewport: big, textureOnViewport: big, boxSelectionEnabled: false });
    api.cy.on("tap", "node", function (ev) { onNode(ev.target); });
    api.cy.on("tap", "edge", function (ev) { showEdge(ev.target.data("steps")); });
    // the full label on hover: the drawn one is abbreviated
    api.cy.on("mouseover", "edge", function (ev) {
      var n = ev.target.data("steps").length;
      $("graph").title = ev.target.data("full") + (n > 1 ? " (+" + (n - 1) + " more)" : "");
    });
    api.cy.on("mouseout", "edge", function () { $("graph").title = ""; });
    fitTo(undefined, 45);
    $("graph").setAttribute("data-drawn-nodes", String(model.nodes.length));
    $("graph").setAttribute("data-drawn-edges", String(model.edges.length));
    note(model);
    highlight($("highlight").value);
  }

  function note(model) {
    var g = cur.g, parts = [], el = $("graph-note");
    var complete = g.states.length === g.total_states && g.edges.length === g.total_edges;
    if (complete) parts.push("All " + num(g.total_states) + " explored states and " + num(g.total_edges) + " transitions are recorded.");
    else {
      parts.push("Recorded " + num(g.states.length) + " of " + num(g.total_states) + " explored states and " + num(g.edges.length) +
        " of " + num(g.total_edges) + " transitions; the rest are not in this report: " + g.omitted + ".");
      parts.push("Explored states per depth: " + g.depth_counts.map(function (c, d) { return d + ": " + num(c); }).join(", ") + ".");
    }
    if (model.note) parts.push(model.note);
    parts.push("Drawn: " + num(model.nodes.length) + " nodes, " + num(model.edges.length) + " edges.");
    el.textContent = parts.join(" ");
    el.className = "graph-note" + (complete && !model.note ? " complete" : "");
  }

  // ---------------------------------------------------------------- highlighting counterexamples
  function pathsOf(si) { return scenarios[si].paths; }
  function highlight(pathId) {
    var cy = api.cy;
    cy.elements().removeClass("onpath onloop onalt");
    var p = pathsOf(cur.si).filter(function (x) { return x.id === pathId; })[0];
    if (!p) return;
    var marked = cy.collection();
    function walk(ids, cls, loopStart) {
      ids.forEach(function (id, i) {
        var n = cy.getElementById(cur.shown.get(id) || "");
        if (n.nonempty()) { n.addClass("onpath"); marked = marked.union(n); }
        if (i === 0) return;
        var a = cur.shown.get(ids[i - 1]), b = cur.shown.get(id);
        if (a === undefined || b === undefined) return;
        var e = cy.edges().filter(function (x) { return x.data("source") === a && x.data("target") === b; });
        e.addClass(loopStart >= 0 && i > loopStart ? "onloop" : cls);
        marked = marked.union(e);
      });
    }
    walk(p.nodes, "onpath", p.loop_start);
    walk(p.alternative, "onalt", -1);
    if (marked.nonempty()) fitTo(marked, 60);
  }

  // ---------------------------------------------------------------- the inspector
  function link(text, fn) { return h("a", { text: text, on: { click: function (ev) { ev.preventDefault(); fn(); } } }); }
  function stepText(e) {
    return e.actor + (e.kind === "reconcile" ? " reconcile " : " ") + e.request + (e.note ? " — " + e.note : "") +
      (e.writes.length ? " → " + e.writes.join("; ") : e.kind === "reconcile" ? " → no changes" : "") + (e.error ? " (raised)" : "");
  }
  function onNode(node) {
    var members = node.data("members") || [];
    if (!members.length) return showMore();
    showState(members[0], members);
  }
  function showMore() {
    var box = clear($("state-panel"));
    box.appendChild(h("h3", { text: "Deeper states (collapsed)" }));
    box.appendChild(h("p", { text: "Choose “collapse: nothing” or a larger depth to draw them." }));
  }
  function showState(id, members) {
    var s = cur.byId.get(id), box = clear($("state-panel"));
    if (!s) return;
    box.appendChild(h("h3", { text: "State " + id + (s.outcome >= 0 ? " — outcome " + (s.outcome + 1) : "") }));
    box.appendChild(h("div", { cls: "tags" }, s.tags.map(function (t) { return h("span", { cls: "t-" + t, text: t }); })));
    box.appendChild(h("p", { cls: "dim" }, ["depth " + s.depth + " · fingerprint ", h("code", { text: s.fingerprint.slice(0, 16) })]));
    box.appendChild(h("p", {}, [h("button", { type: "button", text: "compare: set as A", on: { click: function () { setDiff("diff-a", id); } } }),
      h("button", { type: "button", text: "set as B", on: { click: function () { setDiff("diff-b", id); } } })]));
    if (members && members.length > 1) {
      box.appendChild(h("p", { text: "This node stands for " + members.length + " states with the same objects: " }));
      box.appendChild(h("p", {}, members.slice(0, 60).map(function (m) { return link(String(m) + " ", function () { showState(m, members); }); })));
    }
    box.appendChild(h("p", { text: s.pending.length ? "pending: " + s.pending.join(", ") : "nothing pending" }));
    function moves(title, edges, other, word) {
      if (!edges.length) return;
      box.appendChild(h("div", { text: title }));
      box.appendChild(h("ul", { cls: "moves" }, edges.map(function (e) {
        return h("li", {}, [link(stepText(e), function () { showEdge([e.i]); }), " ",
          link(word + " state " + e[other], function () { select(e[other]); })]);
      })));
    }
    moves("reached by:", cur.inc.get(id), "src", "from");
    moves("next steps:", cur.out.get(id), "dst", "to");
    var objs = objectsOf(id);
    box.appendChild(h("h3", { text: objs.length + " object(s)" }));
    objs.forEach(function (o) {
      box.appendChild(h("details", { cls: "obj" }, [h("summary", { text: refOf(o) }), h("pre", { cls: "yaml", text: toYaml(o) })]));
    });
  }
  function showEdge(steps) {
    var e = cur.g.edges[steps[0]], box = clear($("state-panel"));
    box.appendChild(h("h3", { text: "Step: " + stepText(e) }));
    if (steps.length > 1) box.appendChild(h("p", { cls: "dim", text: "(" + steps.length + " steps between these nodes; the first is shown)" }));
    box.appendChild(h("p", {}, [link("from state " + e.src, function () { select(e.src); }), " → ",
      link("to state " + e.dst, function () { select(e.dst); })]));
    if (e.writes.length) box.appendChild(h("ul", {}, e.writes.map(function (w) { return h("li", { text: w }); })));
    var diff = h("div", {});
    renderDiff(diff, e.src, e.dst);
    box.appendChild(diff);
  }
  function select(id) {
    if (!cur.byId.has(id)) {
      clear($("state-panel")).appendChild(h("p", { text: "State " + id + " is not recorded in this report " +
        "(see the note above the graph for what was left out)." }));
      return;
    }
    if (!cur.shown.has(id)) { $("collapse").value = "none"; draw(); }
    var node = api.cy.getElementById(cur.shown.get(id));
    api.cy.elements().unselect();
    node.select();
    api.cy.animate({ center: { eles: node }, zoom: Math.max(api.cy.zoom(), 0.8) }, { duration: 0 });
    showState(id, node.data("members"));
  }

  // ---------------------------------------------------------------- comparing two states
  function diffChoices() {
    var opts = [], g = cur.g;
    g.states.forEach(function (s) {
      if (s.tags.indexOf("initial") >= 0) opts.push([s.id, "initial state " + s.id]);
      if (s.outcome >= 0) opts.push([s.id, "outcome " + (s.outcome + 1) + " (state " + s.id + ")"]);
    });
    pathsOf(cur.si).forEach(function (p) {
      var end = p.nodes[p.nodes.length - 1];
      if (end !== undefined) opts.push([end, "end of " + p.check + " / " + p.kind + " (state " + end + ")"]);
      var alt = p.alternative[p.alternative.length - 1];
      if (alt !== undefined) opts.push([alt, "end of path B (state " + alt + ")"]);
    });
    return opts;
  }
  function fillDiffSelects() {
    var opts = diffChoices();
    ["diff-a", "diff-b"].forEach(function (name) {
      var sel = clear($(name));
      opts.forEach(function (o) { sel.appendChild(h("option", { value: String(o[0]), text: o[1] })); });
    });
    var outcomes = opts.filter(function (o) { return o[1].indexOf("outcome") === 0; });
    if (outcomes.length >= 2) { $("diff-a").value = String(outcomes[0][0]); $("diff-b").value = String(outcomes[1][0]); }
    else if (opts.length >= 2) $("diff-b").value = String(opts[opts.length - 1][0]);
    updateDiff();
  }
  function setDiff(name, id) {
    var sel = $(name);
    if (!Array.prototype.some.call(sel.options, function (o) { return o.value === String(id); }))
      sel.appendChild(h("option", { value: String(id), text: "state " + id }));
    sel.value = String(id);
    updateDiff();
  }
  function updateDiff() { renderDiff($("diff-panel"), parseInt($("diff-a").value, 10), parseInt($("diff-b").value, 10)); }

  // ---------------------------------------------------------------- wiring
  /* Above this many recorded states the graph opens collapsed by identical clusters (one click undoes it). */
  var OPEN_COLLAPSED = 400;
  function useScenario(si) {
    $("graph-scenario").value = String(si);
    load(si);
    $("collapse").value = cur.g.states.length > OPEN_COLLAPSED ? "objects" : "none";
    var hl = clear($("highlight"));
    hl.appendChild(h("option", { value: "", text: "no counterexample" }));
    pathsOf(si).forEach(function (p) { hl.appendChild(h("option", { value: p.id, text: p.check + " · " + p.kind + ": " + p.summary })); });
    if (pathsOf(si).length) hl.value = pathsOf(si)[0].id;
    fillDiffSelects();
    draw();
  }
  function scenarioOf(el) {
    var sec = el.closest("[data-scenario]");
    return sec ? parseInt(sec.getAttribute("data-scenario"), 10) : -1;
  }
  function focus(si, fn) {
    if (!scenarios[si] || !scenarios[si].graph) return;
    if (!cur || cur.si !== si) useScenario(si);
    fn();
    $("explorer").scrollIntoView({ block: "start" });
  }

  function init() {
    var withGraph = scenarios.map(function (s, i) { return [s, i]; }).filter(function (x) { return x[0].graph; });
    if (!withGraph.length || !$("graph")) return;
    var pick = $("graph-scenario");
    withGraph.forEach(function (x) { pick.appendChild(h("option", { value: String(x[1]), text: x[0].name + " (" + x[0].verdict + ")" })); });
    pick.addEventListener("change", function () { useScenario(parseInt(pick.value, 10)); });
    $("collapse").addEventListener("change", draw);
    $("depth").addEventListener("change", draw);
    $("highlight").addEventListener("change", function () { highlight($("highlight").value); });
    $("fit").addEventListener("click", function () { fitTo(undefined, 45); });
    $("diff-a").addEventListener("change", updateDiff);
    $("diff-b").addEventListener("change", updateDiff);
    $("show-noise").addEventListener("change", updateDiff);
    document.addEventListener("click", function (ev) {
      var t = ev.target;
      if (!(t instanceof Element)) return;
      if (t.classList.contains("show-path")) {
        var si = parseInt(t.getAttribute("data-scenario"), 10), pid = t.getAttribute("data-path");
        focus(si, function () { $("highlight").value = pid; highlight(pid); });
      } else if (t.classList.contains("goto") || t.classList.contains("goto-state")) {
        var li = t.closest("[data-node]"), si2 = scenarioOf(t);
        Array.prototype.forEach.call(document.querySelectorAll("li.step.active"), function (x) { x.classList.remove("active"); });
        if (li.tagName === "LI") li.classList.add("active");
        focus(si2, function () { select(parseInt(li.getAttribute("data-node"), 10)); });
      }
    });
    var firstFailing = withGraph.filter(function (x) { return x[0].paths.length; })[0] || withGraph[0];
    useScenario(firstFailing[1]);
    api.select = select;
    api.highlight = highlight;
    api.ready = true;
    document.body.setAttribute("data-graph-ready", "1");
  }
  init();
})();

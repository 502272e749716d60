/* The HTML report's script: lays out the data trac_metrics/reporting/html/page_data.py computed (it computes no
   metric), sorts and filters it, draws the figures with uPlot and opens each question's trace on demand.
   Text from the records is written with textContent only, never as markup. */
"use strict";
(function () {
  const startedAt = performance.now();
  const DATA = JSON.parse(document.getElementById("trac-data").textContent);
  // The figures and the questions follow the script in the file (page.py, LATE_DATA): each is read the first time it
  // is used, by a tab built once the document is parsed.
  for (const part of ["figures", "questions"]) {
    let value;
    Object.defineProperty(DATA, part, { get: () => (value ??= JSON.parse(document.getElementById(`trac-${part}`).textContent)) });
  }
  const PAIRS = DATA.pairs;
  const METHODS = new Map(DATA.methods.map((method) => [method.name, method]));
  const METRICS = new Map(DATA.metrics.map((metric) => [metric.name, metric]));
  const LEADERBOARD = DATA.leaderboard_methods;
  const LEVEL = Math.round(DATA.settings.level * 100);
  const report = { charts: {}, startedAt, parsedAt: performance.now(), readyAt: null };
  window.tracReport = report;

  // ------------------------------------------------------------------------------------------------ helpers

  function h(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key === "dataset") Object.assign(node.dataset, value);
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  // One format per quantity: metrics, probabilities and shares with 3 decimals, a method's raw score with 4
  // significant digits (an integer one, such as a trace length, whole), counts whole; a missing value is "—" on the
  // page (the downloads write nan, as trac report's CSV files do).
  const missing = (value) => value === null || value === undefined || Number.isNaN(value);
  const MISSING = "—";
  function fmt(value) {
    if (missing(value)) return MISSING;
    return typeof value === "number" ? value.toFixed(3) : String(value);
  }
  function fmtScore(value) {
    if (missing(value)) return MISSING;
    return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(4)));
  }
  const hovered = (u, value) => fmt(value);
  // A bootstrap p as trac report words it (tables.format_p): below the finest step the resamples can show. The page
  // computes it from the number: a worded p for every pair of methods would grow the page's data.
  function pText(p) {
    if (missing(p)) return "p = nan";
    const floor = Math.max(1 / DATA.settings.resamples, 0.001);
    return p < floor ? `p < ${Number(floor.toPrecision(3))}` : `p = ${p.toFixed(3)}`;
  }
  const signed = (value) => (missing(value) ? MISSING : (value > 0 ? "+" : "") + value.toFixed(3));
  const interval = (bounds) =>
    bounds && !missing(bounds[0]) && !missing(bounds[1]) ? `[${fmt(bounds[0])}, ${fmt(bounds[1])}]` : "";
  // A model named by a local folder shows as the folder's name (the whole path on hover).
  const modelName = (model) => (model.startsWith("/") ? model.split("/").filter(Boolean).pop() || model : model);
  // A pair's name with its model's short name (a model given as a folder path would widen every select past a phone).
  const pairName = (pair) => modelName(pair.model) + pair.name.slice(pair.model.length);
  const modelCell = (model) => ({ text: modelName(model), value: model, node: h("span", { title: model, text: modelName(model) }) });
  const methodLabel = (name) => (METHODS.has(name) ? METHODS.get(name).label : name);
  // A method's or metric's entry by the label tables show it under (the leaderboard's rows and columns).
  const DEFINED = new Map([...DATA.methods, ...DATA.metrics].map((entry) => [entry.label, entry]));
  // Where a definition's docs section is: settings.docs is the address of trac-eval's docs/ folder (none: no link).
  const docHref = (doc) => (DATA.settings.docs && doc ? DATA.settings.docs + doc.replace(/^docs\//, "") : null);
  // "?" beside a method's or metric's name: its one-line definition on hover and for screen readers, and, clicked, in
  // a box beside it with its docs section (linked only where the page was given a docs address: trac report
  // --docs-url, rendered docs; a source checkout's Markdown is named, never opened raw).
  function help(entry) {
    if (!entry || !entry.summary) return null;
    const box = h("span", { class: "help-box", role: "note", hidden: true }, definition(entry));
    const button = h("button", { type: "button", class: "help", title: entry.summary, "aria-expanded": "false" }, "?", h("span", { class: "visually-hidden", text: `: ${entry.summary}` }));
    const toggle = (show) => {
      box.hidden = !show;
      button.setAttribute("aria-expanded", String(show));
    };
    button.addEventListener("click", (event) => {
      event.stopPropagation(); // a header's "?" explains, it does not sort
      toggle(box.hidden);
    });
    button.addEventListener("keydown", (event) => {
      if (event.key !== "Escape" || box.hidden) return;
      event.stopPropagation(); // Esc closes the box, not the open question
      toggle(false);
    });
    return h("span", { class: "help-wrap" }, button, box);
  }
  const helpFor = (label) => help(DEFINED.get(label));
  const unique = (values) => [...new Set(values)];

  function choice(id, options, value, onchange) {
    const node = h("select", { id, onchange: () => onchange(node.value) });
    for (const option of options) {
      node.append(h("option", { value: option.value, selected: option.value === value, text: option.label }));
    }
    return node;
  }

  function labelled(text, control) {
    return h("label", null, text, control);
  }

  // A table sorted by its column headers (buttons: click, Enter or Space): first largest first, then smallest first;
  // missing values always last. columns: [{key, label, numeric, sticky, help}] (help: a definition, see help());
  // rows: [{key, cells: {column: {text, value, cls, node}}}]; onSort(state) hears every change of {key, dir}. With onRowClick the rows are focusable (one at a
  // time in the tab order: the open row, else the first) and open on a click. With pageSize the body holds one page
  // of the sorted rows at a time (the page of the row `current` when it is listed, else the first), the table's
  // `pager` (previous / next and "rows i–j of n") turns the pages, and `rowAt(index)` shows the page of the index-th
  // sorted row and returns its row element; `sorted()` is every row in order, `start()` the page's first index;
  // onShow() hears every page shown.
  function sortableTable({ id, columns, rows, footer = [], sort = null, onSort = null, onRowClick = null, current = null, pageSize = 0, onShow = null }) {
    let state = sort;
    let ordered = rows;
    let start = 0;
    const head = h("tr");
    const body = h("tbody");
    const table = h("table", { id, class: "sortable" }, h("thead", null, head), body);
    for (const column of columns) {
      const button = h("button", {
        type: "button",
        class: "sort",
        text: column.label,
        onclick: () => {
          state = { key: column.key, dir: state && state.key === column.key ? -state.dir : -1 };
          draw();
          if (onSort) onSort(state);
        },
      });
      const th = h("th", { class: ["sortable", column.numeric ? "num" : "", column.sticky ? "sticky" : ""].join(" ").trim(), scope: "col", dataset: { key: column.key }, "aria-sort": "none" }, button, column.help ? help(column.help) : null);
      th.addEventListener("click", (event) => event.target === th && button.click()); // the whole cell is the target
      head.append(th);
    }
    function cellNode(column, cell) {
      const td = h(column.sticky ? "th" : "td", {
        class: [column.numeric ? "num" : "", column.sticky ? "sticky" : "", cell && cell.cls ? cell.cls : ""].join(" ").trim() || null,
        scope: column.sticky ? "row" : null,
      });
      if (cell && typeof cell.value === "number") td.dataset.value = String(cell.value);
      if (cell && cell.node) td.append(typeof cell.node === "function" ? cell.node() : cell.node); // a function: made when shown
      else td.textContent = cell ? cell.text : "";
      return td;
    }
    function rowNode(row) {
      const tr = h("tr", { dataset: { key: row.key } }, ...columns.map((column) => cellNode(column, row.cells[column.key])));
      if (onRowClick) {
        tr.tabIndex = row.key === current ? 0 : -1;
        tr.addEventListener("click", () => onRowClick(row, tr));
        tr.row = row;
      }
      return tr;
    }
    function draw() {
      ordered = rows.slice();
      if (state) {
        ordered.sort((a, b) => {
          const x = a.cells[state.key] ? a.cells[state.key].value : null;
          const y = b.cells[state.key] ? b.cells[state.key].value : null;
          if (missing(x) || missing(y)) return missing(x) - missing(y);
          if (typeof x === "number" && typeof y === "number") return state.dir * (x - y);
          return state.dir * String(x).localeCompare(String(y));
        });
      }
      const at = current === null ? -1 : ordered.findIndex((row) => row.key === current);
      start = pageSize && at >= 0 ? at - (at % pageSize) : 0;
      for (const th of head.children) {
        const sorted = state && th.dataset.key === state.key;
        th.setAttribute("aria-sort", sorted ? (state.dir > 0 ? "ascending" : "descending") : "none");
      }
      show();
    }
    const pager = pageSize ? h("div", { class: "pager" }) : null;
    const turn = (by) => {
      start += by * pageSize;
      show();
    };
    const previous = h("button", { type: "button", class: "page-previous", text: "‹ previous", onclick: () => turn(-1) });
    const next = h("button", { type: "button", class: "page-next", text: "next ›", onclick: () => turn(1) });
    const shownRows = h("span", { class: "page-rows", role: "status" });
    if (pager) pager.append(previous, shownRows, next);
    // The rows of the current page (all of them without pageSize) in the body, and the pager saying which.
    function show() {
      const end = pageSize ? Math.min(ordered.length, start + pageSize) : ordered.length;
      body.replaceChildren(...ordered.slice(start, end).map(rowNode));
      if (onRowClick && body.firstChild && !body.querySelector("tr[tabindex='0']")) body.firstChild.tabIndex = 0;
      if (onShow) onShow();
      if (!pager) return;
      shownRows.textContent = ordered.length ? `rows ${(start + 1).toLocaleString("en")}–${end.toLocaleString("en")} of ${ordered.length.toLocaleString("en")}` : "no rows";
      previous.disabled = start === 0;
      next.disabled = end >= ordered.length;
    }
    if (footer.length) table.append(h("tfoot", null, ...footer.map(rowNode)));
    draw();
    Object.assign(table, {
      pager,
      sorted: () => ordered,
      start: () => start,
      rowAt(index) {
        if (pageSize && (index < start || index >= start + pageSize)) {
          start = index - (index % pageSize);
          show();
        }
        return body.children[index - start];
      },
    });
    return table;
  }

  // ------------------------------------------------------------------------------------------------ downloads

  // A table as CSV (`trac report`'s conventions: a header line, NaN written nan, full-precision numbers) or JSON (one
  // object per row), saved as a file: the numbers on the page, never recomputed.
  // A text cell is quoted and, when it starts as a spreadsheet formula would (= + - @ TAB CR), led by ' (OWASP's
  // "CSV injection" advice, as trac report's csv_text_cell in trac_metrics/reporting/tables.py); numbers stay numbers.
  function csvCell(value) {
    if (missing(value)) return "nan";
    if (typeof value === "number") return String(value);
    const text = /^[=+\-@\t\r]/.test(String(value)) ? `'${value}` : String(value);
    return `"${text.replace(/"/g, '""')}"`;
  }
  const toCsv = (header, rows) => [header, ...rows].map((row) => row.map(csvCell).join(",")).join("\n") + "\n";
  const toJson = (header, rows) => JSON.stringify(rows.map((row) => Object.fromEntries(header.map((name, i) => [name, missing(row[i]) ? null : row[i]]))), null, 1);
  function save(name, text, type) {
    const url = URL.createObjectURL(new Blob([text], { type }));
    const link = h("a", { href: url, download: name, hidden: true });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  }
  // "CSV" and "JSON" buttons saving stem.csv / stem.json of what table() returns ({header, rows}) when clicked.
  function downloads(stem, table, what) {
    return h(
      "span",
      { class: "downloads", dataset: { stem } },
      h("button", { type: "button", class: "download-csv", "aria-label": `download ${what} as CSV`, text: "CSV", onclick: () => { const { header, rows } = table(); save(`${stem}.csv`, toCsv(header, rows), "text/csv"); } }),
      h("button", { type: "button", class: "download-json", "aria-label": `download ${what} as JSON`, text: "JSON", onclick: () => { const { header, rows } = table(); save(`${stem}.json`, toJson(header, rows), "application/json"); } }),
    );
  }

  // ----------------------------------------------------------------------------------------- leaderboard tab

  // A table of `trac report` (page_data.table_data), cell by cell, with its best / second marks.
  function reportTable(table) {
    const columns = [
      ...table.index.map((name, level) => ({ key: `i${level}`, label: name || "" })),
      ...table.columns.map((name, position) => ({ key: `c${position}`, label: name, numeric: true, help: DEFINED.get(name.replace(/^macro /, "")) })),
    ];
    const rows = table.rows.map((labels, row) => {
      const cells = {};
      labels.forEach((text, level) => (cells[`i${level}`] = { text, value: text, node: DEFINED.has(text) ? h("span", null, text, helpFor(text)) : null }));
      table.values[row].forEach((value, position) => {
        const integer = table.integer[position];
        const text = typeof value === "number" ? (integer ? String(value) : fmt(value)) : missing(value) ? MISSING : value;
        cells[`c${position}`] = { text, value, cls: table.marks[row][position] || "" };
      });
      return { key: labels.join(" / "), cells };
    });
    const exported = () => ({ header: [...table.index, ...table.columns], rows: table.rows.map((labels, row) => [...labels, ...table.values[row]]) });
    return h(
      "div",
      { class: "report-table" },
      downloads(table.name, exported, table.title),
      h("div", { class: "table-wrap" }, sortableTable({ id: `table-${table.name}`, columns, rows })),
      table.note ? h("p", { class: "note", text: table.note }) : null,
    );
  }

  function pairCell(value, extra) {
    return { text: fmt(value), value, node: h("span", null, fmt(value), extra ? h("span", { class: "interval", text: extra }) : null) };
  }

  // Models × tasks: one row per pair, one column per leaderboard method for the chosen metric; the macro row; with a
  // reference method, each cell is the method's value minus the reference's, the macro row the paired bootstrap.
  function pairTable(metric, reference) {
    const higher = METRICS.get(metric).higher;
    const columns = [
      { key: "pair", label: "model / task", sticky: true },
      { key: "n", label: "n", numeric: true },
      { key: "k", label: "K", numeric: true },
      { key: "accuracy", label: "accuracy", numeric: true },
      { key: "majority", label: "majority acc.", numeric: true },
      ...LEADERBOARD.map((method) => ({ key: method, label: methodLabel(method), numeric: true, help: METHODS.get(method) })),
    ];
    const rows = PAIRS.map((pair, index) => {
      const values = pair.metrics[metric];
      const cells = {
        pair: {
          text: pair.name,
          value: pair.name,
          node: h("span", { title: pair.model }, modelName(pair.model), h("span", { class: "interval", text: `${pair.task} · ${pair.decoding}` })),
        },
        n: { text: String(pair.n), value: pair.n },
        k: { text: String(pair.k), value: pair.k },
        accuracy: { text: fmt(pair.accuracy), value: pair.accuracy },
        majority: { text: fmt(pair.majority_accuracy), value: pair.majority_accuracy },
      };
      const defined = LEADERBOARD.map((method) => values[method]).filter((value) => !missing(value));
      const best = defined.length ? (higher ? Math.max(...defined) : Math.min(...defined)) : null;
      for (const method of LEADERBOARD) {
        const value = values[method];
        if (reference) {
          const base = values[reference];
          const difference = missing(value) || missing(base) ? null : value - base;
          cells[method] = method === reference ? { text: "reference", value: null } : { text: signed(difference), value: difference };
        } else {
          const bounds = pair.intervals[metric] ? pair.intervals[metric][method] : null;
          cells[method] = { ...pairCell(value, interval(bounds)), cls: value === best ? "row-best" : "" };
        }
      }
      return { key: String(index), cells };
    });
    const macro = DATA.macro;
    const footerCells = {
      pair: { text: "macro (pair-equal)" },
      n: { text: String(PAIRS.reduce((sum, pair) => sum + pair.n, 0)) },
      accuracy: { text: fmt(macro.accuracy), value: macro.accuracy },
      majority: { text: fmt(macro.majority_accuracy), value: macro.majority_accuracy },
    };
    for (const method of LEADERBOARD) {
      const entry = macro[metric][method];
      if (!reference) {
        footerCells[method] = pairCell(entry.value, interval(entry.interval));
        continue;
      }
      const paired = DATA.paired[metric] ? DATA.paired[metric][reference] : null;
      const row = paired ? paired[method] : null;
      if (method === reference) footerCells[method] = { text: "reference" };
      else if (row) {
        const detail = `${interval([row.lo, row.hi])} ${pText(row.p)} W/T/L ${row.wins}/${row.ties}/${row.losses}`;
        footerCells[method] = { text: signed(row.difference), value: row.difference, node: h("span", null, signed(row.difference), h("span", { class: "interval", text: detail })) };
      } else {
        const difference = missing(entry.value) || missing(macro[metric][reference].value) ? null : entry.value - macro[metric][reference].value;
        footerCells[method] = { text: signed(difference), value: difference };
      }
    }
    return sortableTable({ id: "pair-table", columns, rows, footer: [{ key: "macro", cells: footerCells }] });
  }

  // ------------------------------------------------------------------------------------------ ranked summary

  const SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attributes, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
    node.append(...children);
    return node;
  }

  // A dot at `value` and a whisker over its interval on the shared scale `domain`; a dashed line at `zero` (when
  // given and inside the domain). What lies beyond the scale is cut at its edge: an arrowhead there instead of the
  // dot or the whisker's end, and "off scale" in the label.
  function whisker(value, bounds, domain, zero, label) {
    const width = 140;
    const height = 16;
    const x = (v) => 4 + ((Math.min(domain[1], Math.max(domain[0], v)) - domain[0]) / (domain[1] - domain[0] || 1)) * (width - 8);
    const outside = (v) => v < domain[0] || v > domain[1];
    const arrow = (v, cls) => {
      const tip = x(v);
      const back = v < domain[0] ? tip + 6 : tip - 6;
      return svg("polygon", { points: `${tip},${height / 2} ${back},${height / 2 - 4} ${back},${height / 2 + 4}`, class: cls });
    };
    const cut = [value, ...(bounds || [])].some((v) => !missing(v) && outside(v));
    const node = svg("svg", { class: "whisker", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": cut ? `${label} (off scale)` : label });
    if (zero !== null && zero >= domain[0] && zero <= domain[1]) {
      node.append(svg("line", { x1: x(zero), x2: x(zero), y1: 1, y2: height - 1, class: "zero" }));
    }
    if (bounds && !missing(bounds[0]) && !missing(bounds[1])) {
      node.append(svg("line", { x1: x(bounds[0]), x2: x(bounds[1]), y1: height / 2, y2: height / 2, class: "range" }));
      for (const end of bounds) node.append(outside(end) ? arrow(end, "range-cut") : svg("line", { x1: x(end), x2: x(end), y1: 4, y2: height - 4, class: "range" }));
    }
    if (!missing(value)) node.append(outside(value) ? arrow(value, "dot offscale") : svg("circle", { cx: x(value), cy: height / 2, r: 4, class: "dot" }));
    return node;
  }

  function domainOf(entries) {
    const values = entries.flatMap((entry) => (entry ? [entry.value, ...(entry.interval || [])] : [])).filter((v) => !missing(v));
    if (!values.length) return [0, 1];
    const lo = Math.min(...values);
    const hi = Math.max(...values);
    const pad = (hi - lo || 0.1) * 0.05;
    return [lo - pad, hi + pad];
  }

  // The ranked summary's marks (RANKED_MARKS of trac_metrics/reporting/leaderboard.py): "best" only where every
  // other method's paired difference to the leader excludes 0, else the leader and the methods tied with it.
  const RANKED_MARKS = { best: "best", tied: "tied with the best" };
  const ZOOM_ROWS = 6;
  const CONSTANT_NOTE = "One value on at least 99 % of each pair's answers: it tells no answer from another, and its probability is calibrated by construction";

  // Who wins and by how much: ranked_summary() of trac_metrics/reporting/model/statistics.py, as `trac report` writes it.
  // The ranked summary of `metric` against `against` (any leaderboard method, on a headline metric: DATA.paired holds
  // every method against every other) or, without one, against its default reference: the reference and the rows,
  // each with its difference to it.
  function rankedAgainst(metric, against) {
    const ranked = DATA.ranked[metric];
    const paired = DATA.paired[metric];
    if (!against || !paired || !Object.hasOwn(paired, against)) return { reference: ranked.reference, rows: ranked.rows };
    const rows = ranked.rows.map((row) => {
      const found = row.method === against ? null : paired[against][row.method];
      const difference = found && { value: found.difference, interval: [found.lo, found.hi], p: found.p, p_text: pText(found.p), wins: found.wins, ties: found.ties, losses: found.losses, pairs: found.pairs };
      return { ...row, difference };
    });
    return { reference: against, rows };
  }

  function rankedTable(metric, against) {
    const ranked = DATA.ranked[metric];
    const label = METRICS.get(metric).label;
    const { reference: referenceMethod, rows: shown } = rankedAgainst(metric, against);
    const reference = referenceMethod ? methodLabel(referenceMethod) : null;
    // The value scale spans the leading ranks (and every method marked), so the leaders stay apart however weak the
    // last methods are; a method beyond it is drawn off scale.
    const valueDomain = domainOf(shown.filter((row, position) => position < ZOOM_ROWS || row.mark));
    const differenceDomain = domainOf([...shown.map((row) => row.difference), { value: 0 }]);
    const head = h(
      "tr",
      null,
      h("th", { class: "num", scope: "col", text: "rank" }),
      h("th", { scope: "col", text: "method" }),
      h("th", { class: "num", scope: "col", text: `macro ${label} [${LEVEL}% CI]` }),
      h("th", { scope: "col", text: `${label} (${ranked.higher ? "higher" : "lower"} is better)` }),
      ranked.calibration ? h("th", { class: "num", scope: "col", text: "macro AUROC" }) : null,
      h("th", { class: "num", scope: "col", text: reference ? `− ${reference} [${LEVEL}% CI]` : "difference" }),
      h("th", { scope: "col", text: "difference" }),
      h("th", { class: "num", scope: "col", text: "one-sided p" }),
    );
    const rows = shown.map((row, position) => {
      const difference = row.difference;
      const valueText = `${fmt(row.value)} ${interval(row.interval)}`.trim();
      const classes = [row.method === referenceMethod ? "reference" : "", row.mark === "tied" ? "tied" : ""].join(" ").trim();
      return h(
        "tr",
        { dataset: { method: row.method }, class: classes || null },
        h("td", { class: "num", text: String(position + 1) }),
        h(
          "th",
          { scope: "row", class: "method" },
          row.label,
          help(METHODS.get(row.method)),
          row.mark ? h("span", { class: `badge mark ${row.mark}`, text: RANKED_MARKS[row.mark] }) : null,
          row.constant ? h("span", { class: "badge constant", text: "constant score", title: CONSTANT_NOTE }) : null,
        ),
        h(
          "td",
          { class: `num value ${row.mark || ""}`.trim(), dataset: { value: missing(row.value) ? "" : String(row.value), lo: String(row.interval[0] ?? ""), hi: String(row.interval[1] ?? "") } },
          fmt(row.value),
          h("span", { class: "interval", text: interval(row.interval) }),
        ),
        h("td", null, whisker(row.value, row.interval, valueDomain, null, `${row.label}: ${valueText}`)),
        ranked.calibration ? h("td", { class: "num auroc", dataset: { value: missing(row.auroc) ? "" : String(row.auroc) }, text: fmt(row.auroc) }) : null,
        difference
          ? h(
              "td",
              { class: "num difference", dataset: { value: missing(difference.value) ? "" : String(difference.value), lo: String(difference.interval[0] ?? ""), hi: String(difference.interval[1] ?? "") } },
              signed(difference.value),
              h("span", { class: "interval", text: interval(difference.interval) }),
            )
          : h("td", { class: "num difference", text: reference && row.method === referenceMethod ? "reference" : MISSING }),
        h("td", null, difference ? whisker(difference.value, difference.interval, differenceDomain, 0, `${row.label} − ${reference}: ${signed(difference.value)} ${interval(difference.interval)}`) : null),
        h("td", { class: "num p", text: difference ? difference.p_text : "", title: difference ? `wins / ties / losses over ${difference.pairs} pairs: ${difference.wins} / ${difference.ties} / ${difference.losses}` : null }),
      );
    });
    return h("table", { id: "ranked-summary", class: "ranked" }, h("caption", { class: "note" }, `Leaderboard methods ranked by macro ${label}` + (reference ? `, against ${reference}` : "")), h("thead", null, head), h("tbody", null, ...rows));
  }

  // A definition in words with its docs section, linked when the page knows where the docs are.
  function definition(entry) {
    const href = docHref(entry.doc);
    const where = entry.doc ? (href ? h("a", { href, target: "_blank", rel: "noopener", text: entry.doc }) : entry.doc) : null;
    return h("span", { class: "definition" }, entry.summary || "", where ? " (" : "", where, where ? ")" : "");
  }

  // Every method on the page and every metric, defined in one line each.
  function glossary() {
    const list = (entries) => h("dl", { class: "glossary" }, ...entries.flatMap((entry) => [h("dt", { text: entry.label }), h("dd", null, definition(entry))]));
    return h(
      "details",
      { id: "glossary" },
      h("summary", null, "What each method and metric means"),
      h("h3", null, "Methods"),
      list(DATA.methods),
      h("h3", null, "Metrics"),
      list(DATA.metrics),
    );
  }

  function leaderboardPanel(panel) {
    const [main, ...others] = DATA.tables;
    const pairBox = h("div", { class: "table-wrap", id: "pair-table-wrap" });
    const rankedBox = h("div", { class: "table-wrap" });
    // The rank-by metric and the reference live in the link too (rank=, against=).
    const defaultMetric = "auroc" in DATA.ranked ? "auroc" : Object.keys(DATA.ranked)[0];
    let rankedMetric = Object.hasOwn(DATA.ranked, route.rank || "") ? route.rank : defaultMetric;
    let against = METHODS.has(route.against) ? route.against : "";
    const rankedNote = h("p", { class: "note" });
    const againstChoice = choice(
      "ranked-against",
      [{ value: "", label: "the default reference" }, ...DATA.leaderboard_methods.map((method) => ({ value: method, label: methodLabel(method) }))],
      against,
      (value) => {
        against = value;
        route.against = value;
        writeRoute(false);
        drawRanked();
      },
    );
    const drawRanked = () => {
      rankedBox.replaceChildren(rankedTable(rankedMetric, against));
      rankedHelp.replaceChildren(`${METRICS.get(rankedMetric).label}: `, definition(METRICS.get(rankedMetric)));
      againstChoice.disabled = !DATA.paired[rankedMetric];
      const ranked = { ...DATA.ranked[rankedMetric], reference: rankedAgainst(rankedMetric, against).reference };
      rankedNote.textContent =
        `Each method's pair-equal macro with its ${LEVEL}% hierarchical-bootstrap interval (dot and whisker, one scale ` +
        `over the first ${ZOOM_ROWS} ranks and every marked method; beyond it an arrowhead at the edge). ` +
        "Marked best only where every other method's paired difference to the leader excludes 0; otherwise the " +
        "leader and every method whose paired interval to it includes 0 are tied with the best (barred on the left). " +
        (ranked.calibration
          ? `Constant score: ${CONSTANT_NOTE.toLowerCase()}; ranked after every other method here and never marked. ` +
            "Macro AUROC beside it: how well each method tells right from wrong answers. "
          : "") +
        (ranked.reference
          ? `Difference: the method's macro minus ${methodLabel(ranked.reference)}'s (the default reference: SC@K when every pair ` +
            `has it, else the best single-trace baseline; under AUROC, AURC and ECE any method), the ${LEVEL}% interval of the paired bootstrap differences and the one-sided p ` +
            "(the share of resamples where the method is not better). The same numbers as trac report's ranked_summary table."
          : "No reference: neither SC@K nor a single-trace baseline is evaluated on every pair.");
    };
    let metric = "auroc";
    let reference = "";
    const rankedHelp = h("p", { class: "note", id: "ranked-metric-definition" });
    const pairHelp = h("p", { class: "note", id: "pair-metric-definition" });
    const redraw = () => {
      pairBox.replaceChildren(pairTable(metric, reference));
      pairHelp.replaceChildren(`${METRICS.get(metric).label}: `, definition(METRICS.get(metric)));
      const label = METRICS.get(metric).label;
      pairNote.textContent =
        (reference
          ? `Each cell: the method's ${label} minus ${methodLabel(reference)}'s on that pair; macro row: the paired ` +
            `difference of the pair-equal macros with its ${LEVEL}% bootstrap interval, one-sided p and wins / ties / losses over pairs.`
          : `${label} of each method on each pair (${METRICS.get(metric).higher ? "higher" : "lower"} is better; the ` +
            `best of each pair in colour). Under a headline metric, the ${LEVEL}% bootstrap interval over that pair's ` +
            `questions; macro row: the pair-equal macro with the report's hierarchical bootstrap interval.`) +
        " Click a column header to sort.";
    };
    const pairNote = h("p", { class: "note" });
    panel.append(
      h("h2", null, "Who wins, by how much"),
      h(
        "div",
        { class: "controls" },
        labelled(
          "rank by",
          choice("ranked-metric", Object.keys(DATA.ranked).map((name) => ({ value: name, label: METRICS.get(name).label })), rankedMetric, (value) => {
            rankedMetric = value;
            route.rank = value === defaultMetric ? "" : value;
            writeRoute(false);
            drawRanked();
          }),
        ),
        labelled("against", againstChoice),
      ),
      downloads("ranked_summary", () => {
        const ranked = DATA.ranked[rankedMetric];
        const label = METRICS.get(rankedMetric).label;
        const auroc = ranked.calibration ? ["macro AUROC"] : [];
        const header = ["rank", "method", "mark", `macro ${label}`, `${label} lo`, `${label} hi`, ...auroc, "difference", "difference lo", "difference hi", "p", "pairs"];
        const rows = rankedAgainst(rankedMetric, against).rows.map((row, position) => {
          const d = row.difference || { value: null, interval: [null, null], p: null, pairs: 0 };
          return [position + 1, row.label, row.verdict || null, row.value, ...row.interval, ...(auroc.length ? [row.auroc] : []), d.value, ...d.interval, d.p, d.pairs];
        });
        return { header, rows };
      }, "the ranked summary"),
      rankedHelp,
      rankedBox,
      rankedNote,
      h("h2", null, "Models × tasks"),
      ...DATA.notes.map((text) => h("p", { class: "note warning", text })),
      h(
        "div",
        { class: "controls" },
        labelled(
          "metric",
          choice("pair-metric", DATA.metrics.map((item) => ({ value: item.name, label: item.label })), metric, (value) => {
            metric = value;
            redraw();
          }),
        ),
        labelled(
          "paired differences against",
          choice(
            "pair-reference",
            [{ value: "", label: "(none)" }, ...LEADERBOARD.map((name) => ({ value: name, label: methodLabel(name) }))],
            reference,
            (value) => {
              reference = value;
              redraw();
            },
          ),
        ),
      ),
      pairHelp,
      pairBox,
      pairNote,
      h("h2", null, main.title),
      reportTable(main),
      h("details", null, h("summary", null, "The other tables of trac report"), ...others.flatMap((table) => [h("h2", null, table.title), reportTable(table)])),
      glossary(),
    );
    redraw();
    drawRanked();
  }

  // -------------------------------------------------------------------------------------------- analyses tab

  // The paper's analyses (docs/method.md#report-analyses): the tables trac report writes after its leaderboard, each
  // sortable and downloadable with its note; one the runs cannot fill says why instead.
  function analysesPanel(panel) {
    const docs = docHref("docs/method.md#report-analyses");
    panel.append(
      h("h2", null, "The paper's analyses"),
      h(
        "p",
        { class: "note" },
        "Ablations, the consensus blind spot, transfer, label efficiency and decoding symmetry, as trac report writes them (",
        docs ? h("a", { href: docs, target: "_blank", rel: "noopener", text: "what each one measures" }) : "docs/method.md#report-analyses",
        "). Each table's note says which pairs it covers.",
      ),
      ...DATA.analyses.map((table) =>
        h(
          "section",
          { class: "analysis", id: `analysis-${table.name}`, "aria-labelledby": `analysis-${table.name}-title` },
          h("h3", { id: `analysis-${table.name}-title`, text: table.title }),
          table.rows.length ? reportTable(table) : h("p", { class: "note", text: table.note }),
        ),
      ),
    );
  }

  // --------------------------------------------------------------------------------------------- figures tab

  // The charts take their colours from the page's style, so they follow a dark colour scheme; they are drawn again
  // when the scheme changes.
  const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  const darkScheme = window.matchMedia("(prefers-color-scheme: dark)");
  function axis(props = {}) {
    return { stroke: css("--ink"), ...props, grid: { stroke: css("--line"), width: 1, ...(props.grid || {}) }, ticks: { stroke: css("--line"), width: 1 } };
  }
  const palette = () =>
    darkScheme.matches
      ? { curves: ["#79b0f2", "#ff8a80", "#6fd08a", "#d2a8ff", "#e3b341", "#f778ba", "#39c5cf", "#c9cb48"], correct: "#6fd08a", wrong: "#ff8a80" }
      : { curves: ["#1f5fa8", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"], correct: "#2a7a3b", wrong: "#c0392b" };
  const translucent = (colour, alpha) => colour + Math.round(alpha * 255).toString(16).padStart(2, "0");

  function chartWidth(node) {
    return Math.max(260, Math.min(720, node.clientWidth || 600));
  }

  function diagonal(u) {
    const ctx = u.ctx;
    ctx.save();
    ctx.strokeStyle = css("--muted");
    ctx.setLineDash([5, 5]);
    ctx.beginPath();
    ctx.moveTo(u.valToPos(0, "x", true), u.valToPos(0, "y", true));
    ctx.lineTo(u.valToPos(1, "x", true), u.valToPos(1, "y", true));
    ctx.stroke();
    ctx.restore();
  }

  // A chart drawn again is destroyed first (uPlot holds listeners and a canvas); each figure drops only its own.
  function dropChart(name) {
    report.charts[name]?.destroy();
    delete report.charts[name];
  }

  function drawFigures(pairIndex, method, overlay, { reliabilityBox, riskBox, histogramBox }) {
    for (const name of ["reliability", "risk", "histogram"]) dropChart(name);
    const figures = DATA.figures[pairIndex];
    const bins = figures.reliability[method];
    reliabilityBox.replaceChildren();
    if (bins) {
      reliabilityBox.dataset.points = String(bins.confidence.length);
      reliabilityBox.setAttribute(
        "aria-label",
        `Reliability diagram of ${methodLabel(method)} on ${PAIRS[pairIndex].name}: ECE ${fmt(bins.ece)}; per bin, mean P(correct) → accuracy (questions): ` +
          bins.confidence.map((confidence, bin) => `${fmt(confidence)} → ${fmt(bins.accuracy[bin])} (${bins.count[bin]})`).join("; "),
      );
      report.charts.reliability = new uPlot(
        {
          title: `Reliability: ${methodLabel(method)}, ECE ${fmt(bins.ece)}`,
          width: chartWidth(reliabilityBox),
          height: 320,
          scales: { x: { time: false, range: [0, 1] }, y: { range: [0, 1] }, count: { range: (u, min, max) => [0, Math.max(1, max) * 1.15] } },
          axes: [
            axis({ label: "mean P(correct) of the bin" }),
            axis({ label: "accuracy of the bin" }),
            axis({ side: 1, scale: "count", label: "questions", grid: { show: false } }),
          ],
          series: [
            { label: "mean P(correct)", value: hovered },
            { label: "accuracy", stroke: palette().curves[1], width: 2, points: { show: true, size: 7 }, value: hovered },
            { label: "questions", scale: "count", value: (u, v) => (missing(v) ? MISSING : String(v)), stroke: css("--muted"), fill: translucent("#8c96a0", 0.3), paths: uPlot.paths.bars({ size: [0.5, 24] }), points: { show: false } },
          ],
          hooks: { draw: [diagonal] },
        },
        [bins.confidence, bins.accuracy, bins.count],
        reliabilityBox,
      );
    } else reliabilityBox.append(h("p", { class: "note", text: `${methodLabel(method)}: no probability of correctness on this pair.` }));
    drawRisk(pairIndex, method, overlay, riskBox);
    drawHistogram(pairIndex, method, histogramBox);
  }

  // A risk–coverage chart in `box`: `data` is [coverage, one curve per name of `names`, the oracle, random]; the first
  // curve drawn thick, the oracle and random dashed.
  function riskChart(box, title, [xLabel, yLabel], names, data) {
    const colours = palette().curves;
    return new uPlot(
      {
        title,
        width: chartWidth(box),
        height: 360,
        scales: { x: { time: false, range: [0, 1] }, y: { range: (u, min, max) => [0, Math.max(0.05, max)] } },
        axes: [axis({ label: xLabel }), axis({ label: yLabel })],
        series: [
          { label: "coverage", value: hovered },
          ...names.map((label, i) => ({ label, stroke: colours[i % colours.length], width: i ? 1.5 : 2.5, value: hovered })),
          { label: "oracle", stroke: css("--ink"), width: 1.5, dash: [6, 4], value: hovered },
          { label: "random", stroke: css("--muted"), width: 1.5, dash: [2, 3], value: hovered },
        ],
      },
      data,
      box,
    );
  }

  // The risk–coverage curves of the chosen method and of each overlaid one (a legend names them, with their AURC),
  // the oracle's (every correct answer first) and a random order's (the error rate at every coverage).
  function drawRisk(pairIndex, method, overlay, riskBox) {
    const figures = DATA.figures[pairIndex];
    const risk = figures.risk[method];
    riskBox.replaceChildren();
    if (!risk) {
      riskBox.append(h("p", { class: "note", text: `${methodLabel(method)}: no defined score on this pair.` }));
      return;
    }
    const n = risk.length;
    riskBox.dataset.points = String(n);
    const coverage = risk.map((_, k) => (k + 1) / n);
    const aurcOf = (name) => PAIRS[pairIndex].metrics.aurc[name];
    const methods = [method, ...overlay.filter((name) => name !== method && figures.risk[name])];
    const at = (share) => fmt(risk[Math.max(0, Math.ceil(share * n) - 1)]);
    const curves = methods.map((name) => `${methodLabel(name)} (AURC ${fmt(aurcOf(name))})`);
    riskBox.setAttribute(
      "aria-label",
      `Risk–coverage curve of ${methodLabel(method)} on ${PAIRS[pairIndex].name}: AURC ${fmt(aurcOf(method))}; risk ${at(0.1)} at 10 % coverage, ` +
        `${at(0.5)} at 50 %, ${at(1)} at 100 % (${n} questions). Curves: ${curves.join(", ")}, ` +
        `oracle (AURC ${fmt(figures.oracle_aurc)}), random (risk ${fmt(figures.random)} at every coverage).`,
    );
    report.charts.risk = riskChart(
      riskBox,
      `Risk–coverage: ${methodLabel(method)}, AURC ${fmt(aurcOf(method))}`,
      ["coverage (share of answers kept, most confident first)", "risk (error rate of the kept answers)"],
      methods.map(methodLabel),
      [coverage, ...methods.map((name) => figures.risk[name]), figures.oracle, coverage.map(() => figures.random)],
    );
    report.charts.risk.curves = [...methods, "oracle", "random"];
  }

  // How the method's probability of correctness falls over the correct and over the wrong answers (equal-width bins).
  function drawHistogram(pairIndex, method, histogramBox) {
    const figures = DATA.figures[pairIndex];
    const counts = figures.histogram[method];
    histogramBox.replaceChildren();
    if (!counts) {
      histogramBox.append(h("p", { class: "note", text: `${methodLabel(method)}: no probability of correctness on this pair.` }));
      return;
    }
    const edges = figures.edges;
    const centres = edges.slice(1).map((edge, i) => (edge + edges[i]) / 2);
    const bins = centres.map((_, i) => `${edges[i].toFixed(2)}–${edges[i + 1].toFixed(2)}: ${counts.correct[i]} / ${counts.wrong[i]}`);
    histogramBox.setAttribute(
      "aria-label",
      `Histogram of the probability of correctness of ${methodLabel(method)} on ${PAIRS[pairIndex].name}, correct / wrong answers per bin: ${bins.join("; ")}.`,
    );
    const width = 1 / centres.length;
    const colours = palette();
    report.charts.histogram = new uPlot(
      {
        title: `P(correct) of ${methodLabel(method)}: correct vs wrong answers`,
        width: chartWidth(histogramBox),
        height: 320,
        scales: { x: { time: false, range: [0, 1] }, y: { range: (u, min, max) => [0, Math.max(1, max) * 1.1] } },
        axes: [axis({ label: "P(correct)" }), axis({ label: "answers" })],
        series: [
          { label: "P(correct)", value: (u, v) => (missing(v) ? MISSING : `${(v - width / 2).toFixed(2)}–${(v + width / 2).toFixed(2)}`) },
          { label: "correct", stroke: colours.correct, fill: translucent(colours.correct, 0.35), paths: uPlot.paths.bars({ size: [0.45, 40], align: -1 }), points: { show: false } },
          { label: "wrong", stroke: colours.wrong, fill: translucent(colours.wrong, 0.35), paths: uPlot.paths.bars({ size: [0.45, 40], align: 1 }), points: { show: false } },
        ],
      },
      [centres, counts.correct, counts.wrong],
      histogramBox,
    );
  }

  // Over all pairs: each pair's risk–coverage curve on the common coverage grid, averaged over the pairs
  // (DATA.pooled, the points of risk_coverage.png), for the method and the methods chosen beside it, with the macro
  // oracle and random references; a method some pairs lack says over how many it averages.
  function drawPooledRisk(method, overlay, box) {
    const pooled = DATA.pooled;
    dropChart("pooledRisk");
    box.replaceChildren();
    const methods = [method, ...overlay.filter((name) => name !== method)].filter((name) => pooled.risk[name]);
    if (!methods.length) {
      box.append(h("p", { class: "note", text: `${methodLabel(method)}: no defined score on any pair.` }));
      return;
    }
    const name = (m) => methodLabel(m) + (pooled.pairs[m] < PAIRS.length ? ` (${pooled.pairs[m]} of ${PAIRS.length} pairs)` : "");
    const aurc = (m) => (DATA.macro.aurc[m] ? fmt(DATA.macro.aurc[m].value) : MISSING);
    box.dataset.curves = methods.join(",");
    box.setAttribute(
      "aria-label",
      `Macro risk–coverage over ${PAIRS.length} pair(s): ` +
        methods.map((m) => `${name(m)}, macro AURC ${aurc(m)}, risk ${fmt(pooled.risk[m][pooled.risk[m].length - 1])} at full coverage`).join("; ") +
        `; oracle and random (risk ${fmt(pooled.random)}) averaged over the same pairs.`,
    );
    report.charts.pooledRisk = riskChart(
      box,
      `Risk–coverage over all ${PAIRS.length} pair(s) (macro): ${methodLabel(method)}, AURC ${aurc(method)}`,
      ["coverage (share of each pair's answers kept)", "risk, mean over pairs"],
      methods.map(name),
      [pooled.grid, ...methods.map((m) => pooled.risk[m]), pooled.oracle, pooled.grid.map(() => pooled.random)],
    );
  }

  // Cost against quality: each leaderboard method at its relative latency (generations per question, log scale;
  // DATA.cost) and its macro of a headline metric with the report's interval; the chosen method and the methods
  // beside it are labelled, every point says its numbers and a click makes it the chosen method. The table under it
  // lists the same points, cheapest first (a click or Enter on a row chooses its method too: points of one cost
  // overlap, and the rows are what a keyboard reaches).
  function drawCostQuality(metric, method, overlay, box, choose) {
    const info = DATA.metrics.find((entry) => entry.name === metric);
    const shown = LEADERBOARD.filter((m) => DATA.cost[m] && !missing(DATA.cost[m].relative) && DATA.macro[metric][m] && !missing(DATA.macro[metric][m].value));
    box.replaceChildren();
    if (!shown.length) {
      box.append(h("p", { class: "note", text: "No method has both a relative latency and a macro value (runs without timings)." }));
      return;
    }
    const [width, height, left, right, top, bottom] = [560, 340, 52, 16, 14, 40];
    const costs = shown.map((m) => DATA.cost[m].relative);
    const entries = shown.map((m) => DATA.macro[metric][m]);
    const [lo, hi] = domainOf(entries);
    const [cLo, cHi] = [Math.log2(Math.min(...costs)) - 0.25, Math.log2(Math.max(...costs)) + 0.6];
    const x = (cost) => left + ((Math.log2(cost) - cLo) / (cHi - cLo || 1)) * (width - left - right);
    const y = (value) => height - bottom - ((value - lo) / (hi - lo || 1)) * (height - top - bottom);
    const labelled = new Set([method, ...overlay]);
    const ticks = [];
    for (let power = Math.ceil(cLo); power <= Math.floor(cHi); power++) {
      const at = x(2 ** power);
      ticks.push(svg("line", { x1: at, x2: at, y1: top, y2: height - bottom, class: "grid" }), svg("text", { x: at, y: height - bottom + 14, "text-anchor": "middle" }, `${2 ** power}×`));
    }
    for (let i = 0; i <= 4; i++) {
      const value = lo + ((hi - lo) * i) / 4;
      ticks.push(svg("line", { x1: left, x2: width - right, y1: y(value), y2: y(value), class: "grid" }), svg("text", { x: left - 4, y: y(value) + 4, "text-anchor": "end" }, value.toFixed(3)));
    }
    const points = shown.map((m) => {
      const entry = DATA.macro[metric][m];
      const [px, py] = [x(DATA.cost[m].relative), y(entry.value)];
      const interval = entry.interval && !missing(entry.interval[0]) ? entry.interval : null;
      const text = `${methodLabel(m)}: ${fmt(DATA.cost[m].relative)}× a generation, macro ${info.label} ${fmt(entry.value)}` + (interval ? ` [${fmt(interval[0])}, ${fmt(interval[1])}]` : "");
      return svg(
        "g",
        { class: `cost-point${m === method ? " chosen" : ""}`, "data-method": m, "aria-label": text },
        svg("title", {}, text),
        ...(interval ? [svg("line", { x1: px, x2: px, y1: y(interval[0]), y2: y(interval[1]), class: "range" })] : []),
        svg("circle", { cx: px, cy: py, r: m === method ? 5 : 3.5 }),
        ...(labelled.has(m) ? [svg("text", px > width * 0.6 ? { x: px - 7, y: py - 5, "text-anchor": "end" } : { x: px + 7, y: py - 5 }, methodLabel(m))] : []),
      );
    });
    const figure = svg(
      "svg",
      { id: "cost-quality-chart", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": `Relative latency (log scale) against macro ${info.label} of ${shown.length} methods over ${PAIRS.length} pair(s)` },
      ...ticks,
      svg("rect", { x: left, y: top, width: width - left - right, height: height - top - bottom, class: "frame" }),
      svg("text", { x: (left + width - right) / 2, y: height - 6, "text-anchor": "middle" }, "relative latency (generations per question, log scale)"),
      svg("text", { x: 12, y: (top + height - bottom) / 2, "text-anchor": "middle", transform: `rotate(-90 12 ${(top + height - bottom) / 2})` }, `macro ${info.label}`),
      ...points,
    );
    figure.addEventListener("click", (event) => {
      const point = event.target.closest ? event.target.closest(".cost-point") : null;
      if (point) choose(point.dataset.method);
    });
    const better = info.higher ? -1 : 1;
    const rows = [...shown].sort((a, b) => DATA.cost[a].relative - DATA.cost[b].relative || better * (DATA.macro[metric][b].value - DATA.macro[metric][a].value));
    const table = h(
      "table",
      { id: "cost-quality-table" },
      h("caption", { class: "note", text: `Cheapest first: relative latency, measured latency (where the runs stored arrival times) and macro ${info.label} [95 % interval]` }),
      h("thead", null, h("tr", null, ...["method", "relative latency", "measured latency", `macro ${info.label}`].map((text, i) => h("th", { class: i ? "num" : null, scope: "col", text })))),
      h(
        "tbody",
        null,
        ...rows.map((m) => {
          const entry = DATA.macro[metric][m];
          const interval = entry.interval && !missing(entry.interval[0]) ? ` [${fmt(entry.interval[0])}, ${fmt(entry.interval[1])}]` : "";
          return h(
            "tr",
            { tabindex: 0, dataset: { method: m }, onclick: () => choose(m), onkeydown: (event) => event.key === "Enter" && choose(m) },
            h("th", { scope: "row", text: methodLabel(m) }),
            h("td", { class: "num", dataset: { value: String(DATA.cost[m].relative) }, text: `${fmt(DATA.cost[m].relative)}×` }),
            h("td", { class: "num", text: missing(DATA.cost[m].measured) ? MISSING : `${fmt(DATA.cost[m].measured)}×` }),
            h("td", { class: "num", dataset: { value: String(entry.value) }, text: fmt(entry.value) + interval }),
          );
        }),
      ),
    );
    box.replaceChildren(figure, h("div", { class: "table-wrap" }, table));
  }

  // Two methods, one question: each of the pair's questions as a point at its percentile rank under the two methods'
  // scores (0: least confident, 1: most; ties share their mean rank; a question either method leaves unscored is left
  // out), coloured correct / wrong, a click opening it; beside it the DISAGREE_ROWS questions the two rank furthest
  // apart.
  const DISAGREE_ROWS = 10;
  function percentileRanks(scores) {
    const defined = scores.map((value, question) => [value, question]).filter(([value]) => !missing(value)).sort((a, b) => a[0] - b[0]);
    const ranks = scores.map(() => null);
    for (let start = 0, end = 0; start < defined.length; start = end) {
      while (end < defined.length && defined[end][0] === defined[start][0]) end++;
      for (let i = start; i < end; i++) ranks[defined[i][1]] = (start + end - 1) / 2 / Math.max(1, defined.length - 1);
    }
    return ranks;
  }
  function openQuestion(pairIndex, question) {
    route.open = `${pairIndex}:${question}`;
    openTab("questions");
    if (report.questions) report.questions.load(route);
  }
  function drawDisagreement(pairIndex, method, other, box) {
    const data = DATA.questions[pairIndex];
    const [mine, theirs] = [method, other].map((name) => percentileRanks(data.scores[name] || []));
    const shown = data.doc.map((_, question) => question).filter((question) => !missing(mine[question]) && !missing(theirs[question]));
    const size = 300;
    const pad = 30;
    const at = (rank) => pad + rank * (size - 2 * pad);
    const [x, y] = [methodLabel(method), methodLabel(other)];
    const correctOf = (question) => data.correct[question] === 1;
    const points = shown.map((question) =>
      svg(
        "circle",
        { cx: at(mine[question]), cy: size - at(theirs[question]), r: 3.5, class: correctOf(question) ? "point ok" : "point no", "data-question": question },
        svg("title", {}, `document ${data.doc[question]} (${correctOf(question) ? "correct" : "wrong"}): ${x} rank ${fmt(mine[question])}, ${y} rank ${fmt(theirs[question])}`),
      ),
    );
    const scatter = svg(
      "svg",
      { id: "disagreement-scatter", width: size, height: size, viewBox: `0 0 ${size} ${size}`, role: "img", "aria-label": `${shown.length} questions of ${PAIRS[pairIndex].name} at their percentile rank under ${x} (across) and ${y} (up); a click opens one` },
      svg("rect", { x: pad, y: pad, width: size - 2 * pad, height: size - 2 * pad, class: "frame" }),
      svg("line", { x1: at(0), y1: size - at(0), x2: at(1), y2: size - at(1), class: "diagonal" }),
      svg("text", { x: size / 2, y: size - 6, "text-anchor": "middle" }, `${x} (rank)`),
      svg("text", { x: 12, y: size / 2, "text-anchor": "middle", transform: `rotate(-90 12 ${size / 2})` }, `${y} (rank)`),
      ...points,
    );
    scatter.addEventListener("click", (event) => {
      const question = event.target.dataset ? event.target.dataset.question : undefined;
      if (question !== undefined) openQuestion(pairIndex, Number(question));
    });
    const furthest = shown
      .map((question) => ({ question, difference: mine[question] - theirs[question] }))
      .sort((a, b) => Math.abs(b.difference) - Math.abs(a.difference) || a.question - b.question)
      .slice(0, DISAGREE_ROWS);
    const score = (name, question) => fmtScore(data.scores[name][question]);
    const list = h(
      "table",
      { id: "disagree-list" },
      h("caption", { class: "note", text: `Where they disagree: the ${furthest.length} questions ${x} and ${y} rank furthest apart (rank: 0 least, 1 most confident)` }),
      h("thead", null, h("tr", null, ...["document", "correct", `${x} score`, `${y} score`, `${x} rank`, `${y} rank`, "difference"].map((text, i) => h("th", { class: i > 1 ? "num" : null, scope: "col", text })))),
      h(
        "tbody",
        null,
        ...furthest.map(({ question, difference }) => {
          return h(
            "tr",
            { tabindex: 0, dataset: { question: String(question) }, onclick: () => openQuestion(pairIndex, question), onkeydown: (event) => event.key === "Enter" && openQuestion(pairIndex, question) },
            h("td", { text: data.doc[question] }),
            h("td", { class: correctOf(question) ? "ok" : "no", text: correctOf(question) ? "✓" : "✗" }),
            h("td", { class: "num", text: score(method, question) }),
            h("td", { class: "num", text: score(other, question) }),
            h("td", { class: "num", text: fmt(mine[question]) }),
            h("td", { class: "num", text: fmt(theirs[question]) }),
            h("td", { class: "num difference", dataset: { value: String(difference) }, text: signed(difference) }),
          );
        }),
      ),
    );
    box.replaceChildren(scatter, h("div", { class: "table-wrap" }, list));
  }

  // The figures' state lives in the link: fpair (the pair's position), fmethod and overlay (the methods beside it,
  // comma-separated; "none" for none; absent: SC@K, P(True) and mean log-probability), fother (the method the
  // scatter sets against fmethod), fcost (the cost–quality figure's metric; absent: AUROC).
  function figuresPanel(panel) {
    const defaultMethod = LEADERBOARD.includes("trac") ? "trac" : LEADERBOARD[0];
    const defaultOverlay = ["sc_modal", "p_true", "mean_logprob"].filter((name) => LEADERBOARD.includes(name));
    let pairIndex = 0;
    let method = defaultMethod;
    let overlay = defaultOverlay;
    const reliabilityBox = h("div", { id: "reliability-chart", class: "chart", role: "figure" });
    const riskBox = h("div", { id: "risk-chart", class: "chart", role: "figure" });
    const histogramBox = h("div", { id: "histogram-chart", class: "chart", role: "figure" });
    const overlayChoice = h(
      "select",
      { id: "figure-overlay", multiple: true, size: 4, onchange: (event) => change(() => (overlay = [...event.target.selectedOptions].map((option) => option.value))) },
      ...LEADERBOARD.map((name) => h("option", { value: name, text: methodLabel(name) })),
    );
    const pairChoice = choice("figure-pair", PAIRS.map((pair, index) => ({ value: String(index), label: pairName(pair) })), "0", (value) => change(() => (pairIndex = Number(value))));
    const methodChoice = choice("figure-method", LEADERBOARD.map((name) => ({ value: name, label: methodLabel(name) })), method, (value) => change(() => (method = value)));
    const disagreementBox = h("div", { id: "disagreement", class: "disagreement" });
    const pooledRiskBox = h("div", { id: "pooled-risk-chart", class: "chart", role: "figure" });
    const costBox = h("div", { id: "cost-quality", class: "cost-quality" });
    const headline = DATA.metrics.filter((entry) => DATA.headline_metrics.includes(entry.name));
    let costMetric = "auroc";
    const costChoice = choice("cost-metric", headline.map((entry) => ({ value: entry.name, label: entry.label })), costMetric, (value) => change(() => (costMetric = value)));
    const otherDefault = () => (method !== "sc_modal" && LEADERBOARD.includes("sc_modal") ? "sc_modal" : LEADERBOARD.find((name) => name !== method));
    let other = otherDefault();
    const otherChoice = choice("scatter-method", LEADERBOARD.map((name) => ({ value: name, label: methodLabel(name) })), other, (value) => change(() => (other = value)));
    let pooledDrawnFor = null; // the figures over all pairs do not depend on the pair: drawn again only when theirs change
    const redraw = () => {
      drawFigures(pairIndex, method, overlay, { reliabilityBox, riskBox, histogramBox });
      drawDisagreement(pairIndex, method, other, disagreementBox);
      const pooledState = JSON.stringify([method, overlay, costMetric, darkScheme.matches]);
      if (pooledState === pooledDrawnFor) return;
      pooledDrawnFor = pooledState;
      drawPooledRisk(method, overlay, pooledRiskBox);
      drawCostQuality(costMetric, method, overlay, costBox, (chosen) => change(() => (methodChoice.value = method = chosen)));
    };
    const sameOverlay = (names) => names.length === defaultOverlay.length && names.every((name, i) => name === defaultOverlay[i]);
    function change(update) {
      update();
      if (other === method) otherChoice.value = other = otherDefault();
      Object.assign(route, { fpair: pairIndex ? String(pairIndex) : "", fmethod: method === defaultMethod ? "" : method, overlay: sameOverlay(overlay) ? "" : overlay.join(",") || "none", fother: other === otherDefault() ? "" : other, fcost: costMetric === "auroc" ? "" : costMetric });
      writeRoute(false);
      redraw();
    }
    function load(route) {
      const found = /^\d+$/.test(route.fpair || "") ? Number(route.fpair) : 0;
      pairIndex = found < PAIRS.length ? found : 0;
      method = LEADERBOARD.includes(route.fmethod) ? route.fmethod : defaultMethod;
      overlay = !route.overlay ? defaultOverlay : route.overlay.split(",").filter((name) => LEADERBOARD.includes(name));
      pairChoice.value = String(pairIndex);
      methodChoice.value = method;
      for (const option of overlayChoice.options) option.selected = overlay.includes(option.value);
      other = LEADERBOARD.includes(route.fother) ? route.fother : otherDefault();
      otherChoice.value = other;
      costMetric = headline.some((entry) => entry.name === route.fcost) ? route.fcost : "auroc";
      costChoice.value = costMetric;
      redraw();
    }
    darkScheme.addEventListener("change", redraw);
    report.figures = { load };
    panel.append(
      h(
        "div",
        { class: "controls" },
        labelled("pair", pairChoice),
        labelled("method", methodChoice),
        labelled("risk–coverage also of", overlayChoice),
      ),
      h("div", { class: "chart-row" }, reliabilityBox, riskBox, histogramBox),
      h("h3", null, `Over all ${PAIRS.length} pair(s)`),
      h("div", { class: "chart-row" }, pooledRiskBox),
      h("h3", null, "Cost against quality"),
      h("div", { class: "controls" }, labelled("quality", costChoice)),
      costBox,
      h("h3", null, "Two methods, one question"),
      h("div", { class: "controls" }, labelled("the method above against", otherChoice)),
      disagreementBox,
      h(
        "p",
        { class: "note" },
        `Reliability: the pair's questions in ${DATA.settings.ece_bins} equal-mass bins of the method's probability of ` +
          `correctness (heads: out-of-fold; baselines: ${DATA.settings.calibration_map} calibration map), accuracy ` +
          "against mean probability, the bin's questions as bars. Risk–coverage: the expected error rate of the k most " +
          "confident answers at coverage k/N, one point per question, for the method and the methods chosen beside it, with " +
          "the oracle (every correct answer first) and a random order (the error rate at every coverage) for reference. " +
          "Histogram: the method's probability of correctness over the correct and over the wrong answers, in bins of " +
          "0.05. Over all pairs: each pair's risk–coverage curve on a common grid of coverages, averaged over the pairs " +
          "(as the leaderboard averages each pair's AURC). Cost against quality: each method's relative latency (generations " +
          "per question, from the engine seconds the records store) against its macro value, with the report's interval; " +
          "a click on a point makes it the method above. Hover a chart for its values.",
      ),
    );
    load(route);
  }

  // ------------------------------------------------------------------------------------------- traces on demand

  // The traces follow the script in the file, so the page is drawn while the browser still reads them; a trace is
  // read once the whole document has been parsed.
  const documentParsed = new Promise((resolve) =>
    document.readyState === "loading" ? document.addEventListener("DOMContentLoaded", resolve, { once: true }) : resolve(),
  );
  const traceStore = new Map();
  function traceLines(pairIndex) {
    if (!traceStore.has(pairIndex)) {
      const node = document.getElementById(`trac-traces-${pairIndex}`);
      traceStore.set(pairIndex, { lines: node ? node.textContent.split("\n") : [], pieces: null });
    }
    return traceStore.get(pairIndex);
  }

  // One trace's gzip member (RFC 1952) inflated here (RFC 1951, after zlib's puff.c): the browser's
  // DecompressionStream costs over a millisecond a call, which a search through 1,500 traces paid 1,500 times.
  const LENGTH_BASE = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
  const LENGTH_EXTRA = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
  const DISTANCE_BASE = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577];
  const DISTANCE_EXTRA = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];
  const CODE_LENGTH_ORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];
  // A canonical Huffman code from its code lengths: how many codes of each length, and the symbols in code order.
  function huffman(lengths) {
    const counts = new Uint16Array(16);
    for (const length of lengths) counts[length]++;
    counts[0] = 0;
    const offsets = new Uint16Array(16);
    for (let length = 1; length < 16; length++) offsets[length] = offsets[length - 1] + counts[length - 1];
    const symbols = new Uint16Array(lengths.length);
    lengths.forEach((length, symbol) => {
      if (length) symbols[offsets[length]++] = symbol;
    });
    return { counts, symbols };
  }
  const FIXED_CODES = [
    huffman(Uint8Array.from({ length: 288 }, (_, symbol) => (symbol < 144 ? 8 : symbol < 256 ? 9 : symbol < 280 ? 7 : 8))),
    huffman(new Uint8Array(30).fill(5)),
  ];
  function gunzip(input) {
    const flags = input[3];
    let at = 10;
    if (input[0] !== 0x1f || input[1] !== 0x8b || input[2] !== 8) throw new Error("not a gzip member");
    if (flags & 4) at += 2 + (input[at] | (input[at + 1] << 8)); // extra field
    if (flags & 8) while (input[at++]); // file name
    if (flags & 16) while (input[at++]); // comment
    if (flags & 2) at += 2; // header CRC
    let bitBuffer = 0;
    let bitCount = 0;
    let out = new Uint8Array(Math.max(1024, input.length * 4));
    let size = 0;
    const bits = (count) => {
      while (bitCount < count) {
        if (at >= input.length) throw new Error("gzip data cut short");
        bitBuffer |= input[at++] << bitCount;
        bitCount += 8;
      }
      const value = bitBuffer & ((1 << count) - 1);
      bitBuffer >>>= count;
      bitCount -= count;
      return value;
    };
    const room = (count) => {
      if (size + count <= out.length) return;
      const larger = new Uint8Array(Math.max(2 * out.length, size + count));
      larger.set(out.subarray(0, size));
      out = larger;
    };
    const decode = ({ counts, symbols }) => {
      let code = 0;
      let first = 0;
      let index = 0;
      for (let length = 1; length < 16; length++) {
        code |= bits(1);
        const count = counts[length];
        if (code - count < first) return symbols[index + code - first];
        index += count;
        first = (first + count) << 1;
        code <<= 1;
      }
      throw new Error("bad Huffman code");
    };
    const dynamicCodes = () => {
      const literals = bits(5) + 257;
      const distances = bits(5) + 1;
      const codeLengths = new Uint8Array(19);
      for (let i = 0, n = bits(4) + 4; i < n; i++) codeLengths[CODE_LENGTH_ORDER[i]] = bits(3);
      const lengthCode = huffman(codeLengths);
      const lengths = new Uint8Array(literals + distances);
      for (let i = 0; i < lengths.length; ) {
        const symbol = decode(lengthCode);
        if (symbol < 16) {
          lengths[i++] = symbol;
          continue;
        }
        const [value, repeat] = symbol === 16 ? [lengths[i - 1], 3 + bits(2)] : symbol === 17 ? [0, 3 + bits(3)] : [0, 11 + bits(7)];
        lengths.fill(value, i, i + repeat);
        i += repeat;
      }
      return [huffman(lengths.subarray(0, literals)), huffman(lengths.subarray(literals))];
    };
    for (let last = 0; !last; ) {
      last = bits(1);
      const type = bits(2);
      if (type === 0) {
        bitBuffer = bitCount = 0; // a stored block starts at the next byte
        const length = input[at] | (input[at + 1] << 8);
        room(length);
        out.set(input.subarray(at + 4, at + 4 + length), size);
        size += length;
        at += 4 + length;
        continue;
      }
      if (type === 3) throw new Error("bad block type");
      const [literal, distance] = type === 1 ? FIXED_CODES : dynamicCodes();
      for (let symbol = decode(literal); symbol !== 256; symbol = decode(literal)) {
        if (symbol < 256) {
          room(1);
          out[size++] = symbol;
          continue;
        }
        const length = LENGTH_BASE[symbol - 257] + bits(LENGTH_EXTRA[symbol - 257]);
        const code = decode(distance);
        const back = DISTANCE_BASE[code] + bits(DISTANCE_EXTRA[code]);
        room(length);
        for (let end = size + length; size < end; size++) out[size] = out[size - back];
      }
    }
    return out.subarray(0, size);
  }

  function inflate(base64) {
    const binary = atob(base64);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return gunzip(bytes);
  }

  async function loadTrace(pairIndex, question) {
    await documentParsed;
    const store = traceLines(pairIndex);
    const line = store.lines[question + 1];
    if (!line) return null;
    const bytes = inflate(line);
    const length = new DataView(bytes.buffer, bytes.byteOffset).getUint32(0, true);
    const trace = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + length)));
    if (PAIRS[pairIndex].traces.mode !== "tokens") return trace;
    store.pieces ??= JSON.parse(new TextDecoder().decode(inflate(store.lines[0]))); // the pair's pieces, inflated once
    let offset = 4 + length;
    const indexBytes = bytes.slice(offset, offset + trace.n * trace.index_bytes);
    offset += trace.n * trace.index_bytes;
    trace.indices = trace.index_bytes === 2 ? new Uint16Array(indexBytes.buffer) : new Uint32Array(indexBytes.buffer);
    trace.surprisal = bytes.slice(offset, offset + trace.n);
    trace.entropy = bytes.slice(offset + trace.n, offset + 2 * trace.n);
    trace.pieces = store.pieces;
    return trace;
  }

  const SHADES = 9;
  // The value of the darkest shade: 3 nats of −log p, or the top-k entropy's maximum ln k.
  const fullShade = (trace, by) => (by === "entropy" ? Math.log(trace.top_k) : 3);
  // The legend of a shading: each shade's range of values in nats (shade i: values rounding to i / 9 of the darkest).
  function shadeLegend(trace, by) {
    const full = fullShade(trace, by);
    const edge = (shade) => ((shade + 0.5) / SHADES) * full;
    const swatches = Array.from({ length: SHADES + 1 }, (_, shade) =>
      h("span", { class: shade ? `s${shade}` : "", title: shade === 0 ? `< ${edge(0).toFixed(2)} nats` : shade === SHADES ? `≥ ${edge(SHADES - 1).toFixed(2)} nats` : `${edge(shade - 1).toFixed(2)}–${edge(shade).toFixed(2)} nats` }),
    );
    const top = by === "entropy" ? `${full.toFixed(2)} nats (ln ${trace.top_k}, the maximum)` : `≥ ${full.toFixed(2)} nats`;
    return [by === "entropy" ? "entropy 0" : "−log p 0", ...swatches, top];
  }
  // Each token's shade (0..SHADES) under a shading.
  function shadesOf(trace, by) {
    const values = by === "entropy" ? trace.entropy : trace.surprisal;
    const step = by === "entropy" ? trace.entropy_step : trace.surprisal_step;
    const full = fullShade(trace, by);
    return Uint8Array.from(values, (value) => Math.min(SHADES, Math.round(((value * step) / full) * SHADES)));
  }
  // A token is "uncertain" from this shade up: two thirds of the darkest (2 nats of −log p).
  const UNCERTAIN = 6;
  // The tail TUP reads (docs/method.md#tail-and-low-confidence-fraction): the last W tokens.
  const tailStart = (trace) => Math.max(0, trace.n - DATA.settings.tail_window);
  // The trace's tokens, each in its shade (shadesOf(trace, by)), the marker and TUP's tail marked.
  function shadedTrace(trace, shades, by) {
    const box = h("div", { class: "trace", dataset: { tokens: String(trace.n), shading: by } });
    const tail = tailStart(trace);
    const fragment = document.createDocumentFragment();
    for (let i = 0; i < trace.n; i++) {
      if (i === trace.marker) fragment.append(h("span", { class: "eot", text: "end of thinking ▸" }));
      const span = document.createElement("span");
      span.textContent = trace.pieces[trace.indices[i]];
      span.dataset.i = String(i);
      if (shades[i] > 0) span.className = `s${shades[i]}`;
      if (i === trace.marker) span.classList.add("marker");
      if (i >= tail) span.classList.add("tail");
      fragment.append(span);
    }
    box.append(fragment);
    return box;
  }

  function plainTrace(trace) {
    const box = h("div", { class: "trace", dataset: { shading: "none" } });
    if (missing(trace.marker)) box.textContent = trace.text;
    else box.append(trace.text.slice(0, trace.marker), h("span", { class: "eot", text: "end of thinking ▸" }), trace.text.slice(trace.marker));
    return box;
  }

  function traceSection(pairIndex, trace) {
    const info = PAIRS[pairIndex].traces;
    const section = h("div", { class: "trace-section" });
    if (!trace || info.mode === "none") {
      section.append(h("p", { class: "note", text: info.note || "No trace stored." }));
      return section;
    }
    const finish = trace.finish === "length" ? " — cut at the generation limit" : "";
    const markerNote = trace.marker_text ? (missing(trace.marker) ? ` end-of-thinking marker ${JSON.stringify(trace.marker_text)} not written` : "") : "";
    section.append(h("p", { class: "note", text: `${trace.n} generated tokens, finish reason ${trace.finish}${finish}.${markerNote}` }));
    if (info.mode !== "tokens") {
      section.append(h("p", { class: "note warning", text: info.note }), plainTrace(trace));
      return section;
    }
    const hover = h("div", { class: "hover-info", role: "status" }, "Hover a token, or focus the trace and step with ← / →, for its values.");
    const holder = h("div");
    const legend = h("span", { class: "legend" });
    const stripBox = h("div", { class: "strip-box" });
    const tail = tailStart(trace);
    const tailMean = trace.surprisal.slice(tail).reduce((sum, value) => sum + value * trace.surprisal_step, 0) / Math.max(1, trace.n - tail);
    let shades = null;
    let box = null;
    let active = -1;
    const describe = (i) => {
      const surprisal = (trace.surprisal[i] * trace.surprisal_step).toFixed(2);
      const entropy = (trace.entropy[i] * trace.entropy_step).toFixed(2);
      return `token ${i} of ${trace.n}: ${JSON.stringify(trace.pieces[trace.indices[i]])}  −log p = ${surprisal}  entropy (top-${trace.top_k}) = ${entropy}` + (i >= tail ? "  (in TUP's tail)" : "");
    };
    // The token the keyboard, the strip and the "uncertain token" buttons move to: marked, scrolled to, its values said.
    const activate = (i) => {
      if (i < 0 || i >= trace.n) return;
      if (active >= 0) box.querySelector(`span[data-i="${active}"]`)?.classList.remove("active");
      active = i;
      const span = box.querySelector(`span[data-i="${i}"]`);
      span.classList.add("active");
      span.scrollIntoView({ block: "nearest" });
      box.dataset.active = String(i);
      hover.textContent = describe(i);
    };
    // The next (previous) uncertain token after (before) the active one.
    const seek = (direction) => {
      for (let i = active + direction; i >= 0 && i < trace.n; i += direction) {
        if (shades[i] >= UNCERTAIN) return activate(i);
      }
      hover.textContent = `No ${direction > 0 ? "later" : "earlier"} token at shade ${UNCERTAIN} of ${SHADES} or darker.`;
    };
    const draw = (by) => {
      legend.replaceChildren(...shadeLegend(trace, by));
      shades = shadesOf(trace, by);
      box = shadedTrace(trace, shades, by);
      Object.assign(box, { tabIndex: 0 });
      box.setAttribute("role", "group");
      box.setAttribute("aria-label", `trace of ${trace.n} tokens: ← / → step through the tokens, n / p the next / previous uncertain one`);
      box.addEventListener("mouseover", (event) => {
        const i = event.target.dataset ? event.target.dataset.i : undefined;
        if (i !== undefined) hover.textContent = describe(Number(i));
      });
      box.addEventListener("click", (event) => event.target.dataset && event.target.dataset.i !== undefined && activate(Number(event.target.dataset.i)));
      box.addEventListener("focus", () => activate(active < 0 ? 0 : active));
      box.addEventListener("keydown", (event) => {
        const moves = { ArrowRight: () => activate(active + 1), ArrowLeft: () => activate(active - 1), Home: () => activate(0), End: () => activate(trace.n - 1), n: () => seek(1), p: () => seek(-1) };
        if (!moves[event.key] || event.altKey || event.ctrlKey || event.metaKey) return;
        event.preventDefault();
        event.stopPropagation(); // the question list's keys (j / k, arrows) stay with the list
        moves[event.key]();
      });
      holder.replaceChildren(box);
      stripBox.replaceChildren(uncertaintyStrip(trace, shades, activate));
      if (active >= 0) activate(active);
    };
    section.append(
      h("div", { class: "controls" }, labelled("shade by", choice(null, [{ value: "surprisal", label: "−log p of the token" }, { value: "entropy", label: `top-${trace.top_k} entropy` }], "surprisal", draw)), legend),
      h(
        "div",
        { class: "controls" },
        h("button", { type: "button", class: "previous-uncertain", text: "◂ previous uncertain token", onclick: () => seek(-1) }),
        h("button", { type: "button", class: "next-uncertain", text: "next uncertain token ▸", onclick: () => seek(1) }),
        h("span", { class: "note", text: `uncertain: shade ${UNCERTAIN} of ${SHADES} or darker. Underlined: TUP's tail, the last ${trace.n - tail} tokens (mean −log p ≈ ${tailMean.toFixed(2)}).` }),
      ),
      stripBox,
      holder,
      hover,
    );
    draw("surprisal");
    return section;
  }

  // The whole trace at a glance: one column per stretch of tokens, as dark as its darkest token; the end-of-thinking
  // marker and TUP's tail drawn on it; a click jumps to the stretch's darkest token.
  function uncertaintyStrip(trace, shades, jump) {
    const width = 600;
    const height = 18;
    const columns = Math.min(width, trace.n);
    const per = trace.n / columns;
    const darkest = new Int32Array(columns);
    for (let column = 0; column < columns; column++) {
      let best = Math.floor(column * per);
      for (let i = best; i < Math.min(trace.n, Math.floor((column + 1) * per)); i++) if (shades[i] > shades[best]) best = i;
      darkest[column] = best;
    }
    const canvas = h("canvas", { class: "strip", width, height, role: "img" });
    const uncertain = shades.reduce((count, shade) => count + (shade >= UNCERTAIN), 0);
    canvas.setAttribute("aria-label", `Uncertainty over the whole trace: ${trace.n} tokens, ${uncertain} of them uncertain (shade ${UNCERTAIN} of ${SHADES} or darker); the last ${trace.n - tailStart(trace)} are TUP's tail.`);
    const ctx = canvas.getContext("2d");
    const shade = css("--shade");
    const x = (i) => (i / trace.n) * width;
    ctx.fillStyle = css("--soft");
    ctx.fillRect(0, 0, width, height);
    darkest.forEach((i, column) => {
      ctx.fillStyle = `rgba(${shade}, ${((shades[i] / SHADES) * 0.9).toFixed(3)})`;
      ctx.fillRect((column / columns) * width, 0, Math.ceil(width / columns), height - 4);
    });
    ctx.fillStyle = css("--accent");
    ctx.fillRect(x(tailStart(trace)), height - 3, width - x(tailStart(trace)), 3);
    if (!missing(trace.marker)) ctx.fillRect(x(trace.marker), 0, 2, height);
    canvas.addEventListener("click", (event) => {
      const rect = canvas.getBoundingClientRect();
      const column = Math.min(columns - 1, Math.max(0, Math.floor(((event.clientX - rect.left) / rect.width) * columns)));
      jump(darkest[column]);
    });
    return canvas;
  }

  // ------------------------------------------------------------------------------------------- one question

  function classRows(answers, classes) {
    const groups = new Map();
    classes.forEach((group, sample) => {
      if (!groups.has(group)) groups.set(group, []);
      groups.get(group).push(sample);
    });
    const largest = Math.max(...[...groups.values()].map((members) => members.length));
    const modal = [...groups.keys()].find((group) => groups.get(group).length === largest);
    return [...groups.entries()].map(([group, members]) =>
      h(
        "tr",
        { dataset: { class: String(group) } },
        h("td", { text: missing(answers[members[0]]) ? "(no answer)" : answers[members[0]] }),
        h("td", { class: "num", text: `${members.length} / ${answers.length}` }),
        h("td", { text: members.map((sample) => `#${sample}`).join(" ") }),
        h("td", null, members.includes(0) ? h("span", { class: "badge", text: "primary" }) : null, group === modal ? h("span", { class: "badge", text: "modal answer" }) : null),
      ),
    );
  }

  // Text to the clipboard (the address of what is shown: the open question, the list's filters; or a question as
  // JSON); where the browser refuses, the text is shown in a box to be copied by hand.
  async function copyText(button, text, done, what) {
    try {
      await navigator.clipboard.writeText(text);
      button.textContent = done;
    } catch (error) {
      button.replaceWith(h("textarea", { class: "copied", readonly: true, rows: 6, cols: 60, "aria-label": what, text }));
    }
  }

  // One question as the page holds it, as JSON: its pair, prompt, answers, label, metadata, every method's score and
  // probability of correctness, and the primary trace's text when it has been read.
  function questionRecord(pairIndex, question, trace) {
    const pair = PAIRS[pairIndex];
    const data = DATA.questions[pairIndex];
    const byMethod = (values) => Object.fromEntries(DATA.methods.filter((method) => values[method.name]).map((method) => [method.name, values[method.name][question]]));
    return {
      model: pair.model,
      task: pair.task,
      decoding: pair.decoding,
      doc_id: data.doc[question],
      prompt: data.prompt[question],
      reference: data.reference[question],
      answer: data.answer[question],
      correct: data.correct[question] === 1,
      probe_answer: data.probe[question],
      probe_agrees: data.agree[question] === null ? null : data.agree[question] === 1,
      majority_correct: data.majority[question] === 1,
      sampled_answers: data.answers[question],
      answer_classes: data.classes[question],
      metadata: data.metadata[question],
      scores: byMethod(data.scores),
      p_correct: byMethod(data.p_correct),
      trace: !trace ? null : trace.indices ? Array.from(trace.indices, (i) => trace.pieces[i]).join("") : trace.text ?? null,
    };
  }

  // A prompt's chat messages ({role, text}), read from the chat template's markers it holds (ChatML's <|im_start|>role
  // … <|im_end|>, Llama 3's <|start_header_id|>role<|end_header_id|> … <|eot_id|>); none when it holds none.
  const CHAT_FORMATS = [
    /<\|im_start\|>([^\n<]*)\n?([\s\S]*?)(?=<\|im_end\|>|<\|im_start\|>|$)/g,
    /<\|start_header_id\|>([^<]*)<\|end_header_id\|>\n*([\s\S]*?)(?=<\|eot_id\|>|<\|start_header_id\|>|$)/g,
  ];
  function chatMessages(prompt) {
    for (const format of CHAT_FORMATS) {
      const messages = [...prompt.matchAll(format)].map((found) => ({ role: found[1].trim(), text: found[2].trim() }));
      if (messages.length) return messages;
    }
    return [];
  }

  // The question as its user wrote it: the prompt's user message(s), or the whole prompt when it holds no chat
  // template, the search's hits marked; the prompt as the model saw it (the template's markers, the other roles' messages)
  // one click away.
  function promptView(prompt, search) {
    if (missing(prompt)) return h("p", { class: "note", text: "Prompt not stored: run lm_eval with --log_samples to keep it." });
    const users = chatMessages(prompt).filter((message) => message.role === "user");
    if (!users.length) return h("pre", { class: "prompt" }, ...marked(prompt, search));
    return h(
      "div",
      null,
      ...users.map((message) => h("pre", { class: "prompt" }, ...marked(message.text, search))),
      h("details", { class: "raw-prompt" }, h("summary", null, "the prompt as the model saw it (chat template)"), h("pre", { class: "raw-prompt" }, ...marked(prompt, search))),
    );
  }

  async function renderQuestion(container, pairIndex, question, offerComparison = true, search = null) {
    const pair = PAIRS[pairIndex];
    const data = DATA.questions[pairIndex];
    const key = `${pairIndex}:${question}`;
    let loadedTrace = null; // what "copy as JSON" adds once the trace is read
    container.dataset.loaded = "";
    const correct = data.correct[question] === 1;
    const agree = data.agree[question];
    const node = h("div", { class: "question", dataset: { key } });
    node.append(
      h("h3", { title: pair.model }, `${modelName(pair.model)} · ${pair.task} · document ${data.doc[question]}`),
      h(
        "p",
        null,
        h("span", { class: `badge ${correct ? "ok" : "no"}`, text: correct ? "correct" : "wrong" }),
        h("span", { class: `badge ${agree === 0 ? "no" : agree === 1 ? "ok" : ""}`, text: agree === 1 ? "probe agrees" : agree === 0 ? "probe disagrees" : "agreement undefined" }),
        pair.decoding ? h("span", { class: "badge", text: pair.decoding }) : null,
        offerComparison && comparable().includes(pair.task)
          ? h("button", { type: "button", class: "compare-button", text: "compare side by side", onclick: () => {
                Object.assign(route, { ctask: pair.task, left: String(pairIndex), right: "", cdis: "", cdoc: data.doc[question] });
                openTab("compare");
                if (report.compare) report.compare.load(route);
              } })
          : null,
        offerComparison ? h("button", { type: "button", class: "copy-link", text: "copy link", onclick: (event) => copyText(event.currentTarget, location.href, "link copied", "link to this question") }) : null,
        h("button", {
          type: "button",
          class: "copy-question",
          text: "copy as JSON",
          onclick: (event) => copyText(event.currentTarget, JSON.stringify(questionRecord(pairIndex, question, loadedTrace), null, 2), "JSON copied", "this question as JSON"),
        }),
      ),
    );
    const metadata = Object.entries(data.metadata[question] || {});
    if (metadata.length) node.append(h("dl", { class: "metadata" }, ...metadata.flatMap(([name, value]) => [h("dt", { text: name }), h("dd", { text: typeof value === "string" ? value : JSON.stringify(value) })])));
    const prompt = data.prompt[question];
    const promptBox = h("div", { class: "prompt-box" }, promptView(prompt, search));
    node.append(h("h4", null, "Question"), promptBox);
    const show = (value) => (missing(value) ? "(no answer)" : value);
    const traceBox = h("div", { class: "trace-box" }, h("p", { class: "note", text: "Loading…" }));
    const probeBox = h("div");
    node.append(
      h("h4", null, "Answers"),
      h(
        "table",
        { class: "answers" },
        h("tbody", null,
          h("tr", null, h("th", { text: "reference" }), h("td", { class: "reference", text: show(data.reference[question]) })),
          h("tr", null, h("th", { text: "primary answer" }), h("td", { class: "primary-answer" }, show(data.answer[question]), " ", h("span", { class: correct ? "ok" : "no", text: correct ? "✓" : "✗" }))),
          h("tr", null, h("th", { text: "probe's re-stated answer" }), h("td", { class: "probe-answer" }, show(data.probe[question]), " ", h("span", { class: agree === 0 ? "no" : "ok", text: agree === 1 ? "agrees" : agree === 0 ? "disagrees" : "" }))),
          h("tr", null, h("th", { text: "majority answer correct" }), h("td", { text: data.majority[question] ? "yes" : "no" })),
        ),
      ),
      h("h4", null, `The ${data.answers[question].length} sampled answers by equivalence class`),
      h("table", { class: "classes" }, h("thead", null, h("tr", null, h("th", { text: "answer" }), h("th", { class: "num", text: "votes" }), h("th", { text: "samples" }), h("th", { text: "marked" }))), h("tbody", null, ...classRows(data.answers[question], data.classes[question]))),
      h("h4", null, "Trace (primary response)"),
      traceBox,
      probeBox,
      h("h4", null, "Every method"),
      h(
        "table",
        { class: "method-scores" },
        h("thead", null, h("tr", null, h("th", { text: "method" }), h("th", { class: "num", text: "score" }), h("th", { class: "num", text: "P(correct)" }), h("th", { text: "top decile" }))),
        h(
          "tbody",
          null,
          ...DATA.methods
            .filter((method) => data.scores[method.name])
            .map((method) =>
              h(
                "tr",
                { dataset: { method: method.name } },
                h("td", null, method.label, help(method)),
                h("td", { class: "num score", text: fmtScore(data.scores[method.name][question]), dataset: { value: String(data.scores[method.name][question]) } }),
                h("td", { class: "num p-correct", text: data.p_correct[method.name] ? fmt(data.p_correct[method.name][question]) : "" }),
                h("td", { text: topDecile(pairIndex, method.name).has(question) ? "yes" : "" }),
              ),
            ),
        ),
      ),
    );
    container.replaceChildren(node);
    const trace = await loadTrace(pairIndex, question);
    loadedTrace = trace;
    if (container.firstChild !== node) return; // another question was opened meanwhile
    traceBox.replaceChildren(traceSection(pairIndex, trace));
    if (trace && trace.probe) {
      probeBox.replaceChildren(
        h("p", { class: "note", text: `Probe: after the trace it appended ${JSON.stringify(trace.probe.appended_text)}; the model continued ${JSON.stringify(trace.probe.text)} (finish reason ${trace.probe.finish_reason}).` }),
      );
    }
    container.dataset.loaded = key;
  }

  // ------------------------------------------------------------------------------------------- questions tab

  const deciles = new Map();
  function topDecile(pairIndex, method) {
    const key = `${pairIndex}:${method}`;
    if (!deciles.has(key)) deciles.set(key, new Set(DATA.questions[pairIndex].top_decile[method] || []));
    return deciles.get(key);
  }

  // What the question column reads of a prompt: its user message(s) (chatMessages), or, where it names none, the whole
  // prompt with the chat template's markers and role names dropped; its lines kept.
  function questionSource(prompt) {
    if (missing(prompt)) return "";
    const users = chatMessages(prompt).filter((message) => message.role === "user");
    return users.length ? users.map((message) => message.text).join("\n") : prompt.replace(/<\|[^|>]*\|>(system|user|assistant)?/g, " ").trim();
  }
  const oneLine = (text) => text.replace(/\s+/g, " ").trim();

  // What the search reads: a text with its lower-cased copy, made once (a plain search compares lower-cased texts, a
  // regular expression reads the text itself).
  const searchable = (text) => ({ text, lower: text.toLowerCase() });
  // What the search box reads of a question: its prompt, reference, answers and probe answer (and, once loaded, its
  // trace).
  const haystacks = new Map();
  function haystack(pairIndex, question) {
    const key = `${pairIndex}:${question}`;
    if (!haystacks.has(key)) {
      const data = DATA.questions[pairIndex];
      const parts = [data.prompt[question], data.reference[question], data.answer[question], data.probe[question], ...data.answers[question]];
      haystacks.set(key, searchable(parts.filter((part) => !missing(part)).join("\n")));
    }
    return haystacks.get(key);
  }
  // Each primary trace's text, for a search in traces: a pair's traces are unpacked once (gunzip), however often the
  // search changes meanwhile.
  const traceTexts = new Map();
  const traceLoads = new Map();
  const traceText = (trace) => (!trace ? "" : trace.indices ? Array.from(trace.indices, (i) => trace.pieces[i]).join("") : trace.text || "");
  function loadTraceTexts(pairIndices) {
    for (const pairIndex of pairIndices) {
      if (traceLoads.has(pairIndex)) continue;
      traceLoads.set(pairIndex, (async () => {
        for (let question = 0; question < DATA.questions[pairIndex].doc.length; question++) {
          traceTexts.set(`${pairIndex}:${question}`, searchable(traceText(await loadTrace(pairIndex, question))));
        }
      })());
    }
    return Promise.all(pairIndices.map((pairIndex) => traceLoads.get(pairIndex)));
  }

  // The search: plain text (case-insensitive), or a regular expression written /like this/ (flags after the last /).
  // A regular expression runs only when typed (`typed`), never from a link (one built to backtrack for ever would
  // freeze the page at every load), and is at most MAX_PATTERN characters; the g and y flags are dropped, so test()
  // keeps no lastIndex from one question to the next.
  const MAX_PATTERN = 200;
  function searcher(query, typed) {
    const text = query.trim();
    if (!text) return { all: true, test: () => true };
    const regex = /^\/(.+)\/([a-z]*)$/s.exec(text);
    if (regex) {
      if (!typed) return { all: true, test: () => true, error: "a regular expression from a link is not run: press Enter in the search box to run it" };
      if (regex[1].length > MAX_PATTERN) return { error: `a regular expression is at most ${MAX_PATTERN} characters`, test: () => false };
      try {
        const flags = regex[2].replace(/[gy]/g, "");
        const pattern = new RegExp(regex[1], flags.includes("i") ? flags : flags + "i");
        return { test: (value) => pattern.test(value.text), pattern };
      } catch (error) {
        return { error: `not a regular expression: ${error.message}`, test: () => false };
      }
    }
    const needle = text.toLowerCase();
    return { test: (value) => value.lower.includes(needle), pattern: new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "gi") };
  }

  // `text` with the search's hits marked (<mark>), at most MAX_MARKS of them: the nodes to append.
  const MAX_MARKS = 50;
  function marked(text, search) {
    if (!search || !search.pattern || !text) return [text];
    const pattern = new RegExp(search.pattern.source, search.pattern.flags.includes("g") ? search.pattern.flags : search.pattern.flags + "g");
    const nodes = [];
    let at = 0;
    for (let found = pattern.exec(text); found && nodes.length < 2 * MAX_MARKS; found = pattern.exec(text)) {
      if (!found[0]) {
        pattern.lastIndex += 1; // an empty match marks nothing
        continue;
      }
      nodes.push(text.slice(at, found.index), h("mark", { text: found[0] }));
      at = found.index + found[0].length;
    }
    nodes.push(text.slice(at));
    return nodes;
  }

  // The question list shows this many rows at a time: a filter or sort builds one page of rows, however many listed.
  const PAGE_SIZE = 100;
  // The instruction every stored prompt of a pair begins with (questionSource), cut after its last line break (else
  // its last whole word); "" when fewer than two prompts are stored or they share fewer than MIN_SHARED characters.
  // The question column shows each question without it, as one line; the list says it once above.
  const MIN_SHARED = 20;
  const sharedPrefixes = new Map();
  function sharedPrefix(pairIndex) {
    if (!sharedPrefixes.has(pairIndex)) {
      const texts = DATA.questions[pairIndex].prompt.filter((prompt) => !missing(prompt)).map(questionSource);
      let prefix = texts.length > 1 ? texts[0] : "";
      for (const text of texts) {
        let i = 0;
        while (i < prefix.length && prefix[i] === text[i]) i++;
        prefix = prefix.slice(0, i);
      }
      const lineEnd = prefix.lastIndexOf("\n");
      prefix = prefix.slice(0, (lineEnd >= 0 ? lineEnd : prefix.search(/\s\S*$/)) + 1);
      sharedPrefixes.set(pairIndex, prefix.trim().length >= MIN_SHARED ? prefix : "");
    }
    return sharedPrefixes.get(pairIndex);
  }
  const promptTexts = new Map();
  function questionText(pairIndex, question) {
    const key = `${pairIndex}:${question}`;
    if (!promptTexts.has(key)) promptTexts.set(key, oneLine(questionSource(DATA.questions[pairIndex].prompt[question]).slice(sharedPrefix(pairIndex).length)));
    return promptTexts.get(key);
  }
  // The shared instructions of the listed pairs, each once, with the pairs that share it.
  function sharedInstructions(pairIndices) {
    const byPrefix = new Map();
    for (const pairIndex of pairIndices) {
      const prefix = sharedPrefix(pairIndex);
      if (prefix) byPrefix.set(prefix, [...(byPrefix.get(prefix) || []), pairName(PAIRS[pairIndex])]);
    }
    return [...byPrefix].map(([prefix, names]) =>
      h("p", { class: "shared-instruction" }, h("span", { class: "note", text: `Every question of ${names.join(", ")} begins (left out of the question column): ` }), h("q", { text: oneLine(prefix) })),
    );
  }

  // Every metadata field of the questions with its values as text (a field's values listed while there are few).
  const MAX_VALUES = 200;
  const metadataText = (value) => (typeof value === "string" ? value : JSON.stringify(value));
  function metadataFields() {
    const fields = new Map();
    for (const data of DATA.questions) {
      for (const entry of data.metadata) {
        for (const [field, value] of Object.entries(entry || {})) {
          if (!fields.has(field)) fields.set(field, new Set());
          const values = fields.get(field);
          if (values.size <= MAX_VALUES) values.add(metadataText(value));
        }
      }
    }
    return fields;
  }

  // Why "confidently wrong" lists no question: the method scores none of the listed pairs' questions, every answer in
  // the top decile of its confidence is correct, or the other filters leave none of its confidently wrong answers.
  function confidentlyWrongNone(pairIndices, method) {
    const label = methodLabel(method);
    let top = 0;
    let wrong = 0;
    for (const pairIndex of pairIndices) {
      const data = DATA.questions[pairIndex];
      for (const question of topDecile(pairIndex, method)) {
        top += 1;
        wrong += data.correct[question] !== 1;
      }
    }
    if (!top) return `${label} scores none of the listed questions, so none is confident under it.`;
    if (!wrong) return `None: all ${top} answers in the top decile of ${label}'s confidence (within each listed pair) are correct; no wrong answer is that confident.`;
    return `${label} is confidently wrong on ${wrong} of the listed pairs' questions, but the other filters leave none of them.`;
  }

  function questionsPanel(panel) {
    const defaultMethod = METHODS.has("trac") ? "trac" : DATA.methods[0].name;
    const fields = metadataFields();
    const state = {};
    const methodOptions = DATA.methods.map((method) => ({ value: method.name, label: method.label }));
    const listBox = h("div", { class: "list-wrap" });
    const pagerBox = h("div", { class: "pager-wrap" });
    const view = h("div", { id: "question-view", tabindex: "-1" });
    const placeholder = () => view.replaceChildren(h("p", { class: "note", text: "Open a question: click its row, or focus the list and press Enter; j / k or ↓ / ↑ step, Esc closes." }));
    const count = h("span", { id: "question-count", role: "status" });
    const cwNote = h("p", { id: "confidently-wrong-note", class: "note" });
    const sharedBox = h("div", { id: "shared-instructions" });
    let currentSearch = null; // the search the list was drawn with: an opened question marks its hits
    const searchNote = h("span", { id: "search-note", class: "note warning" });
    const controls = {
      task: choice("filter-task", [{ value: "", label: "all" }, ...unique(PAIRS.map((pair) => pair.task)).map((task) => ({ value: task, label: task }))], "", (value) => change("task", value)),
      model: choice("filter-model", [{ value: "", label: "all" }, ...unique(PAIRS.map((pair) => pair.model)).map((model) => ({ value: model, label: modelName(model) }))], "", (value) => change("model", value)),
      label: choice("filter-label", [{ value: "", label: "all" }, { value: "correct", label: "correct" }, { value: "wrong", label: "wrong" }], "", (value) => change("label", value)),
      cw: h("input", { type: "checkbox", id: "filter-confidently-wrong", onchange: (event) => change("cw", event.target.checked ? "1" : "") }),
      by: choice("confidence-method", methodOptions, defaultMethod, (value) => change("by", value)),
      dis: h("input", { type: "checkbox", id: "filter-disagrees", onchange: (event) => change("dis", event.target.checked ? "1" : "") }),
      score: choice("sort-method", [{ value: "", label: "the same method" }, ...methodOptions], "", (value) => change("score", value)),
      q: h("input", { type: "search", id: "question-search", placeholder: "text, or /regex/", "aria-label": "search questions, answers and traces" }),
      mf: choice("filter-field", [{ value: "", label: "(any)" }, ...[...fields.keys()].sort().map((field) => ({ value: field, label: field }))], "", (value) => change("mf", value)),
      mv: h("input", { type: "text", id: "filter-field-value", list: "filter-field-values", placeholder: "value", "aria-label": "metadata value", size: 12 }),
      pop: choice("filter-p-op", [{ value: "", label: "any" }, { value: "ge", label: "≥" }, { value: "lt", label: "<" }], "", (value) => change("pop", value)),
      pt: h("input", { type: "number", id: "filter-p-threshold", min: "0", max: "1", step: "0.05", value: "0.5", "aria-label": "P(correct) threshold", size: 5 }),
      traces: h("input", { type: "checkbox", id: "search-traces", onchange: (event) => change("traces", event.target.checked ? "1" : "") }),
    };
    // One method defines "confident" and orders the list, unless another is chosen to sort by.
    const scoring = () => state.score || state.by;
    let typing = null;
    for (const field of ["q", "mv", "pt"]) {
      controls[field].addEventListener("input", () => {
        clearTimeout(typing);
        typing = setTimeout(() => change(field, controls[field].value), 150);
      });
    }
    // The search typed here (or confirmed with Enter): the only one a regular expression is compiled from.
    let typedQuery = "";
    controls.q.addEventListener("input", () => (typedQuery = controls.q.value));
    controls.q.addEventListener("keydown", (event) => {
      if (event.key !== "Enter") return;
      typedQuery = controls.q.value;
      change("q", controls.q.value);
    });
    // The chosen field's values, offered as the value box's suggestions.
    const valueList = h("datalist", { id: "filter-field-values" });
    const suggest = () => valueList.replaceChildren(...[...(fields.get(state.mf) || [])].sort().map((value) => h("option", { value })));
    // The panel's state is the route's (the URL hash): read it, show it in the controls, draw.
    function load(route) {
      Object.assign(state, {
        task: route.task || "",
        model: route.model || "",
        label: route.label || "",
        cw: route.cw || "",
        by: METHODS.has(route.by) ? route.by : defaultMethod,
        dis: route.dis || "",
        score: METHODS.has(route.score) ? route.score : "",
        sort: route.sort || "score:-1",
        q: route.q || "",
        traces: route.traces || "",
        mf: fields.has(route.mf) ? route.mf : "",
        mv: route.mv || "",
        pop: ["ge", "lt"].includes(route.pop) ? route.pop : "",
        pt: route.pt || "0.5",
        open: route.open || "",
      });
      for (const [field, control] of Object.entries(controls)) {
        if (control.type === "checkbox") control.checked = state[field] === "1";
        else if (control.value !== state[field]) control.value = state[field];
      }
      suggest();
      redraw();
    }
    function change(field, value) {
      state[field] = value;
      if (field === "mf") suggest();
      Object.assign(route, state);
      writeRoute(false);
      redraw();
    }
    // The open question is its pair's index and its own index in the pair ("0:12"), never its document id, which
    // may hold a ":" itself ("aime:2024:3").
    const openKey = () => {
      const found = /^(\d+):(\d+)$/.exec(state.open);
      if (!found) return null;
      const [pairIndex, question] = [Number(found[1]), Number(found[2])];
      return pairIndex < PAIRS.length && question < DATA.questions[pairIndex].doc.length ? `${pairIndex}:${question}` : null;
    };
    // The open question's row marked, when its page is shown.
    function markOpen() {
      const key = openKey();
      for (const row of listBox.querySelectorAll("tr.open")) row.classList.remove("open");
      const row = key && listBox.querySelector(`tr[data-key="${key}"]`);
      if (row) row.classList.add("open");
    }
    function showOpen() {
      const key = openKey();
      markOpen();
      if (!key) {
        view.dataset.key = "";
        view.dataset.loaded = "";
        placeholder();
        return;
      }
      const [pairIndex, question] = key.split(":").map(Number);
      if (view.dataset.key !== key) {
        view.dataset.key = key;
        renderQuestion(view, pairIndex, question, true, currentSearch);
      }
    }
    // Open a row's question: a new history entry, so Back returns to the one before.
    function open(row, tr) {
      state.open = `${row.pairIndex}:${row.question}`;
      Object.assign(route, state);
      writeRoute(true);
      for (const other of listBox.querySelectorAll("tr[tabindex='0']")) other.tabIndex = -1;
      tr.tabIndex = 0;
      showOpen();
      if (window.matchMedia("(max-width: 900px)").matches) view.scrollIntoView({ block: "start" });
    }
    function close() {
      const key = openKey();
      state.open = "";
      Object.assign(route, state);
      writeRoute(true);
      showOpen();
      const row = key && listBox.querySelector(`tr[data-key="${key}"]`);
      if (row) row.focus();
    }
    function redraw() {
      const search = searcher(state.q, state.q === typedQuery);
      searchNote.textContent = search.error || "";
      const withTraces = state.traces === "1" && state.q.trim() !== "";
      // A metadata field equal to a value (its whole text, case-insensitive); P(correct) of the method against a
      // threshold (a question without one is left out while the threshold is on).
      const wanted = state.mv.trim().toLowerCase();
      const threshold = Number(state.pt);
      const byThreshold = state.pop && state.pt !== "" && Number.isFinite(threshold);
      const rows = [];
      let pending = false;
      const listedPairs = PAIRS.map((_, index) => index).filter((index) => (!state.task || PAIRS[index].task === state.task) && (!state.model || PAIRS[index].model === state.model));
      sharedBox.replaceChildren(...sharedInstructions(listedPairs));
      PAIRS.forEach((pair, pairIndex) => {
        if (!listedPairs.includes(pairIndex)) return;
        const data = DATA.questions[pairIndex];
        const decile = topDecile(pairIndex, state.by);
        const scores = data.scores[scoring()] || [];
        const probabilities = data.p_correct[state.by] || [];
        data.doc.forEach((doc, question) => {
          const correct = data.correct[question] === 1;
          if (state.label === "correct" && !correct) return;
          if (state.label === "wrong" && correct) return;
          if (state.cw === "1" && (correct || !decile.has(question))) return;
          if (state.dis === "1" && data.agree[question] !== 0) return;
          if (state.mf && wanted) {
            const entry = data.metadata[question] || {};
            if (!Object.hasOwn(entry, state.mf) || metadataText(entry[state.mf]).toLowerCase() !== wanted) return;
          }
          if (byThreshold) {
            const p = probabilities[question];
            if (missing(p) || (state.pop === "ge" ? p < threshold : p >= threshold)) return;
          }
          if (!search.all && !search.test(haystack(pairIndex, question))) {
            const trace = withTraces ? traceTexts.get(`${pairIndex}:${question}`) : undefined;
            if (trace === undefined) pending = pending || withTraces;
            if (trace === undefined || !search.test(trace)) return;
          }
          const score = missing(scores[question]) ? null : scores[question];
          const text = questionText(pairIndex, question);
          rows.push({
            key: `${pairIndex}:${question}`,
            pairIndex,
            question,
            cells: {
              model: { text: modelName(pair.model), value: pair.model, node: () => modelCell(pair.model).node },
              task: { text: pair.task, value: pair.task },
              doc: { text: doc, value: /^\d+$/.test(doc) ? Number(doc) : doc },
              prompt: { text, value: text, cls: "question-text", node: () => h("span", { title: text || null }, ...(text ? marked(text, search) : ["(not stored)"])) },
              label: { text: correct ? "✓" : "✗", value: correct ? 1 : 0, cls: correct ? "ok" : "no" },
              answer: { text: missing(data.answer[question]) ? "(none)" : data.answer[question], value: data.answer[question] },
              probe: { text: (missing(data.probe[question]) ? "(none)" : data.probe[question]) + (data.agree[question] === 0 ? " ≠" : ""), value: data.probe[question] },
              score: { text: fmtScore(score), value: score },
            },
          });
        });
      });
      count.textContent = `${rows.length} question(s)` + (pending ? " (searching the traces…)" : "");
      cwNote.textContent = state.cw === "1" && !rows.length ? confidentlyWrongNone(listedPairs, state.by) : "";
      if (pending) loadTraceTexts(listedPairs).then(redraw);
      currentSearch = search;
      const columns = [
        { key: "model", label: "model" },
        { key: "task", label: "task" },
        { key: "doc", label: "doc", numeric: true },
        { key: "prompt", label: "question" },
        { key: "label", label: "correct", numeric: true },
        { key: "answer", label: "answer" },
        { key: "probe", label: "probe" },
        { key: "score", label: `${methodLabel(scoring())} score`, numeric: true },
      ];
      const [sortKey, sortDir] = state.sort.split(":");
      const active = document.activeElement;
      const focusedHeader = active && listBox.contains(active) && active.closest("th") ? active.closest("th").dataset.key : null;
      const table = sortableTable({
        id: "question-list",
        columns,
        rows,
        sort: { key: columns.some((column) => column.key === sortKey) ? sortKey : "score", dir: Number(sortDir) === 1 ? 1 : -1 },
        onSort: (sorted) => change("sort", `${sorted.key}:${sorted.dir}`),
        onRowClick: open,
        current: openKey(),
        pageSize: PAGE_SIZE,
        onShow: markOpen,
      });
      listBox.replaceChildren(table);
      pagerBox.replaceChildren(table.pager);
      if (focusedHeader) listBox.querySelector(`thead th[data-key="${focusedHeader}"] button`).focus();
      showOpen();
    }
    // The keyboard: on a row Enter (or Space) opens it; j / ↓ and k / ↑ step to the next / previous row and open it
    // when a question is open; Esc closes the open question and returns to its row.
    panel.addEventListener("keydown", (event) => {
      if (event.altKey || event.ctrlKey || event.metaKey) return;
      const inField = /^(INPUT|SELECT|TEXTAREA|BUTTON)$/.test(event.target.tagName);
      if (event.key === "Escape") {
        if (state.open) {
          event.preventDefault();
          close();
        }
        return;
      }
      if (inField) return;
      const table = listBox.querySelector("#question-list");
      const rows = [...table.tBodies[0].rows];
      if (!rows.length) return;
      const focused = rows.indexOf(event.target);
      if ((event.key === "Enter" || event.key === " ") && focused >= 0) {
        event.preventDefault();
        open(rows[focused].row, rows[focused]);
        return;
      }
      const step = { j: 1, ArrowDown: 1, k: -1, ArrowUp: -1 }[event.key];
      if (!step) return;
      event.preventDefault();
      // Steps count in the whole sorted list: past the page's end (or start) the next (previous) page is shown.
      const at = focused >= 0 ? focused : rows.findIndex((row) => row.classList.contains("open"));
      const index = at < 0 ? table.start() : Math.min(table.sorted().length - 1, Math.max(0, table.start() + at + step));
      const next = table.rowAt(index);
      for (const row of table.tBodies[0].rows) row.tabIndex = row === next ? 0 : -1;
      next.focus();
      if (state.open) open(next.row, next);
    });
    panel.append(
      h("h2", { class: "visually-hidden" }, "Questions"),
      h(
        "div",
        { class: "controls" },
        downloads("questions", () => {
          const header = ["model", "task", "doc", "question", "correct", "answer", "probe", `${scoring()} score`];
          const rows = listBox.querySelector("#question-list").sorted().map((row) => {
            const data = DATA.questions[row.pairIndex];
            const pair = PAIRS[row.pairIndex];
            return [pair.model, pair.task, data.doc[row.question], data.prompt[row.question], data.correct[row.question], data.answer[row.question], data.probe[row.question], row.cells.score.value];
          });
          return { header, rows };
        }, "the listed questions"),
        labelled("search", controls.q),
        labelled("in traces too", controls.traces),
        searchNote,
      ),
      h(
        "div",
        { class: "controls" },
        labelled("task", controls.task),
        labelled("model", controls.model),
        labelled("label", controls.label),
        labelled("confidently wrong", controls.cw),
        labelled("method", controls.by),
        labelled("probe disagrees", controls.dis),
        labelled("sort by the score of", controls.score),
      ),
      h(
        "div",
        { class: "controls" },
        labelled("metadata", controls.mf),
        labelled("=", controls.mv),
        valueList,
        labelled("P(correct) of the method", controls.pop),
        controls.pt,
        count,
      ),
      h("p", { class: "note", text: "Search: words of the question, the reference, the answers or the probe's answer (case-insensitive); /…/ for a regular expression; tick \"in traces too\" to search the primary traces (each is unpacked once). Method: the one whose confidence defines “confidently wrong” (a wrong answer in the top decile of its confidence within its pair: its score at least the ⌈n/10⌉-th largest) and whose score orders the list, unless “sort by the score of” names another. Probe disagrees: the probe's re-stated answer is not equivalent to the primary answer. Metadata: the questions whose field has that value (the whole value, case-insensitive). P(correct): the method's probability of correctness against the threshold." }),
      sharedBox,
      cwNote,
      h("div", { class: "explorer" }, h("div", { class: "list-column" }, pagerBox, listBox), view),
    );
    report.questions = { load };
    load(route);
  }

  // ------------------------------------------------------------------------------------------- side by side

  // Two runs' accuracy on the documents both answered, with their intervals, the difference left − right, the exact
  // McNemar p and the disagreements by direction (DATA.comparisons: trac_metrics/reporting/model/model_comparison.py,
  // stored once for each two runs, read here either way round).
  function accuracyComparison(left, right) {
    const found = DATA.comparisons.find((entry) => (entry.left === left && entry.right === right) || (entry.left === right && entry.right === left));
    if (!found) return h("p", { class: "note", text: "The two runs share no document." });
    const [mine, theirs] = found.left === left ? [0, 1] : [1, 0];
    const sign = found.left === left ? 1 : -1;
    const difference = sign * found.difference;
    const bounds = [sign * found.difference_interval[sign > 0 ? 0 : 1], sign * found.difference_interval[sign > 0 ? 1 : 0]];
    const row = (label, cls, value, text) => h("tr", null, h("th", { scope: "row", text: label }), h("td", { class: `num ${cls}`, dataset: { value: String(value) }, text }));
    return h(
      "table",
      { id: "compare-accuracy" },
      h("caption", { class: "note", text: `On the ${found.shared} documents both answered: accuracy with its ${LEVEL}% bootstrap interval over them, and the exact McNemar test of equal accuracy (two-sided).` }),
      h(
        "tbody",
        null,
        row(`accuracy, left (${pairName(PAIRS[left])})`, "accuracy-left", found.accuracy[mine], `${fmt(found.accuracy[mine])} ${interval(found.intervals[mine])}`),
        row(`accuracy, right (${pairName(PAIRS[right])})`, "accuracy-right", found.accuracy[theirs], `${fmt(found.accuracy[theirs])} ${interval(found.intervals[theirs])}`),
        row("left − right", "difference", difference, `${signed(difference)} ${interval(bounds)}`),
        row("McNemar p", "p", found.p, found.p < 0.001 ? "p < 0.001" : `p = ${found.p.toFixed(3)}`),
        row("only the left correct", "only-left", found.only[mine], String(found.only[mine])),
        row("only the right correct", "only-right", found.only[theirs], String(found.only[theirs])),
      ),
    );
  }

  // The tasks two or more runs answer (two models, or one model under two decodings): the ones side by side can show.
  const comparable = () => unique(PAIRS.map((pair) => pair.task)).filter((task) => PAIRS.filter((pair) => pair.task === task).length > 1);
  // Its state lives in the link: ctask, left and right (pair positions), cdis (only where the two disagree), cdoc.
  function comparePanel(panel) {
    const tasks = comparable();
    panel.append(h("h2", { class: "visually-hidden" }, "Side by side"));
    if (!tasks.length) {
      panel.append(h("p", { id: "compare-none", class: "note", text: "Side by side puts two runs of one task next to each other (two models, or one model under two decodings); every task of this report has one run, so there is nothing to put beside it." }));
      report.compare = { load: () => {} };
      return;
    }
    const state = {};
    const controls = h("div", { class: "controls" });
    const leftView = h("div", { id: "compare-left-view" });
    const rightView = h("div", { id: "compare-right-view" });
    const accuracyBox = h("div", { class: "table-wrap" });
    const pairsOf = (task) => PAIRS.map((pair, index) => index).filter((index) => PAIRS[index].task === task);
    const correctOf = (index, doc) => DATA.questions[index].correct[DATA.questions[index].doc.indexOf(doc)];
    const position = (value) => (/^\d+$/.test(value || "") ? Number(value) : null);
    // The task's documents both sides have; with "disagree", those one side answers correctly and the other not.
    function documents() {
      const right = new Set(DATA.questions[state.right].doc);
      const shared = DATA.questions[state.left].doc.filter((doc) => right.has(doc));
      return { shared, shown: state.disagree ? shared.filter((doc) => correctOf(state.left, doc) !== correctOf(state.right, doc)) : shared };
    }
    function change(values) {
      Object.assign(state, values);
      redraw();
    }
    function redraw() {
      const candidates = pairsOf(state.task);
      if (!candidates.includes(state.left)) state.left = candidates[0];
      if (!candidates.includes(state.right) || state.right === state.left) state.right = candidates.find((index) => index !== state.left);
      const { shared, shown } = documents();
      if (!shown.includes(state.doc)) state.doc = shown[0] ?? null;
      Object.assign(route, { ctask: state.task === tasks[0] ? "" : state.task, left: String(state.left), right: String(state.right), cdis: state.disagree ? "1" : "", cdoc: state.doc ?? "" });
      writeRoute(false);
      const pairOptions = candidates.map((index) => ({ value: String(index), label: pairName(PAIRS[index]) }));
      const disagree = h("input", { type: "checkbox", id: "compare-disagree", checked: state.disagree, onchange: (event) => change({ disagree: event.target.checked }) });
      controls.replaceChildren(
        labelled("task", choice("compare-task", tasks.map((task) => ({ value: task, label: task })), state.task, (value) => change({ task: value }))),
        labelled("left", choice("compare-left", pairOptions, String(state.left), (value) => change({ left: Number(value) }))),
        labelled("right", choice("compare-right", pairOptions.filter((option) => option.value !== String(state.left)), String(state.right), (value) => change({ right: Number(value) }))),
        labelled("only where the two disagree (one correct, one wrong)", disagree),
        labelled("document", choice("compare-doc", shown.map((doc) => ({ value: doc, label: doc })), state.doc ?? "", (value) => change({ doc: value }))),
        h("span", { id: "compare-count", role: "status", text: state.disagree ? `${shown.length} of ${shared.length} documents disagree` : `${shared.length} documents` }),
      );
      accuracyBox.replaceChildren(accuracyComparison(state.left, state.right));
      if (state.doc === null) {
        leftView.replaceChildren(h("p", { class: "note", text: "The two agree on every document: each is correct on the same ones." }));
        rightView.replaceChildren();
        return;
      }
      for (const [view, index] of [[leftView, state.left], [rightView, state.right]]) {
        renderQuestion(view, index, DATA.questions[index].doc.indexOf(state.doc), false);
      }
    }
    // The panel's state from the link (what it does not name: the first task, its first two runs, every document).
    function load(route) {
      change({ task: tasks.includes(route.ctask) ? route.ctask : tasks[0], left: position(route.left), right: position(route.right), disagree: route.cdis === "1", doc: route.cdoc || null });
    }
    panel.append(controls, accuracyBox, h("div", { class: "side-by-side" }, leftView, rightView));
    report.compare = { load };
    load(route);
  }

  // ------------------------------------------------------------------------------------------- tabs, start

  // The state of the page lives in the URL's hash (tab, the ranked summary's metric and reference, the figures' pair
  // and methods, side by side's runs and document, the question list's filters, sort, search and open question), so
  // a copied link reopens it; opening a question or a tab adds a history entry (Back / Forward).
  function readRoute() {
    return Object.fromEntries(new URLSearchParams(location.hash.slice(1)));
  }
  const route = readRoute();
  function writeRoute(push) {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(route)) if (value) params.set(key, value);
    const hash = `#${params.toString()}`;
    if (hash === (location.hash || "#")) return;
    if (push) history.pushState(null, "", hash);
    else history.replaceState(null, "", hash);
  }

  const builders = { leaderboard: leaderboardPanel, figures: figuresPanel, analyses: analysesPanel, questions: questionsPanel, compare: comparePanel };
  const tabs = [...document.querySelectorAll("#tabs [role=tab]")];
  const built = new Set();
  let building = null; // the tab last built: the others wait until the document is parsed
  function openTab(name, record = true) {
    if (!Object.hasOwn(builders, name)) name = "leaderboard"; // "#tab=constructor" names no tab
    for (const button of tabs) {
      const selected = button.dataset.tab === name;
      button.setAttribute("aria-selected", String(selected));
      button.tabIndex = selected ? 0 : -1;
    }
    for (const [tab, build] of Object.entries(builders)) {
      const panel = document.getElementById(`panel-${tab}`);
      panel.hidden = tab !== name;
      if (tab === name && !built.has(tab)) {
        built.add(tab);
        building = tab === "leaderboard" ? build(panel) : documentParsed.then(() => build(panel));
      }
    }
    if (record && route.tab !== name) {
      route.tab = name === "leaderboard" ? "" : name;
      writeRoute(true);
    }
  }
  for (const button of tabs) button.addEventListener("click", () => openTab(button.dataset.tab));
  // The ARIA tab pattern: ← / → (Home / End) move between the tabs and open the one reached.
  document.getElementById("tabs").addEventListener("keydown", (event) => {
    const at = tabs.indexOf(document.activeElement);
    const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: tabs.length - 1 }[event.key];
    if (at < 0 || to === undefined) return;
    event.preventDefault();
    const next = tabs[(to + tabs.length) % tabs.length];
    next.focus();
    openTab(next.dataset.tab);
  });
  window.addEventListener("popstate", () => {
    for (const key of Object.keys(route)) delete route[key];
    Object.assign(route, readRoute());
    openTab(route.tab || "leaderboard", false);
    for (const panel of [report.questions, report.figures, report.compare]) if (panel) panel.load(route);
  });
  const settings = DATA.settings;
  document.getElementById("report-summary").textContent =
    `${PAIRS.length} (model, task) pair(s), ${unique(PAIRS.map((pair) => pair.model)).length} model(s), ` +
    `${unique(PAIRS.map((pair) => pair.task)).length} task(s), ${PAIRS.reduce((sum, pair) => sum + pair.n, 0)} questions. ` +
    `Bootstrap: ${settings.resamples} hierarchical resamples, seed ${settings.seed}; calibration: ` +
    `${settings.calibration_map} maps, ECE over ${settings.ece_bins} bins.`;
  // Each pair's probe cache share, as `trac summary` prints it; below 50 % its warning, opened on demand.
  document.getElementById("report-cache").append(
    ...PAIRS.map((pair) =>
      h(
        "li",
        { class: pair.probe_cache.warning ? "warning" : null },
        `${modelName(pair.model)} / ${pair.task} (${pair.decoding}): ${pair.probe_cache.line}`,
        pair.probe_cache.warning && h("details", null, h("summary", { text: "below 50 %: likely causes" }), h("p", { class: "note", text: pair.probe_cache.warning })),
      ),
    ),
  );
  // Each pair's probe agreement with the primary answer on correct and on wrong responses, beside the paper's
  // (docs/method.md#probe-agreement); marked when it carries no signal or the probe read the answer it tests.
  document.getElementById("report-probe").append(
    ...PAIRS.map((pair) =>
      h(
        "li",
        { class: pair.probe_agreement.warning ? "warning" : null },
        `${modelName(pair.model)} / ${pair.task} (${pair.decoding}): ${pair.probe_agreement.line}` +
          (pair.probe_agreement.note ? ` — ${pair.probe_agreement.note}` : ""),
      ),
    ),
  );
  // The footer names the trac-eval that wrote the page and the docs its definitions come from.
  const docs = docHref("docs/method.md");
  document.getElementById("report-footer").append(
    `Written by trac-eval ${settings.version}. Every method and metric is defined in `,
    docs ? h("a", { href: docs, target: "_blank", rel: "noopener", text: "docs/method.md" }) : "docs/method.md",
    ` of trac-eval ${settings.version}` + (docs ? "." : " (trac report --docs-url links it)."),
  );
  openTab(route.tab || "leaderboard", false);
  report.openTab = openTab;
  // Ready once the first tab is drawn (the leaderboard at once; another when the document is parsed).
  Promise.resolve(building).then(() => {
    report.readyAt = performance.now();
    document.documentElement.dataset.ready = "true";
  });
})();

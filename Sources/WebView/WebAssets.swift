/// The web view's static files, compiled in: no build step and nothing fetched from outside
/// the machine. Served under `/static/` with long-lived caching off (they change with the
/// binary) and the same Content-Security-Policy as the pages, which allows scripts and styles
/// only from these files.
public enum WebAssets {
    /// One static file: its path under `/static/`, media type and bytes.
    public struct File: Sendable {
        public let name: String
        public let contentType: String
        public let body: String
    }

    public static let files: [File] = [
        File(name: "web.css", contentType: "text/css; charset=utf-8", body: css),
        File(name: "web.js", contentType: "text/javascript; charset=utf-8", body: javascript),
    ]

    /// The file served as `/static/NAME`, nil for any other name.
    public static func file(named name: String) -> File? { files.first { $0.name == name } }

    static let css = """
        :root { --fg: #1d232b; --muted: #5f6b7a; --line: #d9dee5; --bg: #f6f7f9; --accent: #2458c6;
                --crash: #c0392b; --lag: #b9770e; --ok: #1e8449; --warn: #b9770e; --bad: #c0392b; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
        header.top { display: flex; align-items: center; gap: 24px; padding: 10px 24px; background: #1d232b; color: #fff; }
        header.top .brand { font-weight: 700; letter-spacing: .02em; }
        header.top nav a { color: #cfd6df; text-decoration: none; margin-right: 16px; }
        header.top nav a.active, header.top nav a:hover { color: #fff; }
        header.top form { margin-left: auto; }
        main { padding: 20px 24px 48px; max-width: 1400px; }
        h1 { font-size: 20px; margin: 0 0 12px; word-break: break-word; }
        h2 { font-size: 16px; margin: 24px 0 8px; }
        a { color: var(--accent); }
        table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid var(--line); }
        th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
        th { background: #eef1f5; font-weight: 600; font-size: 12px; text-transform: uppercase; color: var(--muted); }
        td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
        td.title { word-break: break-word; }
        code, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 12.5px; }
        .muted { color: var(--muted); }
        .nowrap { white-space: nowrap; }
        .badge { display: inline-block; padding: 1px 7px; border-radius: 10px; font-size: 11px; font-weight: 600; color: #fff; background: var(--muted); }
        .badge.crash { background: var(--crash); }
        .badge.lag { background: var(--lag); }
        .badge.regression { background: var(--bad); }
        .badge.state-open { background: var(--accent); }
        .badge.state-resolved { background: #2e7d32; }
        .badge.state-ignored { background: var(--muted); }
        .actions form { margin-bottom: 6px; }
        ol.history pre.note { margin: 2px 0 6px; white-space: pre-wrap; }
        .facets { display: flex; flex-wrap: wrap; gap: 12px; margin-bottom: 12px; }
        .facets table.facet { width: auto; min-width: 200px; }
        .status { font-size: 11px; padding: 1px 6px; border-radius: 4px; border: 1px solid var(--line); white-space: nowrap; }
        .status.symbolicated { color: var(--ok); border-color: #a9dfbf; }
        .status.noLineInfo, .status.deviceSymbol { color: var(--warn); border-color: #f5cba7; }
        .status.missingDebugFile, .status.noSymbol, .status.outsideAnyImage, .status.malformed { color: var(--bad); border-color: #f5b7b1; }
        .status.ok { color: var(--ok); border-color: #a9dfbf; }
        .status.symbolTableOnly, .status.deviceSymbolsOnly, .status.noIdentifier { color: var(--warn); border-color: #f5cba7; }
        .status.notFound, .status.wrongArchitecture, .status.unreadable { color: var(--bad); border-color: #f5b7b1; }
        table.image-symbols td, table.symbols td { vertical-align: top; }
        table.image-symbols pre.command { white-space: pre-wrap; overflow-wrap: anywhere; margin: 6px 0 0; }
        ul.sources { margin: 4px 0; padding-left: 18px; }
        form.filters { display: flex; flex-wrap: wrap; gap: 8px; align-items: end; margin-bottom: 12px; }
        form.filters label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); }
        input, select, button { font: inherit; padding: 4px 8px; border: 1px solid var(--line); border-radius: 4px; background: #fff; }
        button { background: var(--accent); color: #fff; border-color: var(--accent); cursor: pointer; }
        header.top button { background: transparent; border-color: #56606c; color: #cfd6df; }
        .pager { margin-top: 10px; display: flex; gap: 16px; }
        .facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; background: #fff; border: 1px solid var(--line); padding: 10px 14px; }
        .facts dt { color: var(--muted); }
        .facts dd { margin: 0; word-break: break-word; }
        tr.in-app td { background: #eef5ff; }
        tr.in-app td.fn { font-weight: 600; }
        tr.inlined td.fn { padding-left: 28px; }
        tr.inlined td.fn::before { content: "↳ inlined "; color: var(--muted); font-weight: 400; }
        .thread { margin-bottom: 18px; }
        .thread h3 { font-size: 14px; margin: 14px 0 6px; }
        .thread.crashed h3 { color: var(--crash); }
        svg.trend rect { fill: #7f9cc9; }
        svg.trend rect.zero { fill: #d9dee5; }
        svg.bars rect.bar { fill: #7f9cc9; }
        svg.bars rect.bar.first { fill: #2458c6; }
        svg.bars text { font-size: 12px; fill: #1d232b; }
        .flame-wrap { background: #fff; border: 1px solid var(--line); padding: 8px; overflow-x: auto; }
        svg.flame rect { fill: #f0a35e; stroke: #fff; stroke-width: .5; }
        svg.flame rect.in-app { fill: #e8743b; }
        svg.flame rect.key { fill: #c0392b; }
        svg.flame rect:hover { fill: #2458c6; }
        svg.flame text { font-size: 11px; fill: #1d232b; pointer-events: none; font-family: ui-monospace, Menlo, Consolas, monospace; }
        svg.flame text.on-key { fill: #fff; }
        #flame-info { min-height: 1.6em; margin: 6px 0; font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12.5px; }
        pre.command { background: #1d232b; color: #e8ecf1; padding: 8px 12px; border-radius: 4px; overflow-x: auto; }
        .login { max-width: 420px; margin: 60px auto; background: #fff; border: 1px solid var(--line); padding: 24px; }
        .login input { width: 100%; margin: 8px 0 14px; }
        .error { color: var(--bad); }
        .legend span { margin-right: 14px; }
        .swatch { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
        .swatch.key { background: #c0392b; } .swatch.in-app { background: #e8743b; } .swatch.other { background: #f0a35e; }
        """

    /// Hovering a flame-graph rectangle shows its frame and share in `#flame-info`. Plain
    /// JavaScript, no inline handlers (the CSP forbids them): one delegated listener.
    static let javascript = """
        "use strict";
        document.addEventListener("DOMContentLoaded", function () {
          var info = document.getElementById("flame-info");
          if (!info) return;
          var idle = info.textContent;
          document.querySelectorAll("svg.flame").forEach(function (svg) {
            svg.addEventListener("mouseover", function (event) {
              var rect = event.target.closest("rect[data-label]");
              if (!rect) return;
              info.textContent = rect.getAttribute("data-label") + " \\u2014 " + rect.getAttribute("data-count") +
                " samples, " + rect.getAttribute("data-share") + " of all";
            });
            svg.addEventListener("mouseleave", function () { info.textContent = idle; });
          });
        });
        """
}

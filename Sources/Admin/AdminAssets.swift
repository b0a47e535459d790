import HTTPRouting

/// The console's stylesheet and script, served from memory at `/admin/assets/`.
enum AdminAssets {
    static func response(_ text: String, type: String) -> HTTPResponse {
        var headers: HTTPHeaders = [
            "Content-Type": type,
            "Cache-Control": "public, max-age=3600",
            "X-Content-Type-Options": "nosniff",
        ]
        headers.add(name: "Content-Security-Policy", value: "default-src 'none'")
        return HTTPResponse(status: 200, headers: headers, body: Array(text.utf8))
    }

    static let css = """
        :root { --ink: #1d2330; --muted: #5d6678; --line: #dfe3ea; --bg: #f6f7f9; --card: #fff;
          --accent: #3056d3; --good: #1f8a4c; --bad: #c23a3a; --warn: #b8741a; color-scheme: light; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink);
          background: var(--bg); }
        header { display: flex; align-items: center; gap: 1.5rem; padding: .6rem 1.5rem; background: var(--ink);
          color: #fff; flex-wrap: wrap; }
        header a { color: #c9d3ea; text-decoration: none; }
        header a[aria-current] { color: #fff; border-bottom: 2px solid #fff; }
        header nav { display: flex; gap: 1rem; flex-wrap: wrap; flex: 1; }
        .brand { font-weight: 700; color: #fff; letter-spacing: .02em; }
        .sign-out { display: flex; gap: .6rem; align-items: center; }
        .role { font-size: 12px; color: #c9d3ea; }
        main { padding: 1.2rem 1.5rem 3rem; max-width: 1400px; }
        h1 { font-size: 22px; margin: .2rem 0 1rem; }
        h2 { font-size: 15px; margin: 1.6rem 0 .6rem; color: var(--muted); text-transform: uppercase;
          letter-spacing: .04em; }
        table { border-collapse: collapse; width: 100%; background: var(--card); border: 1px solid var(--line); }
        th, td { text-align: left; padding: .45rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top;
          word-break: break-all; }
        th { background: #eef1f5; font-weight: 600; font-size: 12px; color: var(--muted); word-break: normal; }
        a { color: var(--accent); }
        button { font: inherit; padding: .35rem .8rem; border-radius: 6px; border: 1px solid var(--accent);
          background: var(--accent); color: #fff; cursor: pointer; }
        header button { background: transparent; border-color: #8090b0; }
        form.inline { display: inline; margin-right: .3rem; }
        form.inline button { padding: .15rem .6rem; font-size: 12px; }
        .filters { display: flex; gap: .8rem; flex-wrap: wrap; align-items: flex-end; margin-bottom: 1rem; }
        .filters label, .stacked label { display: flex; flex-direction: column; gap: .2rem; font-size: 12px;
          color: var(--muted); }
        input, select, textarea { font: inherit; padding: .35rem .5rem; border: 1px solid var(--line);
          border-radius: 6px; background: #fff; color: var(--ink); }
        textarea { font-family: ui-monospace, monospace; width: 100%; }
        .stacked { display: grid; gap: .8rem; max-width: 640px; }
        .sign-in { max-width: 360px; }
        .details { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1.2rem; background: var(--card);
          border: 1px solid var(--line); padding: .8rem 1rem; }
        .details dt { color: var(--muted); }
        .details dd { margin: 0; word-break: break-all; }
        pre { background: var(--card); border: 1px solid var(--line); padding: .8rem; overflow: auto; }
        .badge { display: inline-block; padding: 0 .5rem; border-radius: 999px; font-size: 12px; background: #e8ebf1; }
        .status-sent, .status-done, .status-active, .status-started, .status-connected, .status-update_token,
        .status-signed_in { background: #dff3e7; color: var(--good); }
        .status-dead, .status-failed, .status-invalid, .status-rejected, .status-closed { background: #f8e1e1;
          color: var(--bad); }
        .status-pending, .status-retrying, .status-scheduled, .status-sending, .status-silent, .status-starting {
          background: #fbefd9; color: var(--warn); }
        .status-broadcast, .status-push_to_start { background: #e2e8fb; color: var(--accent); }
        .none { color: #a0a7b4; }
        .empty, .hint { color: var(--muted); }
        .error { color: var(--bad); background: #fbeaea; border: 1px solid #f0c6c6; padding: .6rem .8rem;
          border-radius: 6px; }
        .notice { background: #e6f0ff; border: 1px solid #c5d6f6; padding: .6rem .8rem; border-radius: 6px; }
        .pager { margin-top: .8rem; }
        .charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 1rem; }
        .chart { margin: 0; background: var(--card); border: 1px solid var(--line); padding: .6rem .8rem; }
        .chart figcaption { font-size: 13px; color: var(--muted); }
        .chart figcaption b { color: var(--ink); font-size: 18px; margin-left: .3rem; }
        .chart svg { width: 100%; height: auto; }
        .chart rect { fill: var(--accent); }
        .series-1 rect { fill: var(--warn); }
        .series-2 rect { fill: var(--bad); }
        .chart text { font-size: 10px; fill: var(--muted); }
        .chart .axis { stroke: var(--line); }
        svg.gauge { width: 100%; max-width: 640px; height: 14px; display: block; }
        svg.gauge .track { fill: #e8ebf1; }
        svg.gauge .fill { fill: var(--accent); }
        .phones { display: flex; gap: 1.5rem; flex-wrap: wrap; }
        .phone { width: 300px; min-height: 520px; border-radius: 42px; padding: 1.4rem 1rem; color: #fff;
          background: linear-gradient(160deg, #23355f, #5b3c74 60%, #a2566b); border: 8px solid #111; }
        .phone .device { font-size: 11px; opacity: .7; text-align: center; margin: 0; }
        .phone .clock { font-size: 56px; font-weight: 600; text-align: center; margin: .2rem 0 1rem; }
        .activity { background: rgba(20, 20, 28, .55); border-radius: 18px; padding: .7rem .9rem; margin-bottom: .7rem; }
        .activity h3 { margin: 0 0 .3rem; font-size: 14px; }
        .activity dl { display: grid; grid-template-columns: max-content 1fr; gap: .1rem .8rem; margin: .3rem 0; }
        .activity dt { opacity: .7; }
        .activity dd { margin: 0; font-weight: 600; }
        .activity .alert, .activity .state { font-size: 12px; opacity: .8; margin: 0; }
        @media (prefers-color-scheme: dark) {
          :root { --ink: #e6e9ef; --muted: #9aa3b5; --line: #2c3343; --bg: #151922; --card: #1c2230; color-scheme: dark; }
          header { background: #0d1017; }
          th { background: #222a3a; }
          input, select, textarea { background: #141923; }
          .badge { background: #2a3245; }
        }
        """

    /// Asks before a button marked `data-confirm` sends its form, and shows times in the browser's
    /// own time zone on hover. The pages work without it.
    static let javascript = """
        document.addEventListener("submit", function (event) {
          var button = event.submitter || event.target.querySelector("button[data-confirm]");
          var question = button && button.getAttribute("data-confirm");
          if (question && !window.confirm(question)) { event.preventDefault(); }
        });
        document.addEventListener("DOMContentLoaded", function () {
          var pattern = /^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$/;
          document.querySelectorAll("td, dd").forEach(function (cell) {
            var text = cell.textContent.trim();
            if (pattern.test(text)) { cell.title = new Date(text).toLocaleString(); }
          });
        });
        """
}

/// The page frame every view shares: head with the static files, the navigation, the body.
public enum Layout {
    /// The sections of the top navigation.
    public enum Section: String, Sendable, CaseIterable {
        case groups, search, releases, symbols, workers
        var title: String {
            switch self {
            case .groups: "Groups"
            case .search: "Search"
            case .releases: "Releases"
            case .symbols: "Symbols"
            case .workers: "Workers"
            }
        }
        var path: String {
            switch self {
            case .groups: "/"
            case .search: "/search"
            case .releases: "/releases"
            case .symbols: "/symbols"
            case .workers: "/workers"
            }
        }
    }

    /// A whole document. `title` is escaped here; `body` is markup built by this module.
    public static func page(title: String, section: Section?, body: String, signedIn: Bool = true) -> String {
        var nav = ""
        if signedIn {
            nav = "<nav>" + Section.allCases.map { s in
                "<a href=\"\(s.path)\"\(s == section ? " class=\"active\"" : "")>\(s.title)</a>"
            }.joined() + "</nav>"
            nav += "<form method=\"post\" action=\"/logout\"><button type=\"submit\">Sign out</button></form>"
        }
        return """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(HTML.escape(title)) · Stackline</title>
            <link rel="stylesheet" href="/static/web.css">
            <script src="/static/web.js" defer></script>
            </head>
            <body>
            <header class="top"><span class="brand">Stackline</span>\(nav)</header>
            <main>
            \(body)
            </main>
            </body>
            </html>

            """
    }

    /// The sign-in form. `error` is a fixed message of ours (escaped anyway); `next`, the local
    /// path to return to after signing in (checked by the caller, escaped here).
    public static func login(error: String?, next: String? = nil) -> String {
        let message = error.map { "<p class=\"error\" data-k=\"login-error\">\(HTML.escape($0))</p>" } ?? ""
        let body = """
            <div class="login">
            <h1>Sign in</h1>
            <p class="muted">Paste a token with the <code>read</code> scope (<code>stackline tokens create --scope read</code>).</p>
            \(message)
            <form method="post" action="/login">
            <label for="token">Token</label>
            <input id="token" name="token" type="password" autocomplete="current-password" required>
            \(next.map { "<input type=\"hidden\" name=\"next\" value=\"\(HTML.escape($0))\">" } ?? "")
            <button type="submit">Sign in</button>
            </form>
            </div>
            """
        return page(title: "Sign in", section: nil, body: body, signedIn: false)
    }

    /// A plain message page (not found, not processed yet). `message` is escaped.
    public static func message(title: String, _ message: String, section: Section? = nil) -> String {
        page(title: title, section: section, body: "<h1>\(HTML.escape(title))</h1><p data-k=\"message\">\(HTML.escape(message))</p>")
    }
}

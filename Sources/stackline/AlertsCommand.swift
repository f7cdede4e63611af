import Alerts
import ArgumentParser
import Foundation
import Storage
import JSONFormat

/// `stackline alerts`: check a rules file, send a sample through a rule's targets, list events.
struct AlertsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "alerts",
        abstract: "Check alert rules, send a test alert, list recent alerts (docs/alerts.md).",
        subcommands: [AlertsTestCommand.self, AlertsCheckCommand.self, AlertsListCommand.self])
}

/// `--alerts FILE`, else `$STACKLINE_ALERTS`.
struct AlertsFileOption: ParsableArguments {
    @Option(help: "Alert rules file (default: $STACKLINE_ALERTS).")
    var alerts: String?

    func load(command: String) throws -> AlertConfiguration {
        guard let path = alerts ?? processEnvironment.alerts else {
            throw fail("stackline alerts \(command): no rules file (pass --alerts FILE or set STACKLINE_ALERTS)")
        }
        do { return try AlertRulesParser.load(path: path, environment: processEnvironment.variables) } catch {
            throw fail("stackline alerts \(command): \(error.description)")
        }
    }
}

struct AlertsTestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test",
        abstract: "Send a sample event of RULE to each of its targets and print the outcome per target.",
        discussion: "Nothing is recorded in the database. Exit status 1 when a target failed.")

    @Argument(help: "The rule's name in the rules file.")
    var rule: String

    @OptionGroup var file: AlertsFileOption

    func run() async throws {
        let configuration = try file.load(command: "test")
        guard let rule = configuration.rule(named: rule) else {
            throw fail("stackline alerts test: no rule named \(rule) (rules: \(configuration.rules.map(\.name).joined(separator: ", ")))")
        }
        let event = AlertEvent.sample(rule: rule, baseURL: configuration.baseURL, now: Int64(Date().timeIntervalSince1970 * 1000))
        var failed = false
        for name in rule.targets {
            guard let target = configuration.targets[name] else { continue }
            do {
                try await AlertDelivery().send(event, to: target)
                printLine("\(name): delivered (\(target.safeDescription))")
            } catch {
                failed = true
                printLine("\(name): failed (\(target.safeDescription)): \(configuration.scrub(error.description))")
            }
        }
        if failed { throw ExitCode(1) }
    }
}

struct AlertsCheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check", abstract: "Check a rules file and print its rules; exit status 1 with the reason if it is not valid.")

    @OptionGroup var file: AlertsFileOption

    func run() throws {
        let configuration = try file.load(command: "check")
        for rule in configuration.rules {
            printLine("\(rule.name): \(rule.kind.name), \(rule.severity.rawValue) -> \(rule.targets.joined(separator: ", "))")
        }
    }
}

struct AlertsListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "Recent alert events, newest first, with the state of each delivery.")

    @OptionGroup var database: DatabaseOptions

    @Option(help: "How many events.")
    var limit = 20

    @Flag(help: "Machine-readable output.")
    var json = false

    func run() throws {
        let db = try database.open(for: "alerts list")
        let events = try db.recentAlertEvents(limit: max(1, limit))
        if json {
            print(try encodeJSON(events))
            return
        }
        guard !events.isEmpty else {
            print("no alert events")
            return
        }
        var table = Table("ID", "RULE", "KIND", "SEVERITY", "GROUP", "SCOPE", "DELIVERIES")
        for event in events {
            let deliveries = event.deliveries.map { d in
                "\(d.target)=\(d.state)" + (d.attempts > 1 || d.state != "delivered" ? "/\(d.attempts)" : "")
            }.joined(separator: " ")
            table.add("\(event.id)", event.rule, event.kind, event.severity, String(event.fingerprint.prefix(12)), scope(event), deliveries)
        }
        print(table.render())
        for event in events {
            for d in event.deliveries where d.lastError != nil && d.state != "delivered" {
                printLine("event \(event.id) \(d.target): \(d.lastError ?? "")")
            }
        }
    }

    /// A spike's scope is its hour's start in ms: shown as a UTC time.
    private func scope(_ event: AlertEventRecord) -> String {
        guard event.kind == "spike", let ms = Int64(event.scope) else { return event.scope.isEmpty ? "-" : event.scope }
        let formatter = ISO8601DateFormatter()
        return formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }
}

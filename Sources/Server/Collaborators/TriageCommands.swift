import Foundation
import Storage

/// One change to a group, as a form or a request asks for it.
enum TriageCommand: Sendable {
    case state(GroupStateChange, note: String?)
    case assign(String?, note: String?)
    case comment(String)
    case merge(into: String, note: String?)
}

extension ServerQueries {
    /// Makes `command` on the group `prefix` names, with the API's refusals (`TriageRequests`);
    /// answers the fingerprint of the group to show next (the target, after a merge).
    func perform(_ command: TriageCommand, on prefix: String, actor: String) throws -> String {
        let group = try TriageRequests.existingGroup(prefix, groupFingerprint)
        return try TriageRequests.answer {
            switch command {
            case .state(let change, let note):
                _ = try changeGroupState(fingerprint: group, change, actor: actor, note: note)
                return group
            case .assign(let assignee, let note):
                _ = try assignGroup(fingerprint: group, to: assignee, actor: actor, note: note)
                return group
            case .comment(let text):
                _ = try commentOnGroup(fingerprint: group, text: text, actor: actor)
                return group
            case .merge(let into, let note):
                let target = try TriageRequests.existingGroup(into, groupFingerprint)
                try mergeGroup(group, into: target, actor: actor, note: note)
                return target
            }
        }
    }
}

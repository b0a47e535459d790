import APNs
import APNsSimulator
import APNsTransport
import Foundation
import HTTPRouting
import HeraldCore
import Testing

/// The virtual devices: Live Activities started, allowed, updated, ended and broadcast to, with
/// the pushes sent by the project's client over HTTP/2 + TLS and the devices read through the
/// control API and the Swift API.
@Suite struct VirtualDeviceTests {
    static let bundleID = SimulatorFixture.bundleID
    /// A push-to-start token (the virtual device) and the app's device token on the same phone.
    static let pushToStart = String(repeating: "a1", count: 32)
    static let device = String(repeating: "d4", count: 32)

    static func send(
        _ client: APNSClient,
        token: String,
        type: APNSPushType = .liveActivity,
        _ payload: String
    ) async throws -> APNSSendResult {
        try await client.send(
            APNSRequest(
                deviceToken: token,
                pushType: type,
                topic: .bundleID(bundleID),
                payload: Array(payload.utf8),
                priority: type == .background ? .consideringDevicePower : .immediately
            )
        )
    }

    /// A push-to-start as Herald sends one: attributes, content state, alert, stale date.
    static func start(at timestamp: Int, extra: String = "") -> String {
        #"{"aps":{"event":"start","timestamp":\#(timestamp),"attributes-type":"LoanAttributes","#
            + #""attributes":{"product":"Credit card","heraldID":"h-1"},"content-state":{"step":1},"#
            + #""alert":{"title":"Application started","body":"We are checking your data"},"#
            + #""stale-date":\#(timestamp + 3600)\#(extra)}}"#
    }

    static func call(
        _ control: APNSSimulatorControl,
        _ method: String,
        _ path: String
    ) async throws -> (status: Int, json: APNSJSONValue?) {
        let response = try await control.respond(to: HTTPRequest(method: method, path: path))
        return (response.status, response.body.isEmpty ? nil : try APNSJSONValue(parsing: response.body))
    }

    @Test func aPushToStartCreatesAnActivityThatIsNotAllowed() async throws {
        try await withSimulator { fixture in
            let (client, pool) = fixture.makeClient()
            let now = Int(fixture.clock.now().timeIntervalSince1970)
            let result = try await Self.send(client, token: Self.pushToStart, Self.start(at: now))
            #expect(result.isDelivered)

            let activities = fixture.simulator.activities(device: Self.pushToStart)
            let activity = try #require(activities.first)
            #expect(activities.count == 1)
            #expect(UUID(uuidString: activity.activityID) != nil)
            #expect(activity.activityID == activity.activityID.uppercased())
            #expect(activity.allowed == false)
            #expect(activity.updateToken == nil)
            #expect(activity.state == .active)
            #expect(activity.attributesType == "LoanAttributes")
            #expect(activity.attributes["heraldID"] == "h-1")
            #expect(activity.contentState == ["step": 1])
            #expect(activity.alert?["title"] == "Application started")
            #expect(activity.staleDate == Date(timeIntervalSince1970: Double(now + 3600)))
            #expect(activity.changes.map(\.route) == [.pushToStart])

            let listed = try await Self.call(
                fixture.simulator.control,
                "GET",
                "/devices/\(Self.pushToStart)/activities"
            )
            #expect(listed.status == 200)
            guard case .array(let items)? = listed.json?["activities"] else {
                Issue.record("no activities array: \(String(describing: listed.json))")
                return
            }
            #expect(items.count == 1)
            #expect(items.first?["activity_id"] == .string(activity.activityID))
            #expect(items.first?["allowed"] == false)
            #expect(items.first?["update_token"] == .null)
            #expect(items.first?["state"] == "active")
            #expect(items.first?["content_state"] == ["step": 1])
            #expect(items.first?["timestamp"] == .integer(Int64(now)))
            #expect(items.first?["changes"]?.arrayFirst?["via"] == "push_to_start")
            // Another device shows nothing; an alert push starts nothing.
            #expect(fixture.simulator.activities(device: Self.device).isEmpty)
            _ = try await Self.send(client, token: Self.device, type: .alert, #"{"aps":{"alert":"Hi"}}"#)
            #expect(fixture.simulator.activities().count == 1)
            await pool.shutdown()
        }
    }

    @Test func allowGivesAnUpdateTokenThatUpdatesInOrderAndEnds() async throws {
        try await withSimulator { fixture in
            let (client, pool) = fixture.makeClient()
            let now = Int(fixture.clock.now().timeIntervalSince1970)
            _ = try await Self.send(
                client,
                token: Self.pushToStart,
                Self.start(at: now, extra: #","input-push-token":1"#)
            )
            let id = try #require(fixture.simulator.activities(device: Self.pushToStart).first?.activityID)
            let control = fixture.simulator.control

            let allowed = try await Self.call(control, "POST", "/devices/\(Self.pushToStart)/activities/\(id)/allow")
            #expect(allowed.status == 200)
            #expect(allowed.json?["allowed"] == true)
            let updateToken = try #require(allowed.json?["update_token"]?.stringValue)
            #expect(updateToken.count == 64)
            #expect(updateToken.allSatisfy { $0.isHexDigit && !$0.isUppercase })
            // Registered as the app's Live Activity token; allowing again changes nothing.
            #expect(try fixture.simulator.allowActivity(device: Self.pushToStart, id: id) == updateToken)
            let tokens = try await Self.call(control, "GET", "/tokens")
            #expect(
                tokens.json?["tokens"]?.arrayFirst?["topic"] == .string(Self.bundleID + ".push-type.liveactivity")
            )

            let update = #"{"aps":{"event":"update","timestamp":\#(now + 10),"content-state":{"step":2}}}"#
            #expect(try await Self.send(client, token: updateToken, update).isDelivered)
            var activity = try #require(fixture.simulator.activities(device: Self.pushToStart).first)
            #expect(activity.contentState == ["step": 2])
            #expect(activity.timestamp == Double(now + 10))
            #expect(activity.changes.last?.route == .updateToken)
            #expect(activity.changes.last?.applied == true)

            // Older (and equal) timestamps are ignored, and recorded as such.
            let older = #"{"aps":{"event":"update","timestamp":\#(now + 10),"content-state":{"step":9}}}"#
            #expect(try await Self.send(client, token: updateToken, older).isDelivered)
            activity = try #require(fixture.simulator.activities(device: Self.pushToStart).first)
            #expect(activity.contentState == ["step": 2])
            #expect(activity.changes.last?.applied == false)
            #expect(activity.changes.last?.note == "timestamp_not_newer")

            let end =
                #"{"aps":{"event":"end","timestamp":\#(now + 20),"content-state":{"step":3},"dismissal-date":\#(now + 600)}}"#
            #expect(try await Self.send(client, token: updateToken, end).isDelivered)
            activity = try #require(fixture.simulator.activities(device: Self.pushToStart).first)
            #expect(activity.state == .ended)
            #expect(activity.contentState == ["step": 3])
            #expect(activity.dismissalDate == Date(timeIntervalSince1970: Double(now + 600)))

            // Nothing changes an ended activity; its dismissal date removes it from the Lock Screen.
            let late = #"{"aps":{"event":"update","timestamp":\#(now + 30),"content-state":{"step":4}}}"#
            #expect(try await Self.send(client, token: updateToken, late).isDelivered)
            activity = try #require(fixture.simulator.activities(device: Self.pushToStart).first)
            #expect(activity.contentState == ["step": 3])
            #expect(activity.changes.last?.note == "not_active")
            fixture.clock.advance(by: 601)
            let read = try await Self.call(control, "GET", "/devices/\(Self.pushToStart)/activities/\(id)")
            #expect(read.json?["state"] == "dismissed")
            await pool.shutdown()
        }
    }

    @Test func iOSEndsAnActivityEightHoursAfterItsStart() async throws {
        try await withSimulator { fixture in
            let (client, pool) = fixture.makeClient()
            let now = Int(fixture.clock.now().timeIntervalSince1970)
            _ = try await Self.send(client, token: Self.pushToStart, Self.start(at: now))
            fixture.clock.advance(by: 8 * 3600)
            let activity = try #require(fixture.simulator.activities(device: Self.pushToStart).first)
            #expect(activity.state == .ended)
            #expect(activity.changes.last?.route == .system)
            fixture.clock.advance(by: 4 * 3600)
            #expect(fixture.simulator.activities(device: Self.pushToStart).first?.state == .dismissed)
            await pool.shutdown()
        }
    }

    @Test func aBroadcastUpdatesAndEndsEverySubscribedActivity() async throws {
        try await withSimulator { fixture in
            let (client, pool) = fixture.makeClient()
            let channel = try await client.createChannel(bundleID: Self.bundleID, storagePolicy: .noMessageStored)
            let now = Int(fixture.clock.now().timeIntervalSince1970)
            let subscribe = #","input-push-channel":"\#(channel.rawValue)""#
            let members = [Self.pushToStart, String(repeating: "b2", count: 32)]
            for member in members {
                _ = try await Self.send(client, token: member, Self.start(at: now, extra: subscribe))
            }
            let outsider = String(repeating: "c3", count: 32)
            let unknown = #","input-push-channel":"bm90LWEtY2hhbm5lbA==""#
            _ = try await Self.send(client, token: outsider, Self.start(at: now, extra: unknown))
            #expect(fixture.simulator.activities(device: outsider).first?.channelID == nil)
            #expect(
                fixture.simulator.activities(device: outsider).first?.changes.first?.note == "channel_not_registered"
            )

            func broadcast(_ aps: String) async throws -> APNSSendResult {
                try await client.send(
                    APNSBroadcastRequest(
                        bundleID: Self.bundleID,
                        channelID: channel,
                        storagePolicy: .noMessageStored,
                        payload: Array(#"{"aps":\#(aps)}"#.utf8)
                    )
                )
            }
            #expect(
                try await broadcast(#"{"event":"update","timestamp":\#(now + 5),"content-state":{"eta":3}}"#)
                    .isDelivered
            )
            for member in members {
                let activity = try #require(fixture.simulator.activities(device: member).first)
                #expect(activity.channelID == channel.rawValue)
                #expect(activity.contentState == ["eta": 3])
                #expect(activity.changes.last?.route == .broadcast)
                #expect(activity.changes.last?.requestID != nil)
            }
            #expect(fixture.simulator.activities(device: outsider).first?.contentState == ["step": 1])
            #expect(
                try await broadcast(#"{"event":"end","timestamp":\#(now + 6),"content-state":{"eta":0}}"#).isDelivered
            )
            #expect(members.allSatisfy { fixture.simulator.activities(device: $0).first?.state == .ended })
            #expect(fixture.simulator.activities(device: outsider).first?.state == .active)
            await pool.shutdown()
        }
    }

    /// The silent fallback exactly as the issue's routing item 3 writes it, to the app's device
    /// token (not the push-to-start token): applied only with the option on.
    @Test(arguments: [true, false])
    func aSilentPushWithLiveActivityIsAppliedWhenTheOptionIsOn(option: Bool) async throws {
        try await withSimulator(configure: { $0.applySilentLiveActivity = option }) { fixture in
            let (client, pool) = fixture.makeClient()
            let now = Int(fixture.clock.now().timeIntervalSince1970)
            _ = try await Self.send(client, token: Self.pushToStart, Self.start(at: now))
            let id = try #require(fixture.simulator.activities(device: Self.pushToStart).first?.activityID)
            let silent =
                #"{"aps":{"content-available":1},"live-activity":{"id":"h-1","activity-id":"\#(id)","#
                + #""event":"update","content-state":{"step":2},"timestamp":\#(now + 5),"stale-date":\#(now + 900)}}"#
            #expect(try await Self.send(client, token: Self.device, type: .background, silent).isDelivered)
            let activity = try #require(fixture.simulator.activities(device: Self.pushToStart).first)
            #expect(activity.contentState == (option ? ["step": 2] : ["step": 1]))
            #expect(activity.changes.last?.route == (option ? APNSSimulatorActivity.Route.silent : .pushToStart))
            if option {
                #expect(activity.staleDate == Date(timeIntervalSince1970: Double(now + 900)))
                #expect(activity.allowed == false)
                let end =
                    #"{"aps":{"content-available":1},"live-activity":{"id":"h-1","activity-id":"\#(id)","#
                    + #""event":"end","content-state":{"step":3},"timestamp":\#(now + 6),"dismissal-date":\#(now)}}"#
                #expect(try await Self.send(client, token: Self.device, type: .background, end).isDelivered)
                #expect(fixture.simulator.activities(device: Self.pushToStart).first?.state == .dismissed)
            }
            await pool.shutdown()
        }
    }

    @Test func limitsRefuseNewActivitiesAndUpdateTokens() async throws {
        try await withSimulator(configure: {
            $0.virtualDeviceLimit = 1
            $0.activitiesPerDeviceLimit = 1
            $0.tokenLimit = 1
        }) { fixture in
            let (client, pool) = fixture.makeClient()
            let now = Int(fixture.clock.now().timeIntervalSince1970)
            let start = Self.start(at: now, extra: #","input-push-token":1"#)
            _ = try await Self.send(client, token: Self.pushToStart, start)
            // APNs accepts what iOS then refuses: a second activity on the device, a second device.
            #expect(try await Self.send(client, token: Self.pushToStart, start).isDelivered)
            #expect(try await Self.send(client, token: Self.device, start).isDelivered)
            #expect(fixture.simulator.activities().count == 1)
            let control = fixture.simulator.control
            let overview = try await Self.call(control, "GET", "/")
            #expect(overview.json?["activities_refused"] == 2)
            #expect(overview.json?["virtual_devices"] == 1)

            // The token registry is full: no update token can be handed out.
            fixture.simulator.setToken(APNSSimulatorTokenState(token: String(repeating: "ee", count: 32)))
            let id = try #require(fixture.simulator.activities().first?.activityID)
            let refused = try await Self.call(control, "POST", "/devices/\(Self.pushToStart)/activities/\(id)/allow")
            #expect(refused.status == 409)
            #expect(refused.json?["error"]?["code"] == "limit_reached")
            #expect(throws: APNSSimulatorError.self) {
                try fixture.simulator.allowActivity(device: Self.pushToStart, id: id)
            }

            let unknown = try await Self.call(control, "GET", "/devices/\(Self.pushToStart)/activities/nope")
            #expect(unknown.status == 404)
            #expect(unknown.json?["error"]?["code"] == "unknown_activity")
            let badToken = try await Self.call(control, "GET", "/devices/xyz/activities")
            #expect(badToken.status == 400)
            #expect(try await Self.call(control, "DELETE", "/devices").status == 204)
            #expect(fixture.simulator.activities().isEmpty)
            await pool.shutdown()
        }
    }

    static func call(
        _ control: APNSSimulatorControl,
        post path: String,
        _ body: String
    ) async throws -> (status: Int, json: APNSJSONValue?) {
        let response = try await control.respond(to: HTTPRequest(method: "POST", path: path, body: Array(body.utf8)))
        return (response.status, response.body.isEmpty ? nil : try APNSJSONValue(parsing: response.body))
    }

    @Test func theAppStartsActivitiesItselfWithinTheLimits() async throws {
        try await withSimulator(configure: {
            $0.virtualDeviceLimit = 2
            $0.activitiesPerDeviceLimit = 2
        }) { fixture in
            let (client, pool) = fixture.makeClient()
            let channel = try await client.createChannel(bundleID: Self.bundleID, storagePolicy: .noMessageStored)
            let control = fixture.simulator.control
            let path = "/devices/\(Self.device)/activities"
            let base =
                #""bundle_id":"\#(Self.bundleID)","attributes_type":"MeetupAttributes","attributes":{},"#
                + #""content_state":{"coming":1}"#

            let token = try await Self.call(control, post: path, #"{\#(base),"push_type":"token"}"#)
            #expect(token.status == 201)
            #expect(token.json?["allowed"] == true)
            #expect(token.json?["update_token"]?.stringValue?.count == 64)
            #expect(token.json?["changes"]?.arrayFirst?["via"] == "app")

            let member = try await Self.call(
                control,
                post: path,
                #"{\#(base),"push_type":"channel","channel_id":"\#(channel.rawValue)"}"#
            )
            #expect(member.status == 201)
            #expect(member.json?["channel_id"] == .string(channel.rawValue))
            #expect(member.json?["update_token"] == .null)
            let update =
                #"{"aps":{"event":"update","timestamp":\#(Int(fixture.clock.now().timeIntervalSince1970) + 1),"#
                + #""content-state":{"coming":5}}}"#
            #expect(
                try await client.send(
                    APNSBroadcastRequest(
                        bundleID: Self.bundleID,
                        channelID: channel,
                        storagePolicy: .noMessageStored,
                        payload: Array(update.utf8)
                    )
                ).isDelivered
            )
            #expect(fixture.simulator.activities(device: Self.device).last?.contentState == ["coming": 5])

            // The device is full; a second device fits; a third does not.
            let full = try await Self.call(control, post: path, "{\(base)}")
            #expect(full.status == 409)
            #expect(full.json?["error"]?["code"] == "limit_reached")
            #expect(
                try await Self.call(control, post: "/devices/\(Self.pushToStart)/activities", "{\(base)}").status == 201
            )
            let third = try await Self.call(
                control,
                post: "/devices/\(String(repeating: "c3", count: 32))/activities",
                "{\(base)}"
            )
            #expect(third.status == 409)

            let cases: [(String, Int, String)] = [
                (#"{\#(base),"push_type":"channel","channel_id":"bm90LWEtY2hhbm5lbA=="}"#, 422, "channel_id"),
                (#"{\#(base),"push_type":"channel"}"#, 400, "channel_id"),
                (#"{\#(base),"push_type":"carrier-pigeon"}"#, 400, "push_type"),
                (#"{"bundle_id":"\#(Self.bundleID)","attributes_type":"T","attributes":{}}"#, 400, "content_state"),
                (#"{\#(base),"colour":"red"}"#, 400, "colour"),
            ]
            for (body, status, field) in cases {
                let response = try await Self.call(control, post: "/devices/\(Self.pushToStart)/activities", body)
                #expect(response.status == status, "\(body)")
                #expect(response.json?["error"]?["field"] == .string(field), "\(body)")
            }
            await pool.shutdown()
        }
    }

    @Test func theCommandLineSetsTheOptionAndTheLimits() throws {
        let parsed = try APNSSimulatorCommandLine.spec.parse([
            "--apply-silent-live-activity", "--max-devices", "7", "--max-activities", "3",
        ])
        let configuration = try APNSSimulatorCommandLine.options(parsed).configuration
        #expect(configuration.applySilentLiveActivity)
        #expect(configuration.virtualDeviceLimit == 7)
        #expect(configuration.activitiesPerDeviceLimit == 3)
        let defaults = try APNSSimulatorCommandLine.options(try APNSSimulatorCommandLine.spec.parse([]))
        #expect(defaults.configuration.applySilentLiveActivity == false)
    }
}

extension APNSJSONValue {
    /// The first element when this is a non-empty array.
    fileprivate var arrayFirst: APNSJSONValue? {
        if case .array(let items) = self { return items.first }
        return nil
    }
}

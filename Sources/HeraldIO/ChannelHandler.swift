/// Receives a ``Channel``'s events. Every method is called on the channel's event loop thread.
///
/// Handlers are loop-bound objects (an HTTP/2 session, for instance); they are `Sendable` only so
/// that they can be handed to the loop, and must touch their state on the loop thread only.
public protocol ChannelHandler: AnyObject, Sendable {
    /// The connection is established (and the TLS handshake done): the channel reads and writes.
    func channelActive(_ channel: Channel)

    /// Bytes arrived. `bytes` is valid only during the call.
    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer)

    /// A batch of ``channelRead(_:_:)`` calls is over: a good moment to produce and ``Channel/flush()``
    /// output.
    func channelReadComplete(_ channel: Channel)

    /// The channel had to wait for the socket and has now written everything it held.
    func channelWritable(_ channel: Channel)

    /// The channel closed: `error` is nil for an orderly close by either side. Called once, on a
    /// later loop iteration than the one that closed it.
    func channelInactive(_ channel: Channel, error: (any Error)?)
}

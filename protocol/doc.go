// Package protocol is the MangleCP wire vocabulary: message envelopes,
// payload types, facts, manifests, macro-tools and the one error and warning
// registry shared by every transport, the server, the client and the CLI.
//
// It depends on the standard library only, so clients can use it without
// linking the Mangle engine.
//
// The types follow MangleCP 2026-02-draft. Each type names the spec section it
// implements. JSON field names are spelled exactly as in the specs.
//
// Decoding is strict: [DecodeEnvelope] checks UTF-8, the byte order mark,
// the envelope shape, the protocol version and the message type, and returns
// a registry [*Error] for every problem. [DecodePayload] rejects unknown
// fields. [ValidateFacts] checks client facts against a facts profile and
// reports every violation at once.
package protocol
